/**
 * The GPU partition of a job: `spec.resources` as placement groups, and the head's answer to
 * whether they fit the cluster together, asked before anything is reserved.
 *
 * One placement group per role (rollout, judge, trainer, env) rather than OpenClaw-RL's single
 * PACK group sliced `actor | critic | rollout | prm`:
 * - bundle i of a role's group is rank i of that role, so trainer shard ranks get GPU ids in
 *   rank order without slicing a shared bundle list;
 * - removing a group kills only its actors, so the driver can restart or rescale one role
 *   (say the rollout engines) without tearing down the trainer;
 * - each role has its own strategy: STRICT_PACK keeps an all-reducing trainer on one node's
 *   loopback, SPREAD keeps rollout engines apart.
 * The cost is that groups are reserved one at a time, so a job could hold some and wait for
 * the rest; `planPartition` therefore asks the head whether all of them fit *together* before
 * the driver creates any.
 *
 * This file only builds the groups (the partition's *shape*). Whether they fit is the head
 * scheduler's call, through its dry run (`Cluster.planPlacementGroups`): the same code that
 * places the groups when they are created, so there is one placement engine and a plan that
 * fits is the placement the groups get when created in the plan's order right away.
 */
import { ConfigError, type ErrorFields } from '../../common/errors.js';
import type { GpuShare, PlacementStrategy } from '../../common/resources.js';
import type { Cluster } from '../../runtime/index.js';
import { manifestLocation } from './load.js';
import type { RLJobManifest } from './schema.js';

export const ROLES = ['rollout', 'judge', 'trainer', 'env'] as const;
export type Role = (typeof ROLES)[number];

/** What planPartition needs of a cluster client. */
export type PartitionCluster = Pick<Cluster, 'planPlacementGroups' | 'status'>;

/** One bundle, in the form `Cluster.createPlacementGroup({ bundles })` takes. */
export interface BundleSpec {
  numCpus: number;
  numGpus: number;
  memoryMb: number;
}

export interface PlannedGroup {
  role: Role;
  /** `<metadata.name>-<role>`. */
  name: string;
  strategy: PlacementStrategy;
  bundles: BundleSpec[];
}

/** Where a bundle goes if the groups are created now, in the plan's order. */
export interface BundleAssignment {
  role: Role;
  bundleIndex: number;
  nodeId: string;
  gpus: GpuShare[];
}

export interface PartitionPlan {
  /** The groups in the order to create them in (the order the head planned them in). */
  groups: PlannedGroup[];
  assignments: BundleAssignment[];
  /** What the job reserves in total and what the cluster's live nodes have. */
  need: { GPU: number; CPU: number; memoryMb: number };
  cluster: { GPU: number; CPU: number; memoryMb: number };
}

export interface PlanOptions {
  /** Check against nodes' totals (can the job ever run?) or what is free now. Default total. */
  against?: 'total' | 'available';
}

const fmt = (x: number) => Number(x.toFixed(4));

/**
 * `spec.resources` as one placement group per role, in creation order: largest bundles first
 * (GPU, then strict strategies, CPU, memory), as best-fit-decreasing packs, so a trainer's
 * whole GPUs are placed before the fractions that would split them; roles in `ROLES` order on
 * ties. Roles with no replicas have no group; personal jobs (live sessions) have no env pool.
 */
export function partitionGroups(manifest: RLJobManifest): PlannedGroup[] {
  const r = manifest.spec.resources;
  const roles: {
    role: Role;
    count: number;
    gpus: number;
    cpus: number;
    memoryMb: number;
    strategy: PlacementStrategy;
  }[] = [
    { role: 'rollout', count: r.rollout.replicas, ...r.rollout },
    { role: 'judge', count: r.judge.replicas, ...r.judge },
    { role: 'trainer', count: r.trainer.shards, ...r.trainer },
  ];
  if (manifest.spec.env) roles.push({ role: 'env', count: r.env.replicas, gpus: 0, ...r.env });
  const strict = (s: PlacementStrategy) => (s.startsWith('STRICT_') ? 1 : 0);
  return roles
    .filter((x) => x.count > 0)
    .sort(
      (a, b) =>
        b.gpus - a.gpus ||
        strict(b.strategy) - strict(a.strategy) ||
        b.cpus - a.cpus ||
        b.memoryMb - a.memoryMb ||
        ROLES.indexOf(a.role) - ROLES.indexOf(b.role),
    )
    .map(({ role, count, gpus, cpus, memoryMb, strategy }) => ({
      role,
      name: `${manifest.metadata.name}-${role}`,
      strategy,
      bundles: Array.from({ length: count }, () => ({ numCpus: cpus, numGpus: gpus, memoryMb })),
    }));
}

