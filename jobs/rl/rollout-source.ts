/**
 * Where a job's trajectories come from, behind one interface: environment episodes played by
 * the job's rollout engines (env tracks), or sessions on the job's OpenAI-compatible endpoint
 * (personal track). A source appends what it produces to the rollout stream and admits work
 * only as the staleness gate allows.
 */
import type { TrajectoryRecord } from '../buffer/types.js';
import type { StalenessGate } from './staleness-gate.js';

export interface RolloutContext {
  gate: StalenessGate;
  /** Appends to the rollout stream (idempotent by trajectory id). */
  append(records: TrajectoryRecord[]): Promise<void>;
  /** Aborted when the job stops or fails. */
  signal: AbortSignal;
  log(line: string): void;
}

export interface RolloutSource {
  /** Slots producing in parallel (what the rollout idle ratio divides by). */
  readonly slots: number;
  /** Produces until the gate closes or the signal aborts; rejects on a failure of its own. */
  run(ctx: RolloutContext): Promise<void>;
}
