/**
 * The results file (examples/results.json) that `node examples/measure.mjs` writes and the
 * README's results table is generated from (results-table.mjs). It exists so that no figure in
 * the README is remembered: every one is a measured run's own output, kept with the commit and
 * the machine that produced it.
 *
 * Here: what one example run printed, parsed strictly (a field the driver no longer writes is an
 * error naming it, not a silent gap in the table); a track's mean, min and max over its seeds;
 * and the merge that lets `--only personal` replace the personal track and keep the others' last
 * measurement. Pure functions and schemas only: measure.mjs does the running, and the tests
 * import this with fixture lines. Types: results.d.mts.
 */
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';

export const RESULTS_VERSION = 1;

/** The examples' tracks, in the order the table lists them and measure.mjs runs them. */
export const TRACKS = ['toolcall', 'personal', 'terminal', 'gui', 'swe'];

/** A refusal of what a run printed or of a results file: one line that names the field. */
export class ResultsError extends Error {
  name = 'ResultsError';
}

const phaseSchema = z.enum(['start', 'warmup', 'rl']);
const metricSchema = z.enum(['heldout_success', 'preference_score']);

/** The line `clawray job submit MANIFEST --json` ends with (cli/rljob-submit.ts rljobSummaryLine): what measure reads of it. */
const jobLineSchema = z.object({
  submissionId: z.string(),
  status: z.string(),
  message: z.string().optional(),
  error: z.string().nullable(),
});

/**
 * The driver's `summary {JSON}` log line (jobs/rl/driver.ts RLJobSummary, without history and
 * evals): what measure reads of it. `curves.heldout` is every held-out evaluation in order.
 */
const driverSummarySchema = z.object({
  status: z.enum(['completed', 'stopped', 'failed']),
  error: z.string().optional(),
  steps: z.number().int().nonnegative(),
  metric: metricSchema,
  heldout: z.object({
    start: z.number().nullable(),
    afterWarmup: z.number().nullable(),
    end: z.number().nullable(),
  }),
  elapsedSeconds: z.number().nonnegative(),
  curves: z.object({
    heldout: z.array(
      z.object({ step: z.number().int().nonnegative(), value: z.number(), phase: phaseSchema }),
    ),
    /** The job's learning-curves.svg (absolute, in the run's home); measure keeps a copy. */
    svg: z.string().nullable(),
  }),
});

const statsSchema = z.object({
  mean: z.number(),
  min: z.number(),
  max: z.number(),
  n: z.number().int().positive(),
});
const machineSchema = z.object({ cpus: z.number().int().positive(), cpuModel: z.string(), node: z.string() });
const makeSchema = z.object({
  /** What the make step makes, for the table: 'base build', 'task files'. */
  label: z.string(),
  command: z.string(),
  /** false: its output already existed and was reused. */
  ran: z.boolean(),
  /** Measured when it ran; when reused, what the output itself recorded (personal-base.json), else null. */
  seconds: z.number().nonnegative().nullable(),
});

const runSchema = z.object({
  track: z.enum(TRACKS),
  manifest: z.string(),
  /** The job seed: each seed field of the manifest is its own value + seed (0: as written). */
  seed: z.number().int().nonnegative(),
  /** personal: the base's `make-base.mjs --seed`; null for the other tracks. */
  baseSeed: z.number().int().nonnegative().nullable(),
  set: z.array(z.string()),
  status: z.enum(['completed', 'failed']),
  error: z.string().nullable(),
  submissionId: z.string().nullable(),
  metric: metricSchema.nullable(),
  steps: z.number().int().nonnegative().nullable(),
  start: z.number().nullable(),
  afterWarmup: z.number().nullable(),
  end: z.number().nullable(),
  evals: z.array(
    z.object({
      step: z.number().int().nonnegative(),
      /** personal: step × spec.rollout.batchSize (judged interactions of the simulated user). */
      interactions: z.number().int().nonnegative().nullable(),
      value: z.number(),
      phase: phaseSchema,
    }),
  ),
  elapsedSeconds: z.number().nonnegative().nullable(),
  make: makeSchema.nullable(),
  measuredAt: z.string(),
});

