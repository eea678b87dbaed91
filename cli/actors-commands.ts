/** `clawray actors list` and `clawray actors kill` (Ray's `ray list actors` and `ray.kill`). */
import type { Command } from 'commander';
import { ConfigError, NotFoundError } from '../common/errors.js';
import type { Cluster } from '../runtime/index.js';
import { type ActorView, actorView } from '../runtime/index.js';
import { ACTOR_STATES, formatActorTable, withCluster } from './status-commands.js';

interface ClientFlags {
  address?: string;
  token?: string;
}

/** The actor named by id, else by name in `namespace`; NotFoundError naming both tries. */
export async function findActor(cluster: Cluster, target: string, namespace: string): Promise<ActorView> {
  try {
    return actorView(await cluster.head.call('GetActor', { actorId: target }));
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
  }
  try {
    return actorView(await cluster.head.call('GetActor', { name: target, namespace }));
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
    throw new NotFoundError(
      `no actor with id '${target}' and no live actor named '${target}' in namespace '${namespace}' (see clawray actors list)`,
      { fields: { actor: target, namespace } },
    );
  }
}

/**
 * `--state` as the head names states, from any case (`dead`, `alive`) or `pending`; anything
 * else is refused, since the head would answer an unknown state with an empty list.
 */
export function parseActorState(value: string): string {
  const upper = value.trim().toUpperCase();
  const state = upper === 'PENDING' ? 'PENDING_CREATION' : upper;
  if (!(ACTOR_STATES as readonly string[]).includes(state)) {
    throw new ConfigError(
      `--state ${JSON.stringify(value)} is not an actor state; use one of ${ACTOR_STATES.join(', ')} (any case)`,
      { fields: { field: 'state', value } },
    );
  }
  return state;
}

export function registerActorsCommands(program: Command): void {
  const actors = program.command('actors').description('inspect and kill actors');

  actors
    .command('list')
    .description('list actors with their state, node and GPU ids')
    .option('--address <host:port>', 'head address')
    .option('--token <token>', 'cluster token')
    .option(
      '--state <state>',
      'only actors in this state (ALIVE, PENDING_CREATION, RESTARTING, DEAD; any case)',
    )
    .option('--json', 'print JSON')
    .action(async (opts: ClientFlags & { state?: string; json?: boolean }) => {
      const state = opts.state === undefined ? undefined : parseActorState(opts.state);
      const list = await withCluster(opts, (c) => c.listActors({ state }));
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
        return;
      }
      process.stdout.write(`${formatActorTable(list)}\n`);
    });

  actors
    .command('kill')
    .description(
      "kill an actor by id or name at once, detached ones too (Ray's ray.kill): for good by default; --restart lets its maxRestarts restart it",
    )
    .argument('<actor>', 'actor id (actor_…) or name')
    .option('--namespace <ns>', 'namespace of a named actor', 'default')
    .option('--no-restart', 'kill it for good, whatever its maxRestarts (the default, as ray.kill)')
    .option('--restart', 'let its maxRestarts restart it (ray.kill(actor, no_restart=False))')
    .option('--address <host:port>', 'head address (default: CLAWRAY_ADDRESS or the local head)')
    .option('--token <token>', 'cluster token (default: CLAWRAY_TOKEN or the local token file)')
    .option('--json', 'print JSON')
    .action(
      async (
        target: string,
        opts: ClientFlags & { namespace: string; restart?: boolean; json?: boolean },
      ) => {
        // Commander gives `restart` false for --no-restart, true for --restart, and (with both
        // declared) true when neither is given; a restart must be asked for by name.
        const allowRestart = process.argv.includes('--restart');
        const result = await withCluster(opts, async (c) => {
          const actor = await findActor(c, target, opts.namespace);
          const wasDead = actor.state === 'DEAD';
          if (!wasDead) await c.killActor(actor.actorId, { noRestart: !allowRestart });
          return { actor, wasDead };
        });
        const { actor, wasDead } = result;
        const label = `actor ${actor.className}${actor.name ? ` '${actor.name}'` : ''} (${actor.actorId})`;
        if (opts.json) {
          process.stdout.write(
            `${JSON.stringify({ actorId: actor.actorId, name: actor.name, alreadyDead: wasDead, noRestart: !allowRestart })}\n`,
          );
          return;
        }
        process.stdout.write(
          wasDead
            ? `${label} was already dead\n`
            : allowRestart
              ? `killed ${label}; it restarts if its maxRestarts allows\n`
              : `killed ${label}\n`,
        );
      },
    );
}
