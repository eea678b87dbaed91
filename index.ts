/**
 * clawray: a Ray-style actor cluster for TypeScript.
 *
 *   import { connect } from 'clawray';
 *   const cluster = await connect();              // CLAWRAY_ADDRESS, or an embedded cluster
 *   const counter = await cluster.createActor({ module: './counter.js', className: 'Counter' });
 *   await counter.call('inc', 1);
 */
import { findLocalHead, staleHeadMessage } from './common/local-head.js';
import type { LocalClusterOptions } from './local/local-cluster.js';
import { ambientCluster, Cluster, type ClusterOptions } from './runtime/index.js';

export * from './common/errors.js';
export type { GpuShare, PlacementStrategy } from './common/resources.js';
export { LocalCluster, type LocalClusterOptions } from './local/local-cluster.js';
export type {
  ActorOptions,
  ActorView,
  CallOptions,
  ClusterStatusView,
  NodeView,
  PlacedBundle,
  PlacementGroup,
  ResourceMap,
  StreamedCall,
} from './runtime/index.js';
export {
  type ActorCallView,
  type ActorContext,
  ActorHandle,
  actorContext,
  Cluster,
  type ClusterOptions,
  type CreateActorRequest,
  callSignal,
  type PlacementGroupRequest,
  type RemoteMethods,
} from './runtime/index.js';

export interface ConnectOptions extends Omit<ClusterOptions, 'address'> {
  /** Settings of the embedded cluster started when there is no address. */
  local?: LocalClusterOptions;
}

/**
 * Connects to the cluster at `address`, else at `CLAWRAY_ADDRESS`; inside an actor, to the
 * actor's own cluster; else to the head this machine started (`$CLAWRAY_HOME/head.json`, as
 * the CLI does); with none of these, starts an embedded local cluster (head and one worker in
 * this process, sized to the machine) that stops when the returned client is closed.
 */
export async function connect(address?: string, options: ConnectOptions = {}): Promise<Cluster> {
  const target = address ?? process.env.CLAWRAY_ADDRESS;
  if (!target) {
    const inActor = ambientCluster();
    if (inActor) return inActor;
    // The head this machine started, as the CLI finds it; a stale record is removed and said.
    const machine = findLocalHead();
    if (machine.head) return Cluster.connect({ ...options, address: machine.head.address });
    if (machine.stale)
      process.stderr.write(`clawray: ${staleHeadMessage(machine.stale)}; starting an embedded cluster\n`);
    const { LocalCluster } = await import('./local/local-cluster.js');
    const local = await LocalCluster.start(options.local);
    const cluster = new Cluster({ ...options, address: local.address, token: local.token });
    cluster.onClose(() => local.stop());
    return cluster;
  }
  const inActor = ambientCluster();
  if (inActor && inActor.address === target && !options.token) return inActor;
  return Cluster.connect({ ...options, address: target });
}
