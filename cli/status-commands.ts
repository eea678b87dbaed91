/** `clawray status` (the actors' verbs are in actors-commands.ts). */
import type { Command } from 'commander';
import { Cluster } from '../actors/runtime/cluster.js';
import type { ClusterStatusView, PendingDemandView } from '../actors/runtime/views.js';
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

export function formatStatus(s: ClusterStatusView): string {
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
  const counts = new Map<string, number>();
  for (const a of s.actors) counts.set(a.state, (counts.get(a.state) ?? 0) + 1);
  const actorLine = [...counts].map(([state, n]) => `${n} ${state}`).join(', ') || 'none';
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
    `actors: ${actorLine}${s.droppedDeadActors ? ` (and ${s.droppedDeadActors} older dead no longer kept)` : ''}`,
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
    .description('show nodes (state, available/total resources), actor counts and placement groups')
    .option('--address <host:port>', 'head address (default: CLAWRAY_ADDRESS or the local head)')
    .option('--token <token>', 'cluster token (default: CLAWRAY_TOKEN or the local token file)')
    .option('--json', 'print JSON')
    .action(async (opts: { address?: string; token?: string; json?: boolean }) => {
      const status = await withCluster(opts, (c) => c.status());
      process.stdout.write(opts.json ? `${JSON.stringify(status, null, 2)}\n` : `${formatStatus(status)}\n`);
    });
}
