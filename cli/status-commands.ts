/**
 * `clawray status` (the actors' verbs are in actors-commands.ts). Like `ray status`, it is a
 * summary: live actors are listed, dead ones only counted (the head keeps up to
 * --max-dead-actors of them, and a long-lived cluster would otherwise print them all); `--all`
 * or `clawray actors list --state DEAD` lists them.
 */
import type { Command } from 'commander';
import type { ActorView, ClusterStatusView, PendingDemandView } from '../runtime/index.js';
import { Cluster } from '../runtime/index.js';
import { resolveAddress } from './cli-parse.js';
import { resourcePairs, table } from './table.js';

/** Runs `fn` with a client of the head the flags (or the environment) name, then closes it. */
export async function withCluster<T>(
  opts: { address?: string; token?: string },
  fn: (c: Cluster) => Promise<T>,
): Promise<T> {
  const cluster = await Cluster.connect({
    address: resolveAddress(opts.address),
    token: opts.token,
    headRetryMs: 0,
  });
  try {
    return await fn(cluster);
  } finally {
    await cluster.close();
  }
}

/** The actors table of `status` and `actors list`. */
export function formatActorTable(list: ActorView[]): string {
  return table(
    ['ACTOR', 'CLASS', 'NAME', 'STATE', 'NODE', 'GPUS', 'RESTARTS', 'PID', 'LIFETIME'],
    list.map((a) => [
      a.actorId,
      a.className,
      a.name,
      a.state,
      a.nodeId,
      a.gpus.map((g) => (g.fraction === 1 ? String(g.gpuId) : `${g.gpuId}(${g.fraction})`)).join(','),
      String(a.numRestarts),
      a.pid ? String(a.pid) : '',
      a.detached ? 'detached' : '',
    ]),
  );
}

export interface StatusOptions {
  /** List dead actors too, not only count them. */
  all?: boolean;
}

/** The actor states in the order a person reads them: the live ones first. */
export const ACTOR_STATES = ['ALIVE', 'PENDING_CREATION', 'RESTARTING', 'DEAD'] as const;

/** How many actors are in each state that has any, live states first. */
export function actorCounts(actors: ActorView[]): Record<string, number> {
  const byState = new Map<string, number>();
  for (const a of actors) byState.set(a.state, (byState.get(a.state) ?? 0) + 1);
  const rank = (state: string) => {
    const i = (ACTOR_STATES as readonly string[]).indexOf(state);
    return i === -1 ? ACTOR_STATES.length : i;
  };
  return Object.fromEntries([...byState].sort((a, b) => rank(a[0]) - rank(b[0])));
}

/** What `status --json` prints: the status with dead actors left out unless `all`, and counts. */
export function statusJson(
  s: ClusterStatusView,
  options: StatusOptions = {},
): ClusterStatusView & { actorCounts: Record<string, number>; deadActorsListed: boolean } {
  return {
    ...s,
    actors: options.all ? s.actors : s.actors.filter((a) => a.state !== 'DEAD'),
    actorCounts: actorCounts(s.actors),
    deadActorsListed: Boolean(options.all),
  };
}

export function formatStatus(s: ClusterStatusView, options: StatusOptions = {}): string {
  const nodes = table(
    ['NODE', 'STATE', 'ADDRESS', 'AVAILABLE/TOTAL', 'GPUS FREE'],
    s.nodes.map((n) => [
      n.nodeId,
      n.state,
      n.address,
      resourcePairs(n.available, n.total),
      n.gpusAvailable.map((g) => `${g.gpuId}:${g.fraction}`).join(' '),
    ]),
  );
  const counts = actorCounts(s.actors);
  const actorLine =
    Object.entries(counts)
      .map(([state, n]) => `${n} ${state}`)
      .join(', ') || 'none';
  const listed = options.all ? s.actors : s.actors.filter((a) => a.state !== 'DEAD');
  const dead = counts.DEAD ?? 0;
  const actorLines = [
    `actors: ${actorLine}${s.droppedDeadActors ? ` (and ${s.droppedDeadActors} older dead no longer kept)` : ''}`,
  ];
  if (listed.length > 0) actorLines.push(formatActorTable(listed));
  if (dead > 0 && !options.all) {
    actorLines.push(
      `(${dead} dead actor${dead === 1 ? '' : 's'} not listed: clawray status --all, or clawray actors list --state DEAD)`,
    );
  }
  const groups = s.placementGroups.length
    ? table(
        ['PLACEMENT GROUP', 'NAME', 'STRATEGY', 'STATE', 'BUNDLES (node: GPU ids)'],
        s.placementGroups.map((g) => [
          g.id,
          g.name,
          g.strategy,
          g.state,
          g.bundles
            .map((b) => `${b.nodeId.slice(0, 13)}:${b.gpus.map((x) => x.gpuId).join(',') || '-'}`)
            .join(' '),
        ]),
      )
    : 'placement groups: none';
  return [
    `head ${s.headAddress} (store: ${s.store})`,
    '',
    nodes,
    '',
    ...actorLines,
    '',
    groups,
    '',
    formatPendingDemands(s.pendingDemands),
  ].join('\n');
}

/**
 * Ray's "Pending Demands": what waits for resources, grouped by shape, e.g.
 * `{CPU: 1}: 3 actors (DEFAULT), waiting up to 25 s`.
 */
export function formatPendingDemands(demands: PendingDemandView[], nowMs = Date.now()): string {
  if (demands.length === 0) return 'pending demands: none';
  const groups = new Map<string, { count: number; oldestMs: number; kind: string }>();
  for (const d of demands) {
    const shape = `${d.bundles.map((b) => formatMap(b)).join(', ')} (${d.kind === 'actor' ? d.strategy.split(' ')[0] : d.strategy})`;
    const key = `${d.kind}\u0000${shape}`;
    const g = groups.get(key) ?? { count: 0, oldestMs: d.pendingSinceMs, kind: d.kind };
    g.count++;
    g.oldestMs = Math.min(g.oldestMs, d.pendingSinceMs);
    groups.set(key, g);
  }
  const lines = [...groups].map(([key, g]) => {
    const shape = key.split('\u0000')[1];
    const what = g.kind === 'actor' ? 'actor' : 'placement group';
    const waited = Math.max(0, Math.round((nowMs - g.oldestMs) / 1000));
    return `  ${shape}: ${g.count} ${what}${g.count === 1 ? '' : 's'}, waiting up to ${waited} s`;
  });
  return ['pending demands:', ...lines].join('\n');
}

function formatMap(r: Record<string, number>): string {
  const parts = Object.entries(r)
    .filter(([, v]) => v)
    .map(([k, v]) => `${k}: ${v}`);
  return `{${parts.join(', ')}}`;
}

export function registerStatusCommands(program: Command): void {
  program
    .command('status')
    .description(
      'show nodes (state, available/total resources), live actors, counts of actors by state, placement groups and pending demands',
    )
    .option('--address <host:port>', 'head address (default: CLAWRAY_ADDRESS or the local head)')
    .option('--token <token>', 'cluster token (default: CLAWRAY_TOKEN or the local token file)')
    .option('--all', 'list dead actors too (by default they are only counted)')
    .option('--json', 'print JSON (actorCounts has every state; actors lists dead ones only with --all)')
    .action(async (opts: { address?: string; token?: string; json?: boolean; all?: boolean }) => {
      const status = await withCluster(opts, (c) => c.status());
      process.stdout.write(
        opts.json
          ? `${JSON.stringify(statusJson(status, opts), null, 2)}\n`
          : `${formatStatus(status, opts)}\n`,
      );
    });
}
