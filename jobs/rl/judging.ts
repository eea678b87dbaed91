/**
 * The judge stage: turns from the rollout stream get their votes, reward and (OPD) hint and
 * teacher logprobs, and go on to the judged stream the trainer reads.
 *
 * - Env tracks: an episode's outcome is the track's rule over the final answer (checked
 *   against the task's reference; `env-reward` is the environment's own reward), or a reward
 *   plugin's value. A model judge (llm, onnx-prm) scores every turn (a process reward) and never
 *   replaces the outcome: each turn's value is outcome + coef · its score over the turn's
 *   token span, the episode's reward outcome + coef · mean score, and the trainer normalises the
 *   turns per group and step (OpenClaw-RL's step-wise estimator, batches.ts).
 * - Personal track: every turn is scored from the user's reaction in the next state, unless
 *   the user gave explicit feedback: a reward replaces the judge's score, a correction is the
 *   evidence the judge reads (and the OPD hint). OpenClaw-RL's at-least-one rule: the first
 *   scored turn of a session that has no effective sample yet is trained even at score 0.
 * - opd / combine: each turn is judged in OPD mode; a turn with a hint gets the teacher's
 *   logprobs of its own response under the hint-augmented prompt (OpenClaw-RL's teacher), with
 *   top-K distillation the teacher's top-K too, the hint chosen among the votes' candidates
 *   (opd-teacher.ts), and with train.distillOn teacher | both the teacher's own reply.
 */

import type { JudgePanel } from '../../actors/judge/judge-panel.js';
import { contentToText, formatHintForUser } from '../../actors/judge/prompts.js';
import { applyRule, type RuleName } from '../../actors/judge/rule-verifiers.js';
import { combineStepRewards } from '../../actors/judge/step-rewards.js';
import { renderToolCalls } from '../../actors/judge/turn-input.js';
import { hintCandidates } from '../../actors/judge/votes.js';
import type { ChatMessage } from '../../actors/models/chat-template.js';
import type { Feedback } from '../../actors/rollout/turn-feedback.js';
import type { RecordJudgement, RecordReference, TrajectoryRecord } from '../buffer/types.js';
import { type DistillOptions, type TeacherReplyOptions, teachTurn } from './opd-teacher.js';

export interface JudgeStageOptions {
  panel: JudgePanel;
  /** env: one outcome per episode (+ per-turn scores with a model judge); personal: per turn. */
  kind: 'episode' | 'turn';
  /** Per-turn PRM scores are added to env outcomes with this weight (a model judge or a step rule). */
  stepRewardCoef?: number;
  /**
   * Who scores each turn when it is not `panel` (judge.stepRule: a rule voter such as
   * `toolcall-step`, while `panel`'s rule voters give the outcome).
   */
  stepPanel?: JudgePanel;
  /** Env tracks with a model judge: the rule that gives the outcome (the track's judge.rule). */
  outcomeRule?: RuleName;
  /** opd / combine: judge every turn in OPD mode and score the hint with the teacher. */
  opd: boolean;
  /** combine on the personal track: also a PRM verdict for the RL part. */
  prm: boolean;
  /**
   * Teacher logprobs of `response` after `prompt` (a rollout engine's computeLogprobs), at the
   * temperature the response was sampled with, so that teacher − rollout compares like with like.
   */
  teacher(promptTokenIds: number[], responseTokenIds: number[], temperature: number): Promise<number[]>;
  /** train.distillTopK: the teacher's top-K at every position too, and how hints are chosen. */
  distill?: DistillOptions;
  /** train.distillOn teacher | both: the teacher also writes its own reply under the hint. */
  teacherReply?: TeacherReplyOptions;
  /** The policy's chat template, for the hint-augmented prompt. */
  encodeChat(messages: ChatMessage[]): number[];
  /** Personal: the user's explicit feedback on a turn, taken once. */
  feedback?(record: TrajectoryRecord): Feedback | undefined;
  /**
   * Personal, rl/combine: a custom judge (`plugins.reward`, slime's custom reward model) that
   * scores each turn in place of the panel's PRM verdict. Its value is the turn's reward as it
   * is: a judge that returns NaN makes a non-finite loss, which the trainer skips (and counts).
   */
  turnReward?(input: TurnRewardInput): Promise<number>;
  /** Personal, rl/combine: which sessions already gave an effective sample. */
  firstSignal?: FirstSignal;
}

