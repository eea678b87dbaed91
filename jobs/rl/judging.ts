/**
 * The judge stage: turns from the rollout stream get their votes, reward and (OPD) hint and
 * teacher logprobs, and go on to the judged stream the trainer reads.
 *
 * - Env tracks: an episode's outcome comes from the job's judge over the final answer (a rule
 *   checks it against the task's reference; the env's own reward is the reference reward);
 *   a model judge (llm, onnx-prm) also scores every turn, added as outcome + coef · mean score.
 * - Personal track: every turn is scored from the user's reaction in the next state, unless
 *   the user gave explicit feedback: a reward replaces the judge's score, a correction is the
 *   evidence the judge reads (and the OPD hint). OpenClaw-RL's at-least-one rule: the first
 *   scored turn of a session that has no effective sample yet is trained even at score 0.
 * - opd / combine: each turn is judged in OPD mode; a turn with a hint gets the teacher's
 *   logprobs of its own response under the hint-augmented prompt (OpenClaw-RL's teacher).
 */

import type { JudgePanel } from '../../actors/judge/judge-panel.js';
import { contentToText, formatHintForUser } from '../../actors/judge/prompts.js';
import { combineStepRewards } from '../../actors/judge/step-rewards.js';
import type { ChatMessage } from '../../actors/models/chat-template.js';
import type { Feedback } from '../../actors/rollout/turn-feedback.js';
import type { TrajectoryRecord } from '../buffer/types.js';
import { recordTemperature } from './batches.js';

/** What the judge stage adds to a record's `extra`. */
export interface JudgedExtra {
  /** The reward every turn of the episode is trained with (before group normalisation). */
  reward: number;
  /** The teacher's logprob of each response token (OPD turns with a hint). */
  teacherLogprobs?: number[];
}

export interface JudgeStageOptions {
  panel: JudgePanel;
  /** env: one outcome per episode (+ per-turn scores with a model judge); personal: per turn. */
  kind: 'episode' | 'turn';
  /** Per-turn PRM scores are added to env outcomes with this weight (model judges only). */
  stepRewardCoef?: number;
  /** opd / combine: judge every turn in OPD mode and score the hint with the teacher. */
  opd: boolean;
  /** combine on the personal track: also a PRM verdict for the RL part. */
  prm: boolean;
  /**
   * Teacher logprobs of `response` after `prompt` (a rollout engine's computeLogprobs), at the
   * temperature the response was sampled with, so that teacher − rollout compares like with like.
   */
  teacher(promptTokenIds: number[], responseTokenIds: number[], temperature: number): Promise<number[]>;
  /** The policy's chat template, for the hint-augmented prompt. */
  encodeChat(messages: ChatMessage[]): number[];
  /** Personal: the user's explicit feedback on a turn, taken once. */
  feedback?(record: TrajectoryRecord): Feedback | undefined;
  /** Personal, rl/combine: which sessions already gave an effective sample. */
  firstSignal?: FirstSignal;
}

/**
 * OpenClaw-RL's at-least-one rule: a session's first scored turn (one with a next state or
 * feedback) is trained even when its score is 0, unless the session already gave an effective
 * (nonzero) sample, so that every session teaches the policy something.
 */
export class FirstSignal {
  private readonly effective = new Set<string>();

  constructor(private readonly maxSessions = 100_000) {}

  /** Notes a judged turn; true when it is to be trained at score 0. */
  note(sessionId: string, scored: boolean, score: number): boolean {
    if (this.effective.has(sessionId) || !scored) return false;
    this.effective.add(sessionId);
    if (this.effective.size > this.maxSessions) {
      this.effective.delete(this.effective.values().next().value as string);
    }
    return score === 0;
  }
}

const responseText = (r: TrajectoryRecord): string =>
  typeof r.extra?.responseText === 'string' ? r.extra.responseText : '';

