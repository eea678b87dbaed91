/**
 * The RL phase's judge, wired from the manifest: the panel's voters (the reaction judge, an
 * in-job judge engine, or the judge actors), judge.stepRule's step panel, and the teacher of
 * opd/combine — the frozen judge engines or the tracking rollout engines — with its logprobs,
 * train.distillTopK's top-K (the student's from the rollout engines), and under train.distillOn
 * teacher | both the teacher's own reply, which the student scores.
 */
import type { Registry } from 'prom-client';
import { ReactionJudge } from '../../actors/envs/personal/reaction-judge.js';
import { JudgePanel, type VoterRef } from '../../actors/judge/judge-panel.js';
import { JudgeVoter } from '../../actors/judge/judge-voter.js';
import type { RolloutEngine } from '../../actors/rollout/rollout-engine-actor.js';
import type { TurnFeedback } from '../../actors/rollout/turn-feedback.js';
import { ConfigError } from '../../common/errors.js';
import type { ActorHandle } from '../../runtime/index.js';
import type { RLJobSpec } from '../manifest/schema.js';
import type { ActorSet } from './actor-set.js';
import type { ChatCodec } from './chat-codec.js';
import type { EnginePool } from './engine-pool.js';
import { isPeerLoss } from './failures.js';
import { EngineVoter } from './judge-engines.js';
import type { JudgeLoopOptions } from './judge-loop.js';
import { type FirstSignal, judgeEpisode, type TurnRewardInput } from './judging.js';
import type { RewardInput } from './records.js';

type Engines = EnginePool<ActorHandle<RolloutEngine>>;

/** Judges one episode's turns (the judge loop's `judge`). */
export type EpisodeJudge = JudgeLoopOptions['judge'];

/** A reward plugin (plugins.reward), its value checked to be a number. */
export type RewardFunction = (input: RewardInput | TurnRewardInput) => Promise<number>;

export interface JudgeWiring {
  actors: Pick<ActorSet, 'voters' | 'judgeEngines'>;
  /** The rollout engines: the student, and the teacher when it tracks the policy. */
  engines: Engines;
  /** The in-job judge engines (frozen) and their chat codec. */
  judge: { engines: Engines; codec: ChatCodec };
  /** The policy's chat codec. */
  codec: ChatCodec;
  /** Personal: the users' explicit feedback on turns. */
  feedback: TurnFeedback;
  firstSignal: FirstSignal;
  rewardFn?: RewardFunction;
  registry?: Registry;
  /** Called for each turn the teacher scores (the summary's teacher turns). */
  onTeacherTurn(): void;
}

