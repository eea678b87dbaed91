/**
 * Which trajectories the job has trained on, dropped or still holds, and when the streams may
 * forget them. A judged entry the train loop consumed stays pending in the stream until the
 * step that used it is in a checkpoint: a driver that dies before then replays it from the
 * stream into the resumed weights (once), and one that dies after skips it (never twice).
 *
 * The commit order makes that hold across a crash at any point: the trainer checkpoint, then
 * the driver state naming the ids being committed, then `markTrained`, then the acks. A driver
 * resuming from that state re-applies the last two, which are idempotent.
 */
import type { TrajectoryBuffer } from '../buffer/types.js';

/**
 * Why a judged trajectory was not trained: too stale, no learning signal, an empty response,
 * or its step was skipped because the step's loss or gradients were not finite.
 */
export const DROP_REASONS = ['stale', 'no_signal', 'truncated', 'non_finite'] as const;
export type DropReason = (typeof DROP_REASONS)[number];

export interface TrajectoryCounts {
  produced: number;
  judged: number;
  trained: number;
  dropped: Record<DropReason, number> & { total: number };
  lost: number;
  duplicated: number;
}

/** What one step consumed from the judged stream. */
export interface StepUse {
  entryIds: string[];
  trained: string[];
  dropped: Partial<Record<DropReason, string[]>>;
}

/** The part of the ledger that travels in the driver's checkpointed state. */
export interface LedgerState {
  dropped: Record<DropReason, number>;
  duplicated: number;
  /** What the last checkpoint's steps trained and consumed (re-applied on resume). */
  committing: { trajectoryIds: string[]; entryIds: string[] };
}

export const emptyLedgerState = (): LedgerState => ({
  dropped: { stale: 0, no_signal: 0, truncated: 0, non_finite: 0 },
  duplicated: 0,
  committing: { trajectoryIds: [], entryIds: [] },
});

export const TRAIN_GROUP = 'train';
export const JUDGE_GROUP = 'judge';

export class TrajectoryLedger {
  private uncommitted: StepUse[] = [];
  private state: LedgerState = emptyLedgerState();

  constructor(
    private readonly rollouts: TrajectoryBuffer,
    private readonly judged: TrajectoryBuffer,
  ) {}

  /** A step used these entries (not yet durable: nothing is acked). */
  recordStep(use: StepUse): void {
    this.uncommitted.push(use);
  }

  /** Steps recorded since the last commit. */
  get pendingSteps(): number {
    return this.uncommitted.length;
  }

  /**
   * Moves the uncommitted steps into the state that the next checkpoint saves; returns it.
   * Call `finishCommit` once that state is on disk.
   */
  prepareCommit(): LedgerState {
    const dropped = { ...this.state.dropped };
    for (const u of this.uncommitted) {
      for (const [reason, ids] of Object.entries(u.dropped) as [DropReason, string[]][])
        dropped[reason] += ids.length;
    }
    this.state = {
      ...this.state,
      dropped,
      committing: {
        trajectoryIds: this.uncommitted.flatMap((u) => u.trained),
        entryIds: this.uncommitted.flatMap((u) => u.entryIds),
      },
    };
    this.uncommitted = [];
    return structuredClone(this.state);
  }

  /** Marks the committed trajectories trained and acks their entries (idempotent). */
  async finishCommit(): Promise<void> {
    const { trajectoryIds, entryIds } = this.state.committing;
    if (trajectoryIds.length > 0) {
      // An id trained in an earlier checkpoint and committed again is a duplicate.
      this.state.duplicated += trajectoryIds.length - (await this.judged.markTrained(trajectoryIds));
    }
    if (entryIds.length > 0) await this.judged.ack(TRAIN_GROUP, entryIds);
    this.state.committing = { trajectoryIds: [], entryIds: [] };
  }

  /** Continues from a checkpointed state: re-applies its commit, which a crash may have cut short. */
  async restore(state: LedgerState): Promise<void> {
    this.state = structuredClone(state);
    // A state written before a reason existed counts none of it.
    this.state.dropped = { ...emptyLedgerState().dropped, ...state.dropped };
    this.uncommitted = [];
    const { trajectoryIds, entryIds } = state.committing;
    // Both are idempotent: a commit that had finished before the crash changes nothing here.
    if (trajectoryIds.length > 0) await this.judged.markTrained(trajectoryIds);
    if (entryIds.length > 0) await this.judged.ack(TRAIN_GROUP, entryIds);
    this.state.committing = { trajectoryIds: [], entryIds: [] };
  }

  /**
   * The job's counts, from the streams' own counters. `lost`: trajectories that left a stream
   * without going anywhere — rollouts acked by the judge without a judged record, judged
   * entries acked by the trainer without being trained or dropped, and dead letters. It is what
   * acking too early would show after a crash. `duplicated`: trajectories committed to training
   * after an earlier checkpoint already held them.
   */
  async counts(): Promise<TrajectoryCounts> {
    const [r, j] = await Promise.all([this.rollouts.stats(), this.judged.stats()]);
    const none = { acked: 0, pending: 0, deadLetters: 0, unread: 0 };
    const judge = r.groups[JUDGE_GROUP] ?? none;
    const train = j.groups[TRAIN_GROUP] ?? none;
    const d = this.state.dropped;
    const droppedTotal = DROP_REASONS.reduce((n, reason) => n + d[reason], 0);
    const lost =
      Math.max(0, judge.acked - j.appended) +
      judge.deadLetters +
      train.deadLetters +
      Math.max(0, train.acked - j.trained - droppedTotal);
    return {
      produced: r.appended,
      judged: j.appended,
      trained: j.trained,
      dropped: { ...d, total: droppedTotal },
      lost,
      duplicated: this.state.duplicated,
    };
  }
}