const trackSchema = z.object({
  manifest: z.string(),
  measuredAt: z.string(),
  commit: z.string(),
  machine: machineSchema,
  metric: metricSchema.nullable(),
  seeds: z.object({ job: z.array(z.number().int()), base: z.array(z.number().int()).nullable() }),
  runs: z.number().int().nonnegative(),
  failed: z.number().int().nonnegative(),
  start: statsSchema.nullable(),
  afterWarmup: statsSchema.nullable(),
  end: statsSchema.nullable(),
  /** end − afterWarmup per run (end − start without a warm start): what RL itself added. */
  gain: statsSchema.nullable(),
  /** RL evaluations by step (the start and the warm start's are start and afterWarmup). */
  evals: z.array(statsSchema.extend({ step: z.number().int(), interactions: z.number().int().nullable() })),
  wall: statsSchema.nullable(),
  make: statsSchema.extend({ label: z.string() }).nullable(),
});

const resultsSchema = z.object({
  version: z.literal(RESULTS_VERSION),
  measuredAt: z.string(),
  machine: machineSchema,
  commit: z.string(),
  runs: z.array(runSchema),
  tracks: z.partialRecord(z.enum(TRACKS), trackSchema),
});

/** `what: missing field a.b` / `what: a.b: expected …` for the first problem zod found. */
function refusal(what, value, error) {
  const issue = error.issues[0];
  const path = issue.path.join('.');
  let at = value;
  for (const key of issue.path) at = at === null || typeof at !== 'object' ? undefined : at[key];
  if (at === undefined) {
    return new ResultsError(`${what}: missing field ${path || '(the whole value)'}`);
  }
  return new ResultsError(`${what}: ${path ? `${path}: ` : ''}${issue.message}`);
}

function validated(schema, value, what) {
  const r = schema.safeParse(value);
  if (!r.success) throw refusal(what, value, r.error);
  return r.data;
}

/** The last line of `job submit --json`'s stdout, validated. */
export function parseJobLine(stdout) {
  const line = stdout.trim().split('\n').at(-1) ?? '';
  let value;
  try {
    value = JSON.parse(line);
  } catch {
    throw new ResultsError(
      `job submit --json printed no JSON line${line ? ` (its last line: ${line.slice(0, 200)})` : ''}`,
    );
  }
  return validated(jobLineSchema, value, 'the job submit --json line');
}

/** The driver's summary object (from its `summary {JSON}` log line), validated. */
export function parseDriverSummary(value) {
  return validated(driverSummarySchema, value, 'the job summary');
}

/** A results file's parsed JSON, validated (version included). */
export function parseResults(value) {
  if (value && typeof value === 'object' && 'version' in value && value.version !== RESULTS_VERSION) {
    throw new ResultsError(
      `results version ${JSON.stringify(value.version)}: this script reads and writes version ${RESULTS_VERSION}`,
    );
  }
  return validated(resultsSchema, value, 'results');
}

/**
 * One run's record. `outcome` is what the run printed ({jobLine, summary, logTail?}: parsed above;
 * summary undefined when the job ended before its driver wrote one, logTail the last line of its
 * log, which says why then), or {error, submissionId?} when it
 * printed nothing usable (a timeout, a manifest refusal, a failed make step, a summary refused).
 * A job that ended otherwise than SUCCEEDED and completed is failed, with its own error.
 */
export function runRecord(meta, outcome) {
  const base = {
    track: meta.track,
    manifest: meta.manifest,
    seed: meta.seed,
    baseSeed: meta.baseSeed ?? null,
    set: meta.set,
    make: meta.make ?? null,
    measuredAt: meta.measuredAt,
  };
  const blank = {
    metric: null,
    steps: null,
    start: null,
    afterWarmup: null,
    end: null,
    evals: [],
    elapsedSeconds: null,
  };
  if ('error' in outcome) {
    return {
      ...base,
      status: 'failed',
      error: outcome.error,
      submissionId: outcome.submissionId ?? null,
      ...blank,
    };
  }
  const { jobLine, summary } = outcome;
  if (jobLine.status !== 'SUCCEEDED' || summary?.status !== 'completed') {
    const why =
      summary?.error ??
      jobLine.error ??
      outcome.logTail ??
      (jobLine.message || `job ${jobLine.status.toLowerCase()}`);
    return { ...base, status: 'failed', error: why, submissionId: jobLine.submissionId, ...blank };
  }
  const perStep = meta.interactionsPerStep ?? null;
  return {
    ...base,
    status: 'completed',
    error: null,
    submissionId: jobLine.submissionId,
    metric: summary.metric,
    steps: summary.steps,
    start: summary.heldout.start,
    afterWarmup: summary.heldout.afterWarmup,
    end: summary.heldout.end,
    evals: summary.curves.heldout.map((e) => ({
      step: e.step,
      interactions: perStep === null ? null : e.step * perStep,
      value: e.value,
      phase: e.phase,
    })),
    elapsedSeconds: summary.elapsedSeconds,
  };
}