/** A judge input's conversation: the record's messages (the prompt the turn answered). */
function judgeInput(r: TrajectoryRecord) {
  return { messages: r.messages, response: responseText(r), nextState: r.nextState };
}

function withHint(messages: ChatMessage[], hint: string): ChatMessage[] {
  const out = messages.map((m) => ({ ...m }));
  for (let i = out.length - 1; i >= 0; i--) {
    if (out[i].role === 'user') {
      out[i].content = `${contentToText(out[i].content)}${formatHintForUser(hint)}`;
      return out;
    }
  }
  return [...out, { role: 'user', content: formatHintForUser(hint).trim() }];
}

/** Judges the turns of one episode (env tracks: all turns; personal: one). */
export async function judgeEpisode(
  turns: TrajectoryRecord[],
  o: JudgeStageOptions,
  reference: Record<string, unknown>,
): Promise<TrajectoryRecord[]> {
  const judged = turns.map((r) => ({ ...r, extra: { ...r.extra } }) as TrajectoryRecord);
  if (o.kind === 'episode') {
    const last = judged.at(-1)!;
    const finalMessages = (last.extra?.finalMessages as ChatMessage[] | undefined) ?? last.messages;
    const outcome = await o.panel.judge(
      { messages: finalMessages, response: responseText(last), nextState: null, reference },
      { mode: 'prm' },
    );
    // A reward plugin's value replaces the judge's outcome (slime's custom reward model).
    const custom = typeof reference.custom === 'number' ? reference.custom : undefined;
    let reward = custom ?? outcome.votes.find((v) => v.reward !== undefined)?.reward ?? outcome.score;
    if (o.stepRewardCoef !== undefined) {
      const steps = await Promise.all(judged.map((r) => o.panel.judge(judgeInput(r), { mode: 'prm' })));
      steps.forEach((s, i) => {
        judged[i].votes = s.votes.map((v) => v.score ?? 0);
        judged[i].score = s.score;
      });
      reward = combineStepRewards(
        reward,
        steps.map((s) => ({ score: s.score, span: [0, 0] as const })),
        o.stepRewardCoef,
      ).final;
    } else {
      for (const r of judged) {
        r.votes = outcome.votes.map((v) => v.score ?? 0);
        r.score = outcome.score;
      }
    }
    for (const r of judged) (r.extra as Record<string, unknown>).reward = reward;
  } else {
    for (const r of judged) {
      const extra = r.extra as Record<string, unknown>;
      const feedback = o.feedback?.(r);
      const input = judgeInput(r);
      if (feedback) {
        extra.feedback = feedback;
        // The user's own words about the answer are better evidence than their next message.
        if (feedback.correction !== undefined)
          input.nextState = { role: 'user', content: feedback.correction };
      }
      if (feedback?.reward !== undefined) {
        r.votes = [];
        r.score = feedback.reward;
      } else if (!o.opd || o.prm) {
        const verdict = await o.panel.judge(input, { mode: 'prm' });
        r.votes = verdict.votes.map((v) => v.score ?? 0);
        r.score = verdict.score;
      }
      extra.reward = r.score ?? 0;
      const scored = r.nextState !== null || feedback !== undefined;
      if (o.firstSignal?.note(r.sessionId, scored, r.score ?? 0)) extra.atLeastOne = true;
    }
  }
  if (o.opd) {
    await Promise.all(
      judged.map(async (r) => {
        const correction = (r.extra?.feedback as Feedback | undefined)?.correction;
        r.hint = correction ?? (await o.panel.judge(judgeInput(r), { mode: 'opd' })).hint ?? null;
        if (!r.hint) return;
        const prompt = o.encodeChat(withHint(r.messages as ChatMessage[], r.hint));
        (r.extra as Record<string, unknown>).teacherLogprobs = await o.teacher(
          prompt,
          r.tokenIds,
          recordTemperature(r),
        );
      }),
    );
  }
  return judged;
}