/**
 * Builds the job's groups and asks the head whether they fit the cluster together. Throws a
 * ConfigError naming the role's field (with `file:line:col` when the manifest came from
 * `parseManifest`/`loadManifest`) and the head's reason when they cannot.
 */
export async function planPartition(
  manifest: RLJobManifest,
  cluster: PartitionCluster,
  options: PlanOptions = {},
): Promise<PartitionPlan> {
  const groups = partitionGroups(manifest);
  const [answer, status] = await Promise.all([
    cluster.planPlacementGroups(
      groups.map((g) => ({ name: g.name, strategy: g.strategy, bundles: g.bundles })),
    ),
    cluster.status(),
  ]);
  // Now can only be worse than ever; when even ever fails, its reasons are the ones to fix.
  const now = options.against === 'available' && answer.ever.fits;
  const plan = now ? answer.now : answer.ever;
  if (!plan.fits) {
    const problems = plan.groups.flatMap((g, i) => {
      if (!g.error) return [];
      const fields = (g.error as { fields?: ErrorFields }).fields ?? {};
      return [{ path: problemPath(groups[i].role, fields), message: g.error.message }];
    });
    throw partitionError(manifest, problems, now);
  }

  const assignments = plan.groups
    .flatMap((g, i) =>
      g.bundles.map((b, bundleIndex) => ({
        role: groups[i].role,
        bundleIndex,
        nodeId: b.nodeId,
        gpus: b.gpus,
      })),
    )
    .sort((a, b) => ROLES.indexOf(a.role) - ROLES.indexOf(b.role) || a.bundleIndex - b.bundleIndex);
  const sumOver = (f: (b: BundleSpec) => number) =>
    groups.reduce((s, g) => s + g.bundles.reduce((a, b) => a + f(b), 0), 0);
  const live = status.nodes.filter((n) => n.state === 'ALIVE');
  const clusterSum = (key: string) => live.reduce((s, n) => s + (n.total[key] ?? 0), 0);
  return {
    groups,
    assignments,
    need: {
      GPU: fmt(sumOver((b) => b.numGpus)),
      CPU: fmt(sumOver((b) => b.numCpus)),
      memoryMb: sumOver((b) => b.memoryMb),
    },
    cluster: { GPU: clusterSum('GPU'), CPU: clusterSum('CPU'), memoryMb: clusterSum('memory_mb') },
  };
}

const RESOURCE_FIELD: Record<string, string> = { GPU: 'gpus', CPU: 'cpus', memory_mb: 'memoryMb' };

/**
 * The manifest field to blame for the head's refusal, from its error's fields: the per-replica
 * amount for a bundle no node can hold, the strategy for a strict one that cannot be kept,
 * the whole `spec.resources` when only all roles together do not fit, else the role.
 */
function problemPath(role: Role, fields: ErrorFields): string {
  const base = `spec.resources.${role}`;
  switch (fields.limit) {
    case 'bundle': {
      const field = RESOURCE_FIELD[String(fields.resource)];
      return field ? `${base}.${field}` : base;
    }
    case 'strictPack':
    case 'strictSpread':
      return `${base}.strategy`;
    case 'together':
      return 'spec.resources';
    default:
      return base;
  }
}

function partitionError(
  manifest: RLJobManifest,
  problems: { path: string; message: string }[],
  now: boolean,
): ConfigError {
  const lines = problems.map((p) => {
    const where = manifestLocation(manifest, p.path.split('.'));
    return `${where ? `${where}: ` : ''}${p.path}: ${p.message}`;
  });
  const head = `job ${manifest.metadata.name} does not fit the cluster${now ? ' as it is now' : ''}:`;
  return new ConfigError([head, ...lines.map((l) => `  ${l}`)].join('\n'), {
    fields: {
      job: manifest.metadata.name,
      field: problems[0]?.path ?? 'spec.resources',
      problems: problems.length,
    },
  });
}
