/**
 * A stand-in for OpenClaw-RL's LLM judge on simulated-user sessions, for runs without a judge
 * model (a tiny policy cannot judge itself). Like the LLM judge it reads only the NEXT STATE,
 * never the reply, and reaches the verdict the judge prompt asks for:
 *
 * - PRM mode: a correction or redo request → −1; thanks / moving on → +1; anything else → 0.
 * - OPD mode: a correction reveals the preference → +1 with the hint the user's words imply;
 *   otherwise −1 without a hint.
 *
 * It recognizes the user's phrasing exactly (it knows the user's preference, as an LLM judge would
 * understand the correction), so its votes agree with what a competent judge would say, and it
 * plugs into a `JudgePanel` as a local voter.
 */
import type { JudgeMode } from '../../judge/llm-judge.js';
import { contentToText, type JudgeInput } from '../../judge/prompts.js';
import type { JudgeScore, JudgeVote } from '../../judge/votes.js';
import { makePreference, type Preference, type PreferenceSpec } from './preferences.js';
import { EMPTY_REPLY_REMARK, PRAISE_PHRASES } from './simulated-user.js';

export type ReactionEvidence = 'positive' | 'negative' | 'neutral';

export interface ReactionVerdict {
  evidence: ReactionEvidence;
  score: JudgeScore;
  /** OPD: the hint a teacher gets (the preference, stated as an instruction); null when none. */
  hint: string | null;
}

export class ReactionJudge {
  readonly preference: Preference;
  readonly mode: JudgeMode;

  constructor(preference: Preference | PreferenceSpec | string, options: { mode?: JudgeMode } = {}) {
    this.preference =
      typeof preference === 'object' && 'check' in preference ? preference : makePreference(preference);
    this.mode = options.mode ?? 'prm';
  }

  /** What the next state says about the reply before it. */
  evidence(nextState: string | null): ReactionEvidence {
    if (nextState === null) return 'neutral';
    const text = nextState.trim();
    if (text.startsWith(EMPTY_REPLY_REMARK)) return 'negative';
    if (this.preference.corrections.some((c) => text.startsWith(c))) return 'negative';
    if (PRAISE_PHRASES.some((p) => text.startsWith(p))) return 'positive';
    return 'neutral';
  }

  judge(nextState: string | null, mode: JudgeMode = this.mode): ReactionVerdict {
    const evidence = this.evidence(nextState);
    if (mode === 'opd') {
      return evidence === 'negative'
        ? { evidence, score: 1, hint: this.preference.hint }
        : { evidence, score: -1, hint: null };
    }
    return { evidence, score: evidence === 'positive' ? 1 : evidence === 'negative' ? -1 : 0, hint: null };
  }

  /** A `JudgePanel` local voter's vote on one turn. */
  async vote(input: JudgeInput, options: { mode?: JudgeMode } = {}): Promise<JudgeVote> {
    const t0 = performance.now();
    const mode = options.mode ?? this.mode;
    const next = input.nextState ? contentToText(input.nextState.content) : null;
    const verdict = this.judge(next, mode);
    const vote: JudgeVote = {
      score: verdict.score,
      backend: 'rule',
      latencyMs: performance.now() - t0,
    };
    if (mode === 'opd') vote.hint = verdict.hint;
    return vote;
  }
}
