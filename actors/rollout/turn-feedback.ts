/**
 * Explicit feedback on a session's turns, beside the judge (AReaL's `/rl/set_reward`): a
 * client attaches a reward, a correction, or both to one of the session's main turns (by the
 * `chatcmpl-…` id it got back, or the session's latest turn). The judge stage takes it when it
 * judges that turn: a reward replaces the judge's score; a correction is the user's own
 * words about the answer, so it becomes the evidence the judge reads (and, for OPD, the hint).
 *
 * Feedback must arrive before its turn is judged, which happens once the session's next main
 * turn arrives or the session ends; later feedback is refused (`TurnAlreadyJudgedError`, a 409)
 * rather than dropped without a word. It is kept in the serving process until judged.
 */
import { ClawrayError, ConfigError, NotFoundError, registerErrorClass } from '../../common/errors.js';

export interface Feedback {
  reward?: number;
  correction?: string;
  /** When it was given (ISO). */
  at: string;
}

export interface FeedbackInput {
  sessionId: string;
  /** The `chatcmpl-…` id of the turn; absent: the session's latest main turn. */
  interactionId?: string;
  reward?: number;
  correction?: string;
}

/** Feedback came after its turn was judged (HTTP 409). */
export class TurnAlreadyJudgedError extends ClawrayError {}
registerErrorClass(TurnAlreadyJudgedError);

interface TurnEntry {
  sessionId: string;
  feedback?: Feedback;
  judged: boolean;
}

const MAX_CORRECTION_CHARS = 16_384;

export interface TurnFeedbackOptions {
  /**
   * The rewards a turn may get, [lowest, highest] (the job's `judge.rewardRange`): a reward
   * replaces the judge's score, so it is held to the judge's scale. Default [-1, 1], the
   * built-in judges' majority scores.
   */
  rewardRange?: readonly [number, number];
  /** Turns remembered (the oldest is forgotten past it). Default 100 000. */
  maxTurns?: number;
}

export class TurnFeedback {
  /** requestId → turn, in completion order (the oldest is forgotten past `maxTurns`). */
  private readonly turns = new Map<string, TurnEntry>();
  private readonly latest = new Map<string, string>();
  private given = 0;
  readonly rewardRange: readonly [number, number];
  private readonly maxTurns: number;

  constructor(options: TurnFeedbackOptions = {}) {
    const [low, high] = options.rewardRange ?? [-1, 1];
    if (!(Number.isFinite(low) && Number.isFinite(high) && low < high)) {
      throw new ConfigError(
        `rewardRange must be [lowest, highest] with lowest < highest, got [${low}, ${high}]`,
        {
          fields: { option: 'rewardRange' },
        },
      );
    }
    this.rewardRange = [low, high];
    this.maxTurns = options.maxTurns ?? 100_000;
  }

  /** A main turn of `sessionId` finished and will be recorded. */
  noteTurn(sessionId: string, requestId: string): void {
    this.turns.set(requestId, { sessionId, judged: false });
    this.latest.delete(sessionId);
    this.latest.set(sessionId, requestId);
    while (this.turns.size > this.maxTurns) {
      const [oldId, old] = this.turns.entries().next().value as [string, TurnEntry];
      this.turns.delete(oldId);
      if (this.latest.get(old.sessionId) === oldId) this.latest.delete(old.sessionId);
    }
  }

  /** Attaches feedback; returns the turn it went to. */
  give(input: FeedbackInput): { sessionId: string; interactionId: string } {
    if (input.reward === undefined && input.correction === undefined) {
      throw new ConfigError('send a reward, a correction, or both', { fields: { param: 'reward' } });
    }
    const [low, high] = this.rewardRange;
    // A reward stands in for the judge's score in a training step: one outside the judge's
    // scale (1e308, say) would outweigh every other turn of its batch or overflow the loss.
    if (input.reward !== undefined && !(input.reward >= low && input.reward <= high)) {
      throw new ConfigError(
        `reward must be a number in [${low}, ${high}] (the job's judge.rewardRange), got ${input.reward}`,
        { fields: { param: 'reward', low, high } },
      );
    }
    if (input.correction !== undefined && input.correction.length > MAX_CORRECTION_CHARS) {
      throw new ConfigError(`correction is longer than ${MAX_CORRECTION_CHARS} characters`, {
        fields: { param: 'correction' },
      });
    }
    const interactionId = input.interactionId ?? this.latest.get(input.sessionId);
    const entry = interactionId === undefined ? undefined : this.turns.get(interactionId);
    if (!entry || entry.sessionId !== input.sessionId || interactionId === undefined) {
      throw new NotFoundError(
        input.interactionId
          ? `session '${input.sessionId}' has no recorded turn '${input.interactionId}'`
          : `session '${input.sessionId}' has no recorded turn yet`,
        { fields: { param: input.interactionId ? 'interaction_id' : 'session_id' } },
      );
    }
    if (entry.judged) {
      throw new TurnAlreadyJudgedError(
        `turn '${interactionId}' of session '${input.sessionId}' has already been judged: feedback must come before the session's next message (or its end)`,
        { fields: { param: 'interaction_id', interactionId } },
      );
    }
    entry.feedback = {
      ...entry.feedback,
      ...(input.reward !== undefined ? { reward: input.reward } : {}),
      ...(input.correction !== undefined ? { correction: input.correction } : {}),
      at: new Date().toISOString(),
    };
    this.given++;
    return { sessionId: input.sessionId, interactionId };
  }

  /** The judge takes a turn's feedback (if any); later feedback on it is refused. */
  take(requestId: string): Feedback | undefined {
    const entry = this.turns.get(requestId);
    if (!entry) return undefined;
    entry.judged = true;
    const feedback = entry.feedback;
    entry.feedback = undefined;
    return feedback;
  }

  stats(): { turns: number; given: number } {
    return { turns: this.turns.size, given: this.given };
  }
}
