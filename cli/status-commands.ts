/** `clawray status` and `clawray actors list`. */
import type { Command } from 'commander';
import { Cluster } from '../actors/runtime/cluster.js';
import type { ClusterStatusView } from '../actors/runtime/views.js';
import { resolveAddress } from './cli-parse.js';
import { resourcePairs, table } from './table.js';

async function withCluster<T>(
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
    `actors: ${actorLine}`,
    '',
    groups,
  ].join('\n');
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

  program
    .command('actors')
    .description('inspect actors')
    .command('list')
    .description('list actors with their state, node and GPU ids')
    .option('--address <host:port>', 'head address')
    .option('--token <token>', 'cluster token')
    .option('--state <state>', 'only actors in this state (PENDING_CREATION, ALIVE, RESTARTING, DEAD)')
    .option('--json', 'print JSON')
    .action(async (opts: { address?: string; token?: string; state?: string; json?: boolean }) => {
      const actors = await withCluster(opts, (c) => c.listActors({ state: opts.state }));
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(actors, null, 2)}\n`);
        return;
      }
      process.stdout.write(
        `${table(
          ['ACTOR', 'CLASS', 'NAME', 'STATE', 'NODE', 'GPUS', 'RESTARTS', 'PID'],
          actors.map((a) => [
            a.actorId,
            a.className,
            a.name,
            a.state,
            a.nodeId,
            a.gpus.map((g) => (g.fraction === 1 ? String(g.gpuId) : `${g.gpuId}(${g.fraction})`)).join(','),
            String(a.numRestarts),
            a.pid ? String(a.pid) : '',
          ]),
        )}\n`,
      );
    });
}
