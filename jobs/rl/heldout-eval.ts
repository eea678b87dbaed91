/**
 * A job's held-out evaluation as one function of the manifest: which tasks it plays and how
 * (greedy, temperature 0, seed = the task's index, an episode whose engine or env died played
 * again), or on the personal track the simulated user's held-out sessions. The driver's
 * periodic evaluation and `clawray eval` call this, so the two report the same figure for the
 * same weights.
 */
import type { TrackTask } from '../../actors/envs/track.js';
import type { GenerateRequest, GenerateResult } from '../../actors/rollout/rollout-engine.js';
import type { RLJobSpec } from '../manifest/schema.js';
import type { ChatCodec } from './chat-codec.js';
import type { Episode, Sampling } from './episodes.js';
import { type EvalResult, evaluateEnv, evaluatePersonal } from './evaluation.js';
import { isPeerLoss } from './failures.js';

/** How often an evaluation episode is played again after its engine or env pool died. */
const MAX_EPISODE_ATTEMPTS = 20;
const RETRY_DELAY_MS = 250;

export interface HeldOutEvalDeps {
  /** Greedy generation on the policy (the job's RemoteChatModel): the personal track. */
  generate(request: GenerateRequest): Promise<GenerateResult>;
  codec: ChatCodec;
  /** The tasks evaluation plays (see `evalTaskIds`): env tracks. */
  taskIds: string[];
  /** Plays one episode on an engine and an env pool (`playOnPool`). */
  play(taskId: string, sampling: Sampling, slot: number): Promise<Episode>;
  /** Called after each evaluation episode (env tracks), for progress. */
  onEpisode?(episode: Episode, done: number): void;
}

/** The ids of `tasks` in evaluation split `split`, in file order. */
export function evalTaskIds(tasks: readonly TrackTask[], split: RLJobSpec['eval']['split']): string[] {
  return tasks.filter((t) => split === 'all' || t.split === split).map((t) => t.id);
}

/** One held-out evaluation; undefined when there is nothing to evaluate (no tasks, no simulated user). */
export async function runHeldOutEval(spec: RLJobSpec, d: HeldOutEvalDeps): Promise<EvalResult | undefined> {
  if (spec.track === 'personal') {
    if (!spec.user) return undefined;
    return evaluatePersonal({
      user: spec.user,
      maxTokens: spec.rollout.maxTokens,
      reply: async (messages, maxTokens) => {
        const r = await d.generate({
          promptTokenIds: d.codec.encodeChat(messages),
          maxTokens,
          temperature: 0,
        });
        return r.text ?? d.codec.decode(r.tokenIds);
      },
    });
  }
  if (d.taskIds.length === 0) return undefined;
  let done = 0;
  return evaluateEnv({
    taskIds: d.taskIds,
    parallel: spec.env!.parallel * Math.max(1, spec.resources.env.replicas),
    play: async (taskId, i, slot) => {
      const sampling = { maxTokens: spec.rollout.maxTokens, temperature: 0, topP: 1, seed: i };
      // An evaluation episode whose engine or env died is played again, like a rollout.
      for (let attempt = 1; ; attempt++) {
        try {
          const episode = await d.play(taskId, sampling, slot);
          d.onEpisode?.(episode, ++done);
          return episode;
        } catch (err) {
          if (!isPeerLoss(err) || attempt >= MAX_EPISODE_ATTEMPTS) throw err;
          await new Promise((r) => setTimeout(r, RETRY_DELAY_MS));
        }
      }
    },
  });
}
