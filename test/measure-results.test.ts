/**
 * examples/measure.mjs's pure parts with fixture lines: what a run printed, parsed strictly (a
 * missing field is named), a track's mean/min/max over seeds, the merge that keeps the tracks
 * not measured again, the README table and its markers; and the script's one-line refusals and
 * --dry-run, which run nothing.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../common/package-root.js';
import {
  type DriverSummary,
  type Machine,
  mergeResults,
  parseDriverSummary,
  parseJobLine,
  parseResults,
  type RunMeta,
  type RunRecord,
  runRecord,
  staleTracks,
  stats,
  summarizeTrack,
  type Track,
} from '../examples/results.mjs';
import {
  NO_RESULTS,
  RESULTS_BEGIN,
  RESULTS_END,
  readResultsTable,
  renderResultsTable,
  replaceResultsTable,
} from '../examples/results-table.mjs';

const root = packageRoot();

/** A real `job submit --json` line of examples/toolcall/rl.yaml. */
const JOB_LINE = JSON.stringify({
  submissionId: 'job-9e721a153687d6e2',
  status: 'SUCCEEDED',
  message: 'exit code 0',
  error: null,
  attempt: 1,
  job: 'toolcall-grpo',
  track: 'toolcall',
  method: 'rl',
  steps: 60,
  skippedSteps: 0,
  warmupSteps: 500,
  metric: 'heldout_success',
  heldoutStart: 0,
  heldoutAfterWarmup: 0.04477611940298507,
  heldoutEnd: 0.8059701492537313,
  elapsedSeconds: 215.6804026,
  logFile: '/tmp/home/logs/rljobs/job-9e721a153687d6e2.log',
});

/** The driver's summary of that run (its log's `summary {JSON}`), with the held-out curve. */
function toolcallSummary(
  o: { start?: number; warm?: number; mid?: number; end?: number; seconds?: number } = {},
) {
  const { start = 0, warm = 0.045, mid = 0.448, end = 0.806, seconds = 215.68 } = o;
  return {
    submissionId: 'job-9e721a153687d6e2',
    job: 'toolcall-grpo',
    track: 'toolcall',
    method: 'rl',
    status: 'completed',
    steps: 60,
    warmupSteps: 500,
    skippedSteps: 0,
    metric: 'heldout_success',
    heldout: { start, afterWarmup: warm, end },
    samplesPerSecond: 33.97,
    elapsedSeconds: seconds,
    curves: {
      heldout: [
        { step: 0, value: start, phase: 'start' },
        { step: 0, value: warm, phase: 'warmup' },
        { step: 20, value: mid, phase: 'rl' },
        { step: 60, value: end, phase: 'rl' },
      ],
      svg: '/tmp/home/checkpoints/job/learning-curves.svg',
    },
  };
}

const personalSummary = (end: number) => ({
  status: 'completed',
  steps: 9,
  metric: 'preference_score',
  heldout: { start: 0.059, afterWarmup: null, end },
  elapsedSeconds: 14,
  curves: {
    heldout: [
      { step: 0, value: 0.059, phase: 'start' },
      { step: 3, value: 0.189, phase: 'rl' },
      { step: 9, value: end, phase: 'rl' },
    ],
    svg: null,
  },
});

const MACHINE: Machine = { cpus: 2, cpuModel: 'Test CPU', node: 'v20.19.0' };
const make = {
  label: 'task file',
  command: 'node examples/toolcall/make-verb-tasks.mjs',
  ran: false,
  seconds: null,
};

const meta = (track: Track, seed: number, extra: Partial<RunMeta> = {}): RunMeta => ({
  track,
  manifest: track === 'personal' ? 'examples/personal/name.yaml' : `examples/${track}/rl.yaml`,
  seed,
  set: [`spec.train.seed=${seed}`],
  measuredAt: '2026-05-01T10:00:00.000Z',
  ...extra,
});

const completed = (m: RunMeta, summary: object): RunRecord =>
  runRecord(m, { jobLine: parseJobLine(JOB_LINE), summary: parseDriverSummary(summary) });

function toolcallRuns(): RunRecord[] {
  return [
    completed(meta('toolcall', 0, { make }), toolcallSummary()),
    completed(
      meta('toolcall', 1, { make }),
      toolcallSummary({ warm: 0.1, mid: 0.5, end: 0.7, seconds: 200 }),
    ),
    completed(
      meta('toolcall', 2, { make }),
      toolcallSummary({ warm: 0.2, mid: 0.4, end: 0.9, seconds: 230 }),
    ),
  ];
}

const about = (track: Track, measuredAt: string) => ({
  manifest: meta(track, 0).manifest,
  measuredAt,
  commit: 'abc123',
  machine: MACHINE,
});

