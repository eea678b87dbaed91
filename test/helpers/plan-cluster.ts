/**
 * A small cluster inside the test process for placement planning: a real head (memory store)
 * and real node agents with declared GPUs, CPUs and memory. Agents start no actor processes
 * (empty warm pool), so a cluster of any shape costs a few gRPC servers.
 */
import { silentLogger } from '../../common/logger.js';
import { HeadServer } from '../../head/index.js';
import { Cluster } from '../../runtime/index.js';
import { NodeAgent } from '../../worker/index.js';

export interface PlanNodeSpec {
  /** The test's name for the node; `nodeIds` maps it to the id the head gave. */
  name: string;
  gpus: number;
  cpus: number;
  memoryMb: number;
}

export interface PlanCluster {
  cluster: Cluster;
  head: HeadServer;
  /** Test name → node id. */
  nodeIds: Map<string, string>;
  /** Node id → test name. */
  names: Map<string, string>;
  /** Replaces node ids in `text` with the test's names, for messages compared whole. */
  named(text: string): string;
  stop(): Promise<void>;
}

export async function startPlanCluster(nodes: readonly PlanNodeSpec[]): Promise<PlanCluster> {
  const head = await HeadServer.start({ port: 0, writeLocalFiles: false }, silentLogger);
  const agents: NodeAgent[] = [];
  const stop = async () => {
    await Promise.all(agents.map((a) => a.stop({ graceful: false })));
    await head.stop();
  };
  try {
    const nodeIds = new Map<string, string>();
    for (const spec of nodes) {
      const agent = await NodeAgent.start(
        {
          headAddress: head.address,
          token: head.token,
          gpus: spec.gpus,
          cpus: spec.cpus,
          memoryMb: spec.memoryMb,
          poolSize: 0,
          hostname: spec.name,
        },
        silentLogger,
      );
      agents.push(agent);
      nodeIds.set(spec.name, agent.nodeId);
    }
    const cluster = await Cluster.connect({ address: head.address, token: head.token });
    const names = new Map([...nodeIds].map(([name, id]) => [id, name]));
    return {
      cluster,
      head,
      nodeIds,
      names,
      named: (text) =>
        [...names].reduce(
          (t, [id, name]) => t.replaceAll(new RegExp(`${id} \\([^)]*\\)|${id}`, 'g'), name),
          text,
        ),
      stop: async () => {
        await cluster.close();
        await stop();
      },
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
