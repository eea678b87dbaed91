/**
 * One episode of an env track on the job's engine pool and env pools: what the driver's
 * rollouts and evaluations play, and what `clawray eval` plays outside a job. An engine that
 * fails because it is gone leaves the engine pool; the caller plays the episode again.
 *
 * (The driver's `playOn` is the same function; this file lets a standalone evaluation use it
 * without a driver.)
 */
import type { EnvPool } from '../../actors/envs/env-pool.js';
import type { RolloutEngine } from '../../actors/rollout/rollout-engine-actor.js';
import type { ActorHandle } from '../../runtime/index.js';
import type { EnginePool } from './engine-pool.js';
import { type Episode, playEpisode, type RolloutFunction, type Sampling } from './episodes.js';
import { isPeerLoss } from './failures.js';

export interface PoolEpisode {
  taskId: string;
  sampling: Sampling;
  /** Picks the env pool (`slot % pools.length`). */
  slot: number;
  maxTurns: number;
  /** A custom rollout function (plugins.rollout). */
  rollout?: RolloutFunction;
}

export async function playOnPool(
  engines: EnginePool<ActorHandle<RolloutEngine>>,
  pools: readonly ActorHandle<EnvPool>[],
  e: PoolEpisode,
): Promise<Episode> {
  const { engine, index } = await engines.pick();
  let engineFailed = false;
  const watched = {
    call: (async (method: string, ...args: unknown[]) => {
      try {
        const since = engines.servedVersion(index);
        const result = await (engine.call as (m: string, ...a: unknown[]) => Promise<unknown>)(
          method,
          ...args,
        );
        const version = (result as { weightVersion?: unknown } | undefined)?.weightVersion;
        if (typeof version === 'number') engines.noteVersion(index, version, since);
        return result;
      } catch (err) {
        engineFailed = true;
        throw err;
      }
    }) as ActorHandle<RolloutEngine>['call'],
  } as ActorHandle<RolloutEngine>;
  try {
    return await playEpisode({
      pool: pools[e.slot % pools.length],
      engine: watched,
      taskId: e.taskId,
      sampling: e.sampling,
      maxTurns: e.maxTurns,
      rollout: e.rollout,
    });
  } catch (err) {
    if (engineFailed && isPeerLoss(err)) engines.markDown(index, (err as Error).message);
    throw err;
  }
}