describe('what a run printed', () => {
  it('reads the job submit --json line', () => {
    const line = parseJobLine(`clawray: something\n${JOB_LINE}\n`);
    expect(line).toEqual({
      submissionId: 'job-9e721a153687d6e2',
      status: 'SUCCEEDED',
      message: 'exit code 0',
      error: null,
    });
  });

  it('refuses a line without a field it reads, naming it', () => {
    const { status: _, ...rest } = JSON.parse(JOB_LINE) as Record<string, unknown>;
    expect(() => parseJobLine(JSON.stringify(rest))).toThrow(
      'the job submit --json line: missing field status',
    );
    expect(() => parseJobLine('clawray: manifest refused\n')).toThrow(
      'job submit --json printed no JSON line (its last line: clawray: manifest refused)',
    );
  });

  it("reads the driver's summary, curves included, and names a missing or wrong field", () => {
    const s: DriverSummary = parseDriverSummary(toolcallSummary());
    expect(s.curves.heldout.map((e) => e.phase)).toEqual(['start', 'warmup', 'rl', 'rl']);
    const { curves: _, ...noCurves } = toolcallSummary();
    expect(() => parseDriverSummary(noCurves)).toThrow('the job summary: missing field curves');
    const noPhase = toolcallSummary();
    delete (noPhase.curves.heldout[2] as { phase?: string }).phase;
    expect(() => parseDriverSummary(noPhase)).toThrow(
      'the job summary: missing field curves.heldout.2.phase',
    );
    const noAfterWarmup = toolcallSummary() as { heldout: Record<string, unknown> };
    delete noAfterWarmup.heldout.afterWarmup;
    expect(() => parseDriverSummary(noAfterWarmup)).toThrow(
      'the job summary: missing field heldout.afterWarmup',
    );
    const wrongPhase = toolcallSummary();
    wrongPhase.curves.heldout[1].phase = 'sft';
    expect(() => parseDriverSummary(wrongPhase)).toThrow(/the job summary: curves\.heldout\.1\.phase: /);
  });

  it('makes a run record: completed, failed with its own error, or failed before printing', () => {
    const ok = toolcallRuns()[0];
    expect(ok).toMatchObject({
      status: 'completed',
      error: null,
      submissionId: 'job-9e721a153687d6e2',
      metric: 'heldout_success',
      steps: 60,
      start: 0,
      afterWarmup: 0.045,
      end: 0.806,
      elapsedSeconds: 215.68,
      baseSeed: null,
    });
    expect(ok.evals[2]).toEqual({ step: 20, interactions: null, value: 0.448, phase: 'rl' });

    const personal = completed(
      meta('personal', 1, { baseSeed: 2, interactionsPerStep: 4 }),
      personalSummary(0.6),
    );
    expect(personal.evals.map((e) => e.interactions)).toEqual([0, 12, 36]);
    expect(personal.baseSeed).toBe(2);

    const failedLine = parseJobLine(
      JSON.stringify({ ...JSON.parse(JOB_LINE), status: 'FAILED', message: 'exit code 1', error: null }),
    );
    const failed = runRecord(meta('toolcall', 0), {
      jobLine: failedLine,
      summary: parseDriverSummary({ ...toolcallSummary(), status: 'failed', error: 'EnvPool.ready threw' }),
    });
    expect(failed).toMatchObject({ status: 'failed', error: 'EnvPool.ready threw', end: null, evals: [] });
    expect(runRecord(meta('toolcall', 0), { jobLine: failedLine, summary: undefined }).error).toBe(
      'exit code 1',
    );
    // A driver that failed before its summary said why in its log's last line.
    const noModel = 'the job failed: spec.model.path: ./base holds no model';
    expect(
      runRecord(meta('toolcall', 0), { jobLine: failedLine, summary: undefined, logTail: noModel }).error,
    ).toBe(noModel);
    expect(runRecord(meta('toolcall', 0), { error: 'timed out after 20 min' })).toMatchObject({
      status: 'failed',
      error: 'timed out after 20 min',
      submissionId: null,
    });
  });
});

