/**
 * Validates a task set before anyone trains on it: every task's oracle must reach +1 and the
 * do-nothing agent must not. A task that fails either is broken (unsolvable, mis-scored, or
 * solved by doing nothing), and training on it teaches nothing or the wrong thing.
 */
import type { Action, Environment } from './environment.js';
import { DO_NOTHING_ACTION, type Track, type TrackTask } from './track.js';

export interface TaskCheck {
  taskId: string;
  split: TrackTask['split'];
  /** The oracle's final reward; null when the task has no oracle. */
  oracleReward: number | null;
  nothingReward: number;
  ok: boolean;
  /** Why the task failed the check, when it did. */
  problem?: string;
  durationMs: number;
}

export interface CheckOptions {
  /** Tasks checked at once, each in its own environment (default 2). */
  parallel?: number;
  onResult?: (check: TaskCheck, done: number, total: number) => void;
}

/** Plays `actions` after reset(taskId); an episode the actions leave open is scored by evaluate(). */
export async function playEpisode(
  env: Environment<object>,
  taskId: string,
  actions: Action[],
): Promise<number> {
  await env.reset(taskId);
  for (const action of actions) {
    const result = await env.step(action);
    if (result.done) return result.reward;
  }
  return (await env.evaluate()).reward;
}

async function checkTask(env: Environment<object>, task: TrackTask): Promise<TaskCheck> {
  const started = performance.now();
  const problems: string[] = [];
  let oracleReward: number | null = null;
  let nothingReward = Number.NaN;
  try {
    if (task.oracle.length === 0) problems.push('no oracle');
    else {
      oracleReward = await playEpisode(env, task.id, task.oracle);
      if (oracleReward !== 1) problems.push(`oracle reward ${oracleReward}, expected 1`);
    }
    nothingReward = await playEpisode(env, task.id, [DO_NOTHING_ACTION]);
    if (nothingReward >= 1) problems.push('doing nothing is rewarded +1');
  } catch (err) {
    problems.push(`error: ${(err as Error).message}`);
  }
  return {
    taskId: task.id,
    split: task.split,
    oracleReward,
    nothingReward,
    ok: problems.length === 0,
    ...(problems.length > 0 ? { problem: problems.join('; ') } : {}),
    durationMs: Math.round(performance.now() - started),
  };
}

/** Checks every task; results come back in the tasks' order. */
export async function checkTasks(
  track: Track,
  tasks: TrackTask[],
  options: CheckOptions = {},
): Promise<TaskCheck[]> {
  const parallel = Math.max(1, Math.min(options.parallel ?? 2, tasks.length));
  const results: TaskCheck[] = new Array(tasks.length);
  let next = 0;
  let done = 0;
  const worker = async () => {
    const env = track.createEnvironment(tasks);
    try {
      while (next < tasks.length) {
        const i = next++;
        results[i] = await checkTask(env, tasks[i]);
        options.onResult?.(results[i], ++done, tasks.length);
      }
    } finally {
      await env.close();
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return results;
}