/** Mean, min and max of the numbers given (nulls left out); null when there are none. */
export function stats(values) {
  const xs = values.filter((v) => typeof v === 'number');
  if (xs.length === 0) return null;
  return {
    mean: xs.reduce((a, b) => a + b, 0) / xs.length,
    min: Math.min(...xs),
    max: Math.max(...xs),
    n: xs.length,
  };
}

const unique = (xs) => [...new Set(xs)].sort((a, b) => a - b);

/** What RL itself added to one run: end − afterWarmup, or end − start without a warm start. */
export function rlGain(run) {
  const from = run.afterWarmup ?? run.start;
  return run.end === null || from === null ? null : run.end - from;
}

/**
 * A track's aggregate over its runs: the figures of the completed ones, mean/min/max over seeds;
 * `about` is the manifest, when and where it was measured. The make step counts once per command
 * (one base build per base seed, one task generation for all seeds).
 */
export function summarizeTrack(runs, about) {
  const done = runs.filter((r) => r.status === 'completed');
  const byStep = new Map();
  for (const r of done) {
    for (const e of r.evals) {
      if (e.phase !== 'rl') continue;
      const at = byStep.get(e.step) ?? { interactions: e.interactions, values: [] };
      at.values.push(e.value);
      byStep.set(e.step, at);
    }
  }
  const makes = new Map();
  for (const r of runs) if (r.make) makes.set(r.make.command, r.make);
  const makeStats = stats([...makes.values()].map((m) => m.seconds));
  const bases = runs.map((r) => r.baseSeed).filter((b) => b !== null);
  return {
    manifest: about.manifest,
    measuredAt: about.measuredAt,
    commit: about.commit,
    machine: about.machine,
    metric: done[0]?.metric ?? null,
    seeds: { job: unique(runs.map((r) => r.seed)), base: bases.length > 0 ? unique(bases) : null },
    runs: runs.length,
    failed: runs.length - done.length,
    start: stats(done.map((r) => r.start)),
    afterWarmup: stats(done.map((r) => r.afterWarmup)),
    end: stats(done.map((r) => r.end)),
    gain: stats(done.map(rlGain)),
    evals: [...byStep]
      .sort(([a], [b]) => a - b)
      .map(([step, at]) => ({ step, interactions: at.interactions, ...stats(at.values) })),
    wall: stats(done.map((r) => r.elapsedSeconds)),
    make: makeStats && { label: [...makes.values()][0].label, ...makeStats },
  };
}

/**
 * The results file after a measurement of some tracks: those tracks' runs and aggregates are
 * replaced, every other track keeps its last measurement (with its own measuredAt, commit and
 * machine). `previous` is null for a first measurement.
 */
export function mergeResults(previous, fresh) {
  const measured = new Set(Object.keys(fresh.tracks));
  const runs = [...(previous?.runs ?? []).filter((r) => !measured.has(r.track)), ...fresh.runs];
  const tracks = { ...(previous?.tracks ?? {}), ...fresh.tracks };
  const order = (t) => TRACKS.indexOf(t);
  return {
    version: RESULTS_VERSION,
    measuredAt: fresh.measuredAt,
    machine: fresh.machine,
    commit: fresh.commit,
    // Stable: a track's runs stay in the order they ran.
    runs: runs.sort((a, b) => order(a.track) - order(b.track)),
    tracks: Object.fromEntries(Object.entries(tracks).sort(([a], [b]) => order(a) - order(b))),
  };
}

const runsOf = (results, track) => results.runs.filter((r) => r.track === track);

/**
 * Tracks whose stored aggregate is not what their runs give (a hand edit of either): the README
 * test fails on them, as it does on a table edited without the JSON.
 */
export function staleTracks(results) {
  return Object.entries(results.tracks)
    .filter(([track, agg]) => !isDeepStrictEqual(summarizeTrack(runsOf(results, track), agg), agg))
    .map(([track]) => track);
}