describe("a track's aggregate", () => {
  it('is the mean, min and max over seeds', () => {
    expect(stats([0.25, null, 0.5, 0.75])).toEqual({ mean: 0.5, min: 0.25, max: 0.75, n: 3 });
    expect(stats([null])).toBeNull();
  });

  it('aggregates start, warm start, every RL evaluation by step, end, gain and wall; failed runs counted apart', () => {
    const runs = [...toolcallRuns(), runRecord(meta('toolcall', 3, { make }), { error: 'timed out' })];
    const t = summarizeTrack(runs, about('toolcall', '2026-05-01T10:00:00.000Z'));
    expect(t).toMatchObject({
      metric: 'heldout_success',
      runs: 4,
      failed: 1,
      seeds: { job: [0, 1, 2, 3], base: null },
    });
    expect(t.start).toEqual({ mean: 0, min: 0, max: 0, n: 3 });
    expect(t.afterWarmup?.min).toBe(0.045);
    expect(t.afterWarmup?.max).toBe(0.2);
    expect(t.end?.mean).toBeCloseTo(0.802, 10);
    expect(t.gain?.min).toBeCloseTo(0.6, 10);
    expect(t.gain?.max).toBeCloseTo(0.761, 10);
    expect(t.evals.map((e) => [e.step, e.n, e.min, e.max])).toEqual([
      [20, 3, 0.4, 0.5],
      [60, 3, 0.7, 0.9],
    ]);
    expect(t.wall).toMatchObject({ min: 200, max: 230, n: 3 });
    // One make command for every seed: counted once, and only when it has a time.
    expect(t.make).toBeNull();
  });

  it('personal: gain from the start (no warm start), one base build per base seed', () => {
    const runs = [0, 1].flatMap((b) =>
      [0, 1].map((s) =>
        completed(
          meta('personal', s, {
            baseSeed: b,
            interactionsPerStep: 4,
            make: { label: 'base build', command: `make-base --seed ${b}`, ran: true, seconds: 300 + b * 60 },
          }),
          personalSummary(0.6 + b * 0.2),
        ),
      ),
    );
    const t = summarizeTrack(runs, about('personal', '2026-05-01T10:00:00.000Z'));
    expect(t.seeds).toEqual({ job: [0, 1], base: [0, 1] });
    expect(t.afterWarmup).toBeNull();
    expect(t.gain?.min).toBeCloseTo(0.541, 10);
    expect(t.make).toEqual({ label: 'base build', mean: 330, min: 300, max: 360, n: 2 });
    expect(t.evals.map((e) => e.interactions)).toEqual([12, 36]);
  });
});

describe('merging a measurement into the results file', () => {
  const first = mergeResults(null, {
    measuredAt: '2026-05-01T10:00:00.000Z',
    machine: MACHINE,
    commit: 'abc123',
    runs: [
      ...toolcallRuns(),
      completed(meta('personal', 0, { baseSeed: 0, interactionsPerStep: 4 }), personalSummary(0.6)),
    ],
    tracks: {
      personal: summarizeTrack(
        [completed(meta('personal', 0, { baseSeed: 0, interactionsPerStep: 4 }), personalSummary(0.6))],
        about('personal', '2026-05-01T10:00:00.000Z'),
      ),
      toolcall: summarizeTrack(toolcallRuns(), about('toolcall', '2026-05-01T09:00:00.000Z')),
    },
  });

  it('lists tracks and runs in the tracks order, and validates', () => {
    expect(Object.keys(first.tracks)).toEqual(['toolcall', 'personal']);
    expect(first.runs.map((r) => r.track)).toEqual(['toolcall', 'toolcall', 'toolcall', 'personal']);
    expect(parseResults(JSON.parse(JSON.stringify(first)))).toEqual(first);
    expect(staleTracks(first)).toEqual([]);
  });

  it('--only personal replaces the personal track and keeps the others with their own date', () => {
    const again = completed(
      meta('personal', 0, { baseSeed: 0, interactionsPerStep: 4 }),
      personalSummary(0.9),
    );
    const merged = mergeResults(first, {
      measuredAt: '2026-06-01T10:00:00.000Z',
      machine: MACHINE,
      commit: 'def456',
      runs: [again],
      tracks: {
        personal: summarizeTrack([again], {
          ...about('personal', '2026-06-01T10:00:00.000Z'),
          commit: 'def456',
        }),
      },
    });
    expect(merged.commit).toBe('def456');
    expect(merged.tracks.toolcall).toEqual(first.tracks.toolcall);
    expect(merged.tracks.toolcall?.measuredAt).toBe('2026-05-01T09:00:00.000Z');
    expect(merged.tracks.personal?.end?.mean).toBe(0.9);
    expect(merged.runs.filter((r) => r.track === 'personal')).toEqual([again]);
    expect(merged.runs.filter((r) => r.track === 'toolcall')).toEqual(first.runs.slice(0, 3));
    expect(staleTracks(merged)).toEqual([]);
  });

  it('an aggregate edited without its runs is stale; another version is refused', () => {
    const edited = structuredClone(first);
    edited.tracks.toolcall!.end!.mean = 0.95;
    expect(staleTracks(edited)).toEqual(['toolcall']);
    expect(() => parseResults({ ...first, version: 2 })).toThrow(
      'results version 2: this script reads and writes version 1',
    );
    const { machine: _, ...noMachine } = first;
    expect(() => parseResults(noMachine)).toThrow('results: missing field machine');
  });

  it('renders one row per track: mean (min–max), the end in bold, interactions for personal', () => {
    const table = renderResultsTable(first);
    const lines = table.split('\n');
    expect(lines[0]).toBe(
      "| example | metric | seeds | start | after warm start | evaluations during RL (step: mean (min–max)) | end | RL's gain | wall (job; make step) | measured |",
    );
    expect(lines[2]).toBe(
      '| `toolcall/rl.yaml` | held-out success | 3 | 0.000 | 0.115 (0.045–0.200) | 20: 0.449 (0.400–0.500) | **0.802** (0.700–0.900) at 60 | +0.687 (+0.600–+0.761) | 215 s (200–230) | 2026-05-01 |',
    );
    expect(lines[3]).toBe(
      '| `personal/name.yaml` | preference score | 1 base × 1 | 0.059 | — | 12 interactions: 0.189 | **0.600** at 36 interactions | +0.541 | 14 s | 2026-05-01 |',
    );
    expect(lines.at(-1)).toContain('Measured on 2 × Test CPU, Node v20.19.0, commit abc123.');
    expect(renderResultsTable(null)).toBe(NO_RESULTS);
  });
});

