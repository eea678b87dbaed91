/** Types of results.mjs (the module is plain JavaScript so that examples run with node alone). */

export declare const RESULTS_VERSION: 1;
export type Track = 'toolcall' | 'personal' | 'terminal' | 'gui' | 'swe';
export declare const TRACKS: readonly Track[];
export type Metric = 'heldout_success' | 'preference_score';
export type Phase = 'start' | 'warmup' | 'rl';

export declare class ResultsError extends Error {}

/** The fields measure reads of `job submit --json`'s line. */
export interface JobLine {
  submissionId: string;
  status: string;
  message?: string;
  error: string | null;
}

/** The fields measure reads of the driver's `summary {JSON}` line. */
export interface DriverSummary {
  status: 'completed' | 'stopped' | 'failed';
  error?: string;
  steps: number;
  metric: Metric;
  heldout: { start: number | null; afterWarmup: number | null; end: number | null };
  elapsedSeconds: number;
  curves: { heldout: { step: number; value: number; phase: Phase }[]; svg: string | null };
}

export interface Stats {
  mean: number;
  min: number;
  max: number;
  n: number;
}

export interface Machine {
  cpus: number;
  cpuModel: string;
  node: string;
}

export interface MakeStep {
  label: string;
  command: string;
  ran: boolean;
  seconds: number | null;
}

export interface RunEval {
  step: number;
  interactions: number | null;
  value: number;
  phase: Phase;
}

export interface RunRecord {
  track: Track;
  manifest: string;
  seed: number;
  baseSeed: number | null;
  set: string[];
  status: 'completed' | 'failed';
  error: string | null;
  submissionId: string | null;
  metric: Metric | null;
  steps: number | null;
  start: number | null;
  afterWarmup: number | null;
  end: number | null;
  evals: RunEval[];
  elapsedSeconds: number | null;
  make: MakeStep | null;
  measuredAt: string;
}

export interface TrackAbout {
  manifest: string;
  measuredAt: string;
  commit: string;
  machine: Machine;
}

export interface TrackResults extends TrackAbout {
  metric: Metric | null;
  seeds: { job: number[]; base: number[] | null };
  runs: number;
  failed: number;
  start: Stats | null;
  afterWarmup: Stats | null;
  end: Stats | null;
  gain: Stats | null;
  evals: (Stats & { step: number; interactions: number | null })[];
  wall: Stats | null;
  make: (Stats & { label: string }) | null;
}

export interface Results {
  version: typeof RESULTS_VERSION;
  measuredAt: string;
  machine: Machine;
  commit: string;
  runs: RunRecord[];
  tracks: Partial<Record<Track, TrackResults>>;
}

export interface RunMeta {
  track: Track;
  manifest: string;
  seed: number;
  baseSeed?: number | null;
  set: string[];
  make?: MakeStep | null;
  measuredAt: string;
  /** personal: spec.rollout.batchSize (an evaluation's step × this = interactions). */
  interactionsPerStep?: number | null;
}

export type RunOutcome =
  | { jobLine: JobLine; summary: DriverSummary | undefined; logTail?: string }
  | { error: string; submissionId?: string | null };

export declare function parseJobLine(stdout: string): JobLine;
export declare function parseDriverSummary(value: unknown): DriverSummary;
export declare function parseResults(value: unknown): Results;
export declare function runRecord(meta: RunMeta, outcome: RunOutcome): RunRecord;
export declare function stats(values: readonly (number | null)[]): Stats | null;
export declare function rlGain(run: Pick<RunRecord, 'start' | 'afterWarmup' | 'end'>): number | null;
export declare function summarizeTrack(runs: readonly RunRecord[], about: TrackAbout): TrackResults;
export declare function mergeResults(previous: Results | null, fresh: Omit<Results, 'version'>): Results;
export declare function staleTracks(results: Results): Track[];
