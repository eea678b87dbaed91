/**
 * The job's tasks: the track's tasks (built in, or loaded from env.tasks), the training split
 * in the job's shuffled order, the ones RL plays (env.draw), and the evaluation tasks. The
 * personal track has none.
 */
import type { TrackTask } from '../../actors/envs/track.js';
import { loadTasks, loadTrack } from '../../actors/envs/tracks.js';
import { ConfigError } from '../../common/errors.js';
import type { RLJobSpec } from '../manifest/schema.js';
import { evalTaskIds } from './heldout-eval.js';
import { shuffled } from './shuffle.js';

export interface JobTasks {
  /** env.split's tasks, shuffled by env.seed: what SFT imitates and (by default) RL plays. */
  trainTasks: TrackTask[];
  /** The training tasks RL plays (env.draw without-oracle: those without an oracle trace). */
  rlTasks: TrackTask[];
  /** The ids of the held-out evaluation's tasks, in file order. */
  evalTasks: string[];
}

/** Loads the track's tasks from `tasksPath` ('builtin' or an absolute path) and splits them. */
export async function loadJobTasks(spec: RLJobSpec, tasksPath: string): Promise<JobTasks> {
  const track = spec.env ? await loadTrack(spec.track) : undefined;
  return jobTasks(spec, track ? await loadTasks(track, tasksPath) : [], tasksPath);
}

/** The job's training, RL and evaluation tasks among `tasks`; refuses a split with nothing to play. */
export function jobTasks(spec: RLJobSpec, tasks: TrackTask[], tasksPath: string): JobTasks {
  const trainTasks = shuffled(
    tasks.filter((t) => spec.env!.split === 'all' || t.split === spec.env!.split),
    spec.env?.seed ?? 0,
  );
  if (spec.env && trainTasks.length === 0) {
    throw new ConfigError(`spec.env: no tasks in split '${spec.env.split}' of ${tasksPath}`);
  }
  // env.draw without-oracle: RL plays what the warm start had no demonstration of.
  const rlTasks =
    spec.env?.draw === 'without-oracle' ? trainTasks.filter((t) => t.oracle.length === 0) : trainTasks;
  if (spec.env && spec.method !== 'sft' && rlTasks.length === 0) {
    throw new ConfigError(
      `spec.env.draw: every task in split '${spec.env.split}' of ${tasksPath} has an oracle trace; nothing is left for RL to play`,
      { fields: { field: 'spec.env.draw', tasks: tasksPath } },
    );
  }
  return { trainTasks, rlTasks, evalTasks: evalTaskIds(tasks, spec.eval.split) };
}