describe('the README markers', () => {
  const readme = `# x\n\nprose\n\n${RESULTS_BEGIN}\nold table\n${RESULTS_END}\n\nmore prose\n`;

  it('replaces only what is between them, and reads it back', () => {
    const after = replaceResultsTable(readme, '| a |\n|---|');
    expect(after).toBe(`# x\n\nprose\n\n${RESULTS_BEGIN}\n\n| a |\n|---|\n\n${RESULTS_END}\n\nmore prose\n`);
    expect(readResultsTable(after)).toBe('| a |\n|---|');
    expect(replaceResultsTable(after, '| a |\n|---|')).toBe(after);
  });

  it('refuses a README without one pair of markers in order', () => {
    const why = `the README needs one ${RESULTS_BEGIN} line followed by one ${RESULTS_END} line`;
    expect(() => replaceResultsTable('# x\n', 't')).toThrow(why);
    expect(() => replaceResultsTable(`${RESULTS_END}\n${RESULTS_BEGIN}\n`, 't')).toThrow(why);
    expect(() => readResultsTable(`${readme}${RESULTS_BEGIN}\n`)).toThrow(why);
  });
});

describe('node examples/measure.mjs', () => {
  const measure = (...args: string[]) =>
    spawnSync(process.execPath, [join(root, 'examples', 'measure.mjs'), ...args], {
      cwd: root,
      encoding: 'utf8',
    });

  it.each([
    [
      ['--only', 'toolcall,nope'],
      "measure: unknown track 'nope' in --only: the tracks are toolcall, personal, terminal, gui, swe",
    ],
    [['--seeds', '0'], "measure: --seeds must be a whole number from 1 to 50, got '0'"],
    [['--seeds', '2.5'], "measure: --seeds must be a whole number from 1 to 50, got '2.5'"],
    [
      ['--base-dir', '/tmp/b', '--seeds', '2'],
      'measure: --base-dir /tmp/b names one base, and --seeds 2 needs 2',
    ],
  ])('refuses %j in one line, exit 2', (args, message) => {
    const r = measure(...args);
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(message);
  });

  it.skipIf(!existsSync(join(root, 'dist', 'cli', 'main.js')))(
    '--dry-run prints the make steps and the job commands, seed 0 as written',
    () => {
      const r = measure('--dry-run', '--seeds', '2', '--only', 'toolcall,personal', '--no-readme');
      expect(r.status).toBe(0);
      const lines = r.stdout.trim().split('\n');
      expect(lines).toContain(
        'CLAWRAY_HOME=$(mktemp -d) node dist/cli/main.js job submit examples/toolcall/rl.yaml --json --set spec.train.seed=0 --set spec.env.seed=0 --set spec.model.init.seed=0',
      );
      expect(lines).toContain(
        'CLAWRAY_HOME=$(mktemp -d) node dist/cli/main.js job submit examples/personal/name.yaml --json --set spec.model.path=./base-seed1 --set spec.train.seed=1 --set spec.user.seed=1',
      );
      expect(lines.filter((l) => l.includes('job submit'))).toHaveLength(2 + 4);
      expect(lines.some((l) => l.includes('verb-tasks.jsonl exists, not rerun'))).toBe(true);
    },
  );
});
