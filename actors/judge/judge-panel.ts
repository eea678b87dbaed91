/**
 * The caller's side of judging with `JudgeVoter` actors: a turn's m votes are m `vote` calls
 * sent in parallel, round-robin over the voter replicas, then combined exactly as `LlmJudge`
 * combines its own (invalid votes dropped, majority, a tie or no valid vote → 0, OPD: longest
 * +1 hint over 10 characters). A call that fails or times out (a dead or unreachable actor) is
 * one more invalid vote, so a turn is always scored.
 *
 * Votes are counted by the voters that produce them; the panel counts turns (agreement, turn
 * latency, hints accepted/rejected) and its failed calls, in its own registry.
 *
 *   const panel = new JudgePanel(voterHandles, { votes: 3 });
 *   const { score, agreement } = await panel.judge({ messages, response, nextState });
 */
import type { Registry } from 'prom-client';
import type { ActorHandle } from '../../runtime/index.js';
import { JudgeMetrics } from './judge-metrics.js';
import { checkJudgeInput, type JudgeVoter, type VoteOptions } from './judge-voter.js';
import type { JudgeMode } from './llm-judge.js';
import type { JudgeInput } from './prompts.js';
import { type JudgeResult, type JudgeVote, tallyVotes } from './votes.js';

/** Anything that votes in process (a `JudgeVoter` instance, a stub). */
export interface LocalVoter {
  vote(input: JudgeInput, options?: VoteOptions): Promise<JudgeVote>;
}

/** A voter actor's handle, or a voter in this process. */
export type VoterRef = ActorHandle<JudgeVoter> | LocalVoter;

export interface JudgePanelOptions {
  /** Votes per turn m (default 3); may exceed the number of voters (replicas vote more than once). */
  votes?: number;
  /** Asked of every voter; default: each voter's own mode. A result carries `hint` in OPD mode. */
  mode?: JudgeMode;
  /** A vote not answered within this many ms counts as invalid (default: wait). */
  timeoutMs?: number;
  /**
   * Share (0–1) of the m votes that must agree for a +1 or −1 verdict; otherwise the turn scores
   * 0. Default: a plain majority (ties score 0), as OpenClaw-RL.
   */
  voteThreshold?: number;
  /** Where turns are counted (default prom-client's default registry). */
  registry?: Registry;
}

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function isLocal(voter: VoterRef): voter is LocalVoter {
  return typeof (voter as Partial<LocalVoter>).vote === 'function';
}

function checkVotes(votes: number): number {
  if (!Number.isInteger(votes) || votes < 1)
    throw new RangeError(`votes must be a positive integer, got ${votes}`);
  return votes;
}

/**
 * Where the next turn's first vote goes, by voter array, so turns with m < replicas spread over
 * all of them, also across `judgeTurn` calls (each builds a panel) and panels sharing an array.
 */
const cursors = new WeakMap<readonly VoterRef[], number>();

export class JudgePanel {
  readonly voters: readonly VoterRef[];
  readonly votes: number;
  readonly mode: JudgeMode | undefined;
  readonly timeoutMs: number | undefined;
  readonly voteThreshold: number | undefined;
  private readonly metrics: JudgeMetrics;
  /** The caller's array: the key of the round-robin position this panel shares. */
  private readonly list: readonly VoterRef[];

  constructor(voters: readonly VoterRef[], options: JudgePanelOptions = {}) {
    if (voters.length === 0) throw new RangeError('a judge panel needs at least one voter');
    if (options.timeoutMs !== undefined && !(options.timeoutMs > 0)) {
      throw new RangeError(`timeoutMs must be positive, got ${options.timeoutMs}`);
    }
    this.list = voters;
    this.voters = [...voters];
    this.votes = checkVotes(options.votes ?? 3);
    this.mode = options.mode;
    this.timeoutMs = options.timeoutMs;
    if (options.voteThreshold !== undefined && !(options.voteThreshold >= 0 && options.voteThreshold <= 1)) {
      throw new RangeError(`voteThreshold must be in [0, 1], got ${options.voteThreshold}`);
    }
    this.voteThreshold = options.voteThreshold;
    this.metrics = new JudgeMetrics(options.registry);
  }

  /** Scores one turn by m parallel votes and their majority. */
  async judge(input: JudgeInput, overrides: { mode?: JudgeMode; votes?: number } = {}): Promise<JudgeResult> {
    checkJudgeInput(input);
    const mode = overrides.mode ?? this.mode;
    const m = checkVotes(overrides.votes ?? this.votes);
    const start = cursors.get(this.list) ?? 0;
    cursors.set(this.list, (start + m) % this.voters.length);
    const t0 = performance.now();
    const votes = await Promise.all(
      Array.from({ length: m }, (_, i) =>
        this.ask(this.voters[(start + i) % this.voters.length], input, mode),
      ),
    );
    // Without an explicit mode, OPD voters say so by carrying a hint field (null or text).
    const opd = mode === undefined ? votes.some((v) => v.hint !== undefined) : mode === 'opd';
    const result = tallyVotes(votes, opd, performance.now() - t0, this.voteThreshold);
    this.metrics.recordTurn(result, opd);
    return result;
  }

  /** OPD hint judgement of one turn. */
  hint(input: JudgeInput): Promise<JudgeResult> {
    return this.judge(input, { mode: 'opd' });
  }

  private async ask(voter: VoterRef, input: JudgeInput, mode: JudgeMode | undefined): Promise<JudgeVote> {
    const t0 = performance.now();
    const options: VoteOptions = mode ? { mode } : {};
    let timer: NodeJS.Timeout | undefined;
    try {
      const call = isLocal(voter) ? voter.vote(input, options) : voter.call('vote', input, options);
      if (this.timeoutMs === undefined) return await call;
      const ms = this.timeoutMs;
      return await Promise.race([
        call,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no vote within ${ms} ms`)), ms);
        }),
      ]);
    } catch (e) {
      this.metrics.recordCallError();
      const vote: JudgeVote = {
        score: null,
        error: `vote call failed: ${errorMessage(e)}`,
        latencyMs: performance.now() - t0,
      };
      if (mode === 'opd') vote.hint = null;
      return vote;
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * Scores one turn with m votes across `voters` (see `JudgePanel`). Calls with the same `voters`
 * array continue one round-robin, so consecutive turns start at different replicas.
 */
export function judgeTurn(
  voters: readonly VoterRef[],
  input: JudgeInput,
  options: JudgePanelOptions = {},
): Promise<JudgeResult> {
  return new JudgePanel(voters, options).judge(input);
}