/** What a personal track's reward plugin reads of a turn. */
export interface TurnRewardInput {
  sessionId: string;
  turn: number;
  /** The conversation the turn answered. */
  messages: TrajectoryRecord['messages'];
  /** The reply's text. */
  response: string;
  /** The user's next message (null when the session ended after the turn). */
  nextState: TrajectoryRecord['nextState'];
  /** The user's own words about the reply (POST /rl/set_reward `correction`), if any. */
  correction?: string;
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

/** A judge input's conversation: the record's messages (the prompt the turn answered). */
function judgeInput(r: TrajectoryRecord) {
  return { messages: r.messages, response: r.responseText, nextState: r.nextState };
}

/**
 * The turn's whole output as a step judge reads it: its text and its tool calls in `<tool_call>`
 * blocks. The record keeps only the text; the calls are in the conversation that follows (the
 * next turn's prompt, or the episode's final messages), right after the turn's prompt.
 */
function stepInput(turns: readonly TrajectoryRecord[], i: number, reference: RecordReference) {
  const r = turns[i];
  const after = (turns[i + 1]?.messages ?? r.episode.finalMessages ?? []) as ChatMessage[];
  const own = after[r.messages.length] as
    | { role?: string; tool_calls?: Array<{ function: { name: string; arguments: string } }> }
    | undefined;
  const calls = own?.role === 'assistant' && Array.isArray(own.tool_calls) ? own.tool_calls : [];
  const text = r.responseText;
  const response =
    calls.length > 0 ? [text, renderToolCalls(calls)].filter((t) => t !== '').join('\n') : text;
  const answer = reference.answer !== undefined ? { reference: { answer: reference.answer } } : {};
  return { messages: r.messages, response, nextState: r.nextState, ...answer };
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

/**
 * The episode's outcome by the track's rule. A reference the rule cannot read (an env that
 * reports only its own reward) falls back to that reward, else 0.
 */
function ruleOutcome(rule: RuleName | undefined, response: string, reference: RecordReference): number {
  const envReward = reference.reward;
  if (!rule) return envReward;
  try {
    return applyRule(rule, response, reference).reward;
  } catch {
    return envReward;
  }
}

/** A judgement's number as the record keeps it: null when it is not finite (a custom judge's NaN). */
const finite = (x: number): number | null => (Number.isFinite(x) ? x : null);

/**
 * Judges the turns of one episode (env tracks: all turns, against the task's reference;
 * personal: one). Returns copies with `votes`, `score`, `judgement` and (OPD) `hint`, `teacher`.
 */
export async function judgeEpisode(
  turns: TrajectoryRecord[],
  o: JudgeStageOptions,
  reference: RecordReference | null,
): Promise<TrajectoryRecord[]> {
  const judged = turns.map((r) => ({ ...r }));
  if (o.kind === 'episode') {
    const ref = reference ?? { reward: 0 };
    const last = judged.at(-1)!;
    const finalMessages = last.episode.finalMessages ?? last.messages;
    // A reward plugin's value replaces the outcome (slime's custom reward model); null: not finite.
    const custom = ref.custom === null ? Number.NaN : ref.custom;
    let outcome: number;
    if (o.stepRewardCoef !== undefined) {
      // The model judge scores steps; the outcome stays the environment's.
      outcome = custom ?? ruleOutcome(o.outcomeRule, last.responseText, ref);
    } else {
      const verdict = await o.panel.judge(
        { messages: finalMessages, response: last.responseText, nextState: null, reference: ref },
        { mode: 'prm' },
      );
      outcome = custom ?? verdict.votes.find((v) => v.reward !== undefined)?.reward ?? verdict.score;
      for (const r of judged) {
        r.votes = verdict.votes.map((v) => v.score ?? 0);
        r.score = verdict.score;
      }
    }
    let reward = outcome;
    let steps: RecordJudgement['step'][] = judged.map(() => null);
    if (o.stepRewardCoef !== undefined) {
      const stepPanel = o.stepPanel ?? o.panel;
      const verdicts = await Promise.all(
        judged.map((_, i) => stepPanel.judge(stepInput(judged, i, ref), { mode: 'prm' })),
      );
      // Each turn's response is one step; its span is where its tokens sit in the episode's responses.
      let at = 0;
      const spans = judged.map((r) => {
        const span: [number, number] = [at, at + r.tokenIds.length];
        at += r.tokenIds.length;
        return span;
      });
      const combined = combineStepRewards(
        outcome,
        verdicts.map((s, i) => ({ score: s.score, span: spans[i] })),
        o.stepRewardCoef,
      );
      judged.forEach((r, i) => {
        r.votes = verdicts[i].votes.map((v) => v.score ?? 0);
        r.score = verdicts[i].score;
      });
      steps = spans.map((span, i) => ({
        index: i,
        span,
        reward: finite(combined.stepScoresWithOutcome[i]),
        outcome: finite(outcome),
      }));
      reward = combined.final;
    }
    judged.forEach((r, i) => {
      r.judgement = { reward: finite(reward), step: steps[i], feedback: null, atLeastOne: false };
    });
  } else {
    for (const r of judged) {
      const feedback = o.feedback?.(r);
      const input = judgeInput(r);
      // The user's own words about the answer are better evidence than their next message.
      if (feedback?.correction !== undefined)
        input.nextState = { role: 'user', content: feedback.correction };
      let reward: number | undefined;
      if (feedback?.reward !== undefined) {
        r.votes = [];
        reward = feedback.reward;
      } else if (o.turnReward && (!o.opd || o.prm)) {
        r.votes = [];
        reward = await o.turnReward({
          sessionId: r.sessionId,
          turn: r.turn,
          messages: r.messages,
          response: input.response,
          nextState: r.nextState,
          ...(feedback?.correction !== undefined ? { correction: feedback.correction } : {}),
        });
      } else if (!o.opd || o.prm) {
        const verdict = await o.panel.judge(input, { mode: 'prm' });
        r.votes = verdict.votes.map((v) => v.score ?? 0);
        reward = verdict.score;
      }
      // The record's score is a number or "not judged"; a custom judge's non-finite value is a
      // null reward, and the trainer drops the turn's group (see turnReward).
      r.score = reward !== undefined && Number.isFinite(reward) ? reward : null;
      const scored = r.nextState !== null || feedback !== undefined;
      r.judgement = {
        reward: reward === undefined ? 0 : finite(reward),
        step: null,
        feedback: feedback ?? null,
        atLeastOne: o.firstSignal?.note(r.sessionId, scored, r.score ?? 0) === true,
      };
    }
  }
  if (o.opd) {
    await Promise.all(
      judged.map(async (r) => {
        const correction = r.judgement?.feedback?.correction;
        let hints: string[];
        if (correction !== undefined) hints = [correction];
        else {
          // Every +1 vote's hint is a candidate (top-K select scores them); the judge's own pick first.
          const verdict = await o.panel.judge(judgeInput(r), { mode: 'opd' });
          hints = verdict.hint ? [verdict.hint, ...hintCandidates(verdict.votes)] : [];
        }
        await teachTurn(r, hints, (hint) => o.encodeChat(withHint(r.messages as ChatMessage[], hint)), o);
      }),
    );
  }
  return judged;
}