/** The judge of the RL phase: builds its panels now, then judges each episode. */
export function episodeJudge(spec: RLJobSpec, w: JudgeWiring): EpisodeJudge {
  const personal = spec.track === 'personal';
  const panel = new JudgePanel(judgeVoters(spec, w.actors, w.judge), {
    votes: spec.judge.votes,
    timeoutMs: spec.judge.timeoutMs,
    voteThreshold: spec.judge.voteThreshold,
    registry: w.registry,
  });
  // judge.stepRule: a rule voter scores each turn; a pure function, so it votes in this process.
  const stepPanel = spec.judge.stepRule
    ? new JudgePanel(
        [new JudgeVoter({ backend: 'rule', rule: spec.judge.stepRule }, { registry: w.registry })],
        {
          votes: 1,
          registry: w.registry,
        },
      )
    : undefined;
  const teacherEngines = spec.judge.teacher === 'frozen' ? w.judge.engines : w.engines;
  const opd = spec.method === 'opd' || spec.method === 'combine';
  const { feedback, firstSignal, rewardFn } = w;
  return (turns) =>
    judgeEpisode(
      turns,
      {
        panel,
        kind: personal ? 'turn' : 'episode',
        stepRewardCoef: spec.judge.stepRewardCoef,
        stepPanel,
        outcomeRule: spec.judge.rule,
        opd,
        prm: spec.method === 'combine' || spec.method === 'rl',
        // Scored at the temperature the turn was sampled with, as its rollout logprobs are.
        teacher: (prompt, response, temperature) => {
          w.onTeacherTurn();
          return logprobsOn(teacherEngines, prompt, response, temperature);
        },
        // train.distillTopK: the teacher's top-K too; the student's (topk-overlap) from the rollout engines.
        ...(spec.train.distillTopK !== undefined
          ? {
              distill: {
                k: spec.train.distillTopK,
                hintSelect: spec.train.hintSelect,
                teacherTopK: (prompt: number[], response: number[], temperature: number, k: number) => {
                  w.onTeacherTurn();
                  return topLogprobsOn(teacherEngines, prompt, response, temperature, k);
                },
                studentTopK: (prompt: number[], response: number[], temperature: number, k: number) =>
                  topLogprobsOn(w.engines, prompt, response, temperature, k),
              },
            }
          : {}),
        // train.distillOn teacher | both: the teacher's own greedy reply under the hint, which
        // the student (the rollout engines) scores under the turn's own prompt.
        ...(spec.train.distillOn !== 'student'
          ? {
              teacherReply: {
                generate: async (prompt: number[], maxTokens: number) =>
                  (
                    await teacherEngines.run(
                      (engine) =>
                        engine.call('generate', { promptTokenIds: prompt, maxTokens, temperature: 0 }),
                      isPeerLoss,
                    )
                  ).tokenIds,
                studentLogprobs: (prompt: number[], response: number[], temperature: number) =>
                  logprobsOn(w.engines, prompt, response, temperature),
                maxTokens: spec.rollout.maxTokens,
                maxContext: w.codec.maxContext,
              },
            }
          : {}),
        encodeChat: (messages) => w.codec.encodeChat(messages),
        ...(personal
          ? {
              feedback: (r) => (r.requestId !== null ? feedback.take(r.requestId) : undefined),
              ...(rewardFn ? { turnReward: rewardFn } : {}),
              ...(spec.method !== 'opd' ? { firstSignal } : {}),
            }
          : {}),
      },
      turns.at(-1)!.task?.reference ?? null,
    );
}

/** The main panel's voters: the reaction judge, an in-job judge engine, or the judge actors. */
export function judgeVoters(
  spec: RLJobSpec,
  actors: Pick<ActorSet, 'voters' | 'judgeEngines'>,
  engines: { engines: Engines; codec: ChatCodec },
): VoterRef[] {
  const { judge, user } = spec;
  if (judge.backend === 'reaction') return [new ReactionJudge(user!.preference, { mode: judge.mode })];
  if (actors.judgeEngines.length > 0) {
    return [
      new EngineVoter(engines.engines, engines.codec, {
        model: judge.model!,
        mode: judge.mode,
        temperature: judge.temperature!,
        maxTokens: judge.maxTokens!,
      }),
    ];
  }
  if (actors.voters.length === 0) {
    throw new ConfigError('spec.resources.judge.replicas: the judge needs at least one replica');
  }
  return actors.voters;
}

/** The logprobs of `response` after `prompt` at `temperature`, on a healthy engine of `engines`. */
function logprobsOn(engines: Engines, prompt: number[], response: number[], temperature: number) {
  return engines.run(
    async (engine) =>
      (await engine.call('computeLogprobs', [...prompt, ...response], prompt.length, temperature)).slice(
        -response.length,
      ),
    isPeerLoss,
  );
}

/** The top-K logprobs of `response` after `prompt` at `temperature`, on a healthy engine of `engines`. */
function topLogprobsOn(
  engines: Engines,
  prompt: number[],
  response: number[],
  temperature: number,
  k: number,
) {
  return engines.run(
    (engine) => engine.call('computeTopLogprobs', [...prompt, ...response], prompt.length, temperature, k),
    isPeerLoss,
  );
}
