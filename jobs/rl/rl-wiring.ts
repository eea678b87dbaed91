/**
 * What the RL phase plays and judges with, from the manifest: the rollout source (the live or
 * simulated sessions of the personal track, or env episodes of the training tasks, seeded per
 * ticket) and its judge (judge-wiring.ts). They share the reward plugin (plugins.reward, loaded
 * here) and the users' turn feedback.
 */
import type { TrackTask } from '../../actors/envs/track.js';
import { fnv1a } from '../../actors/envs/track.js';
import { TurnFeedback } from '../../actors/rollout/turn-feedback.js';
import { ConfigError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { loadPluginFunction } from '../../common/plugin-module.js';
import type { RLJobSpec } from '../manifest/schema.js';
import type { EpisodeTicket } from './episode-queue.js';
import { EpisodeSource } from './episode-source.js';
import type { Episode, Sampling } from './episodes.js';
import { type EpisodeJudge, episodeJudge, type JudgeWiring, type RewardFunction } from './judge-wiring.js';
import { FirstSignal, type TurnRewardInput } from './judging.js';
import { personalSourceFor } from './personal-source.js';
import { episodeRecords, type RewardInput } from './records.js';
import type { RemoteChatModel } from './remote-chat-model.js';
import type { RolloutSource } from './rollout-source.js';

export interface RlWiringDeps {
  workingDir: string;
  submissionId: string;
  /** The policy as a chat model (the personal track's endpoint serves it). */
  remote: RemoteChatModel;
  clusterToken: string;
  logger: Logger;
  log(line: string): void;
  /** The tasks RL plays (env tracks). */
  trainTasks: TrackTask[];
  /** Env pools of the job (each runs env.parallel episodes). */
  pools: number;
  /** Plays one episode on an engine and an env pool. */
  play(taskId: string, sampling: Sampling, slot: number): Promise<Episode>;
  /** The judge's parts (see judge-wiring.ts), less what is made here. */
  judge: Omit<JudgeWiring, 'feedback' | 'firstSignal' | 'rewardFn'>;
}

/** The RL phase's source, and a maker of its judge (called once the source runs). */
export interface RlWiring {
  source: RolloutSource;
  judge(): EpisodeJudge;
}

/** Loads the reward plugin, then makes the source (the judge's maker shares what it made). */
export async function rlWiring(spec: RLJobSpec, d: RlWiringDeps): Promise<RlWiring> {
  const rewardFn = await rewardFunction(spec, d.workingDir);
  const G = spec.rollout.samplesPerPrompt;
  const feedback = new TurnFeedback({ rewardRange: spec.judge.rewardRange });
  const firstSignal = new FirstSignal();
  const source: RolloutSource =
    spec.track === 'personal'
      ? personalSourceFor(spec, {
          model: d.remote,
          clusterToken: d.clusterToken,
          feedback,
          registry: d.judge.registry,
          logger: d.logger,
          log: d.log,
        })
      : new EpisodeSource({
          tasks: d.trainTasks,
          samplesPerGroup: G,
          slots: spec.env!.parallel * d.pools,
          play: async (ticket: EpisodeTicket, task: TrackTask, slot: number) => {
            const asked = sampling(spec, ticket);
            const episode = await d.play(task.id, asked, slot);
            if (rewardFn) {
              episode.customReward = await rewardFn({
                taskId: task.id,
                task,
                messages: episode.messages,
                reward: episode.reward,
                info: episode.info,
              });
            }
            return episodeRecords(episode, task, ticket, G, d.submissionId, asked);
          },
        });
  return {
    source,
    judge: () => episodeJudge(spec, { ...d.judge, feedback, firstSignal, rewardFn }),
  };
}

/** plugins.reward, its value checked to be a number; undefined without one. */
async function rewardFunction(spec: RLJobSpec, workingDir: string): Promise<RewardFunction | undefined> {
  const plugin = spec.plugins.reward
    ? await loadPluginFunction<(input: RewardInput | TurnRewardInput) => number | Promise<number>>(
        spec.plugins.reward,
        workingDir,
        'reward',
      )
    : undefined;
  return (
    plugin &&
    (async (input: RewardInput | TurnRewardInput): Promise<number> => {
      const value = await plugin(input);
      if (typeof value !== 'number') {
        throw new ConfigError(
          `spec.plugins.reward returned ${typeof value} ${JSON.stringify(value)?.slice(0, 80)}: a reward function returns a number`,
          { fields: { field: 'spec.plugins.reward' } },
        );
      }
      return value;
    })
  );
}

/** An episode's sampling: the rollout's, seeded by the job's seed and the ticket. */
function sampling(spec: RLJobSpec, ticket: EpisodeTicket): Sampling {
  const { rollout, train } = spec;
  return {
    maxTokens: rollout.maxTokens,
    temperature: rollout.temperature,
    topP: rollout.topP,
    seed: Number.parseInt(fnv1a(`${train.seed}:${ticket.group}:${ticket.index}`), 16),
  };
}
