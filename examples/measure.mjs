#!/usr/bin/env node
/**
 * Runs the examples as written and writes what they reach: examples/results.json (results.mjs)
 * and the README's results table between its markers (results-table.mjs), so no figure of the
 * README is remembered. test/readme-results.test.ts fails when the two disagree.
 *
 * Usage (after `npm run build`):
 *   node examples/measure.mjs [--seeds N] [--only toolcall,personal,terminal,gui,swe]
 *     [--out examples/results.json] [--no-readme] [--timeout-min M] [--dry-run] [--keep]
 *     [--base-dir DIR]
 *
 * Each track's main manifest, after its make step (the manifest header's; a step whose output
 * exists is not rerun), once per job seed 0..N-1: `node dist/cli/main.js job submit MANIFEST
 * --json --set …` in a fresh CLAWRAY_HOME (an embedded cluster of its own, so runs never share a
 * head, a model cache or checkpoints; CLAWRAY_ADDRESS is dropped for the same reason). A seed moves
 * every seed field the manifest has to its written value + seed, so seed 0 is the manifest as
 * written. personal runs base seeds 0..N-1 (`make-base.mjs --seed B`, into
 * examples/personal/base-seedB, rebuilt only when that directory was not built by this
 * make-base.mjs with these flags) × job seeds 0..N-1. --base-dir DIR uses prebuilt bases instead
 * (`{seed}` in DIR stands for the base seed). Figures come from the driver's own summary.
 *
 * --only replaces those tracks in the JSON and keeps the others' last measurement. --out elsewhere
 * leaves the README alone (its test compares it with examples/results.json). --dry-run prints the
 * commands and runs nothing. A run's job home is deleted once its figures are read (kept with
 * --keep, and always when the run failed).
 *
 * Exit: 0; 1 when a run failed (recorded in the JSON with its error); 2 for a wrong flag.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  mergeResults,
  parseDriverSummary,
  parseJobLine,
  parseResults,
  ResultsError,
  runRecord,
  summarizeTrack,
  TRACKS,
} from './results.mjs';
import { readResultsTable, renderResultsTable, replaceResultsTable } from './results-table.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CLI = 'dist/cli/main.js';
const DEFAULT_OUT = 'examples/results.json';
const README = 'README.md';
const MAKE_BASE = 'examples/personal/make-base.mjs';
/** Written into a base this script built: the make-base command and the script's hash. */
const BASE_STAMP = 'measure-base.json';
/** A make step's limit (a personal base takes 6–17 min on 2 cores). */
const MAKE_TIMEOUT_MIN = 60;
/** After SIGTERM, a run's process group gets this long before SIGKILL. */
const KILL_GRACE_MS = 30_000;
/** Without a terminal, a line this often says the current run is still going. */
const HEARTBEAT_MS = 60_000;
const BAR_WIDTH = 20;
const MAX_SEEDS = 50;

/**
 * Each track's main manifest, its make step (from the manifest's header comment) and a run's
 * default timeout (about 3× the slowest wall time the README has seen for it).
 */
const SETUP = {
  toolcall: {
    manifest: 'examples/toolcall/rl.yaml',
    make: {
      label: 'task file',
      script: 'examples/toolcall/make-verb-tasks.mjs',
      output: 'examples/toolcall/verb-tasks.jsonl',
    },
    timeoutMin: 20,
  },
  // Its make step is a base per base seed (planBase).
  personal: { manifest: 'examples/personal/name.yaml', make: null, timeoutMin: 10 },
  terminal: {
    manifest: 'examples/terminal/rl.yaml',
    make: {
      label: 'task suite',
      script: 'examples/terminal/make-tasks.mjs',
      output: 'examples/terminal/tasks',
    },
    timeoutMin: 45,
  },
  gui: {
    manifest: 'examples/gui/rl.yaml',
    make: { label: 'task suite', script: 'examples/gui/make-tasks.mjs', output: 'examples/gui/tasks' },
    timeoutMin: 90,
  },
  swe: {
    manifest: 'examples/swe/rl.yaml',
    make: { label: 'task set', script: 'examples/swe/make-tasks.mjs', output: 'examples/swe/tasks.jsonl' },
    timeoutMin: 90,
  },
};

/**
 * The seed fields a job seed moves, where the manifest has the section: the trainer's and the
 * rollouts' sampling, the task order, the simulated user's requests and wording, and the random
 * model a job without a model starts from (the env tracks' counterpart of personal's base seed).
 */
const SEED_FIELDS = [
  ['spec.train.seed', (spec) => spec.train.seed],
  ['spec.env.seed', (spec) => spec.env?.seed],
  ['spec.user.seed', (spec) => spec.user?.seed],
  ['spec.model.init.seed', (spec) => spec.model.init?.seed],
];

/** A user's mistake: one line, exit 2. */
class UsageError extends Error {}

/** A path as the user reads it: from the repository root when inside it, else absolute. */
function rel(path) {
  const r = relative(ROOT, resolve(ROOT, path));
  return r.startsWith('..') ? resolve(ROOT, path) : r || '.';
}
const shellWord = (w) => (/^[A-Za-z0-9_\-.,/:=@%+{}]+$/.test(w) ? w : `'${w.replaceAll("'", `'\\''`)}'`);
const commandLine = (argv) => argv.map(shellWord).join(' ');

function options(argv) {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        seeds: { type: 'string', default: '1' },
        only: { type: 'string' },
        out: { type: 'string', default: DEFAULT_OUT },
        'no-readme': { type: 'boolean', default: false },
        'timeout-min': { type: 'string' },
        'dry-run': { type: 'boolean', default: false },
        keep: { type: 'boolean', default: false },
        'base-dir': { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }));
  } catch (err) {
    throw new UsageError(`${err.message.split('. ')[0]} (see node examples/measure.mjs --help)`);
  }
  const whole = (name, raw, max) => {
    const n = Number(raw);
    if (!/^\d+$/.test(raw.trim()) || n < 1 || n > max) {
      throw new UsageError(`--${name} must be a whole number from 1 to ${max}, got '${raw}'`);
    }
    return n;
  };
  const only = values.only === undefined ? [...TRACKS] : values.only.split(',').map((t) => t.trim());
  for (const t of only) {
    if (!TRACKS.includes(t)) {
      throw new UsageError(`unknown track '${t}' in --only: the tracks are ${TRACKS.join(', ')}`);
    }
  }
  const seeds = whole('seeds', values.seeds, MAX_SEEDS);
  const baseDir = values['base-dir'];
  if (baseDir !== undefined && seeds > 1 && !baseDir.includes('{seed}')) {
    throw new UsageError(
      `--base-dir ${baseDir} names one base, and --seeds ${seeds} needs ${seeds}: put {seed} in it (e.g. /tmp/bases/s{seed})`,
    );
  }
  const out = resolve(values.out === DEFAULT_OUT ? ROOT : process.cwd(), values.out);
  return {
    help: values.help,
    seeds,
    tracks: TRACKS.filter((t) => only.includes(t)),
    out,
    readme: !values['no-readme'] && out === resolve(ROOT, DEFAULT_OUT),
    readmeAsked: !values['no-readme'],
    timeoutMin:
      values['timeout-min'] === undefined ? undefined : whole('timeout-min', values['timeout-min'], 24 * 60),
    dryRun: values['dry-run'],
    keep: values.keep,
    baseDir,
  };
}

const HELP = `node examples/measure.mjs [--seeds N] [--only ${TRACKS.join(',')}] [--out ${DEFAULT_OUT}]
  [--no-readme] [--timeout-min M] [--dry-run] [--keep] [--base-dir DIR]
Runs the examples as written, N job seeds each (personal: N base seeds × N job seeds), and writes
their held-out figures to the JSON file and the README's results table. See the file's header.`;

// ---------------------------------------------------------------- planning

async function loadManifestFromDist() {
  const file = join(ROOT, 'dist/jobs/manifest/load.js');
  if (!existsSync(join(ROOT, CLI)) || !existsSync(file)) {
    throw new UsageError(`${CLI} is missing: run npm run build first`);
  }
  return (await import(file)).loadManifest;
}

const seedsList = (n) => Array.from({ length: n }, (_, i) => i);

/** personal-base.json of a base directory, or null. */
function baseRecipe(dir) {
  try {
    return JSON.parse(readFileSync(join(dir, 'personal-base.json'), 'utf8'));
  } catch {
    return null;
  }
}

/** Where base seed B comes from: a prebuilt --base-dir, or make-base.mjs into base-seedB. */
function planBase(o, baseSeed, makeBaseSha) {
  if (o.baseDir !== undefined) {
    const dir = resolve(o.baseDir.replaceAll('{seed}', String(baseSeed)));
    const recipe = baseRecipe(dir);
    if (!recipe) throw new UsageError(`--base-dir: ${dir} holds no personal-base.json (no base built there)`);
    if (recipe.seed !== baseSeed) {
      throw new UsageError(
        `--base-dir: ${dir} was built with --seed ${recipe.seed}, base seed ${baseSeed} needs --seed ${baseSeed}`,
      );
    }
    return {
      modelPath: dir,
      make: {
        label: 'base build',
        command: `prebuilt ${dir} (--base-dir)`,
        ran: false,
        seconds: recipe.seconds ?? null,
      },
      build: null,
      note: `base seed ${baseSeed}: ${dir} (--base-dir), not rebuilt`,
    };
  }
  const out = `examples/personal/base-seed${baseSeed}`;
  const argv = [MAKE_BASE, '--seed', String(baseSeed), '--out', out];
  const command = `node ${commandLine(argv)}`;
  const dir = join(ROOT, out);
  const recipe = baseRecipe(dir);
  let stamp = null;
  try {
    stamp = JSON.parse(readFileSync(join(dir, BASE_STAMP), 'utf8'));
  } catch {
    // None: not built by this script (or not built at all).
  }
  const reuse =
    recipe?.seed === baseSeed && stamp?.command === command && stamp?.makeBaseSha256 === makeBaseSha;
  const why = !existsSync(dir)
    ? 'not built yet'
    : !recipe
      ? 'no personal-base.json there'
      : !stamp
        ? `has no ${BASE_STAMP} (not built by examples/measure.mjs)`
        : stamp.makeBaseSha256 !== makeBaseSha
          ? `${MAKE_BASE} changed since it was built`
          : 'built with other flags';
  return {
    modelPath: `./base-seed${baseSeed}`,
    make: { label: 'base build', command, ran: !reuse, seconds: reuse ? (recipe.seconds ?? null) : null },
    build: reuse
      ? null
      : {
          argv: existsSync(join(dir, 'config.json')) ? [...argv, '--force'] : argv,
          command,
          stamp: { file: join(dir, BASE_STAMP), value: { command, makeBaseSha256: makeBaseSha } },
        },
    note: reuse
      ? `base seed ${baseSeed}: ${out} was built by this ${MAKE_BASE} with --seed ${baseSeed}, not rebuilt (delete it to rebuild)`
      : `base seed ${baseSeed}: ${out} ${why}: ${command}`,
  };
}

/** The runs of a track: seeds, --set lines, make step. */
async function planTrack(track, o, loadManifest) {
  const setup = SETUP[track];
  let spec;
  try {
    spec = (await loadManifest(join(ROOT, setup.manifest))).spec;
  } catch (err) {
    throw new UsageError(`${setup.manifest} as written does not load: ${err.message}`);
  }
  const fields = SEED_FIELDS.filter(([, get]) => typeof get(spec) === 'number').map(([f, get]) => [
    f,
    get(spec),
  ]);
  const seedSet = (seed) => fields.map(([f, written]) => `${f}=${written + seed}`);
  const timeoutMin = o.timeoutMin ?? setup.timeoutMin;
  const plan = {
    track,
    manifest: setup.manifest,
    fields: fields.map(([f]) => f),
    timeoutMin,
    makes: [],
    runs: [],
  };
  if (track === 'personal') {
    const sha = createHash('sha256')
      .update(readFileSync(join(ROOT, MAKE_BASE)))
      .digest('hex');
    for (const baseSeed of seedsList(o.seeds)) {
      const base = planBase(o, baseSeed, sha);
      plan.makes.push(base);
      for (const seed of seedsList(o.seeds)) {
        plan.runs.push({
          seed,
          baseSeed,
          base,
          set: [`spec.model.path=${base.modelPath}`, ...seedSet(seed)],
          interactionsPerStep: spec.rollout.batchSize,
        });
      }
    }
    return plan;
  }
  const m = setup.make;
  const output = join(ROOT, m.output);
  const made = existsSync(output) && (!statSync(output).isDirectory() || readdirSync(output).length > 0);
  const command = `node ${m.script}`;
  const make = {
    make: { label: m.label, command, ran: !made, seconds: null },
    build: made ? null : { argv: [m.script], command },
    note: made ? `${m.output} exists, not rerun (${command})` : `${m.output} is missing: ${command}`,
  };
  plan.makes.push(make);
  for (const seed of seedsList(o.seeds))
    plan.runs.push({ seed, baseSeed: null, base: make, set: seedSet(seed), interactionsPerStep: null });
  return plan;
}

const submitArgv = (plan, run) => [
  CLI,
  'job',
  'submit',
  plan.manifest,
  '--json',
  ...run.set.flatMap((s) => ['--set', s]),
];

function printDryRun(plans, o) {
  const jobs = plans.reduce((n, p) => n + p.runs.length, 0);
  const lines = [
    `# ${jobs} job(s), ${o.seeds} seed(s); results to ${rel(o.out)}${o.readme ? ` and ${README}` : ''}; nothing runs (--dry-run)`,
  ];
  for (const p of plans) {
    const seeds =
      p.track === 'personal'
        ? `base seeds 0..${o.seeds - 1} × job seeds 0..${o.seeds - 1}`
        : `seeds 0..${o.seeds - 1}`;
    lines.push(
      `# ${p.track}: ${p.manifest}, ${seeds} (seed fields: ${p.fields.join(', ')}), timeout ${p.timeoutMin} min a run`,
    );
    for (const make of p.makes) {
      lines.push(`#   make: ${make.note}`);
      if (make.build) lines.push(`node ${commandLine(make.build.argv)}`);
    }
    for (const run of p.runs) lines.push(`CLAWRAY_HOME=$(mktemp -d) node ${commandLine(submitArgv(p, run))}`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

// ---------------------------------------------------------------- running

const clock = (seconds) => {
  const s = Math.round(seconds);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
};

/** Progress on stderr: a redrawn bar on a terminal, plain lines (and a heartbeat) otherwise. */
class Progress {
  constructor(total, out = process.stderr) {
    this.total = total;
    this.done = 0;
    this.out = out;
    this.tty = Boolean(out.isTTY);
    this.startedMs = Date.now();
    this.current = null;
    this.timer = null;
  }

  say(line) {
    this.clear();
    this.out.write(`measure: ${line}\n`);
    this.draw();
  }

  /** A task starts: a job counts toward the bar, a make step does not. */
  begin(label, isJob) {
    this.current = {
      label: isJob ? `[${this.done + 1}/${this.total}] ${label}` : label,
      sinceMs: Date.now(),
    };
    this.say(`${this.current.label}: started`);
    this.timer = setInterval(
      () =>
        this.tty
          ? this.draw()
          : this.say(`${this.current.label}: ${clock((Date.now() - this.current.sinceMs) / 1000)}`),
      this.tty ? 1000 : HEARTBEAT_MS,
    );
  }

  end(line, isJob) {
    clearInterval(this.timer);
    this.clear();
    const label = this.current.label;
    this.current = null;
    if (isJob) this.done++;
    this.say(`${label}: ${line}`);
  }

  clear() {
    if (this.tty && this.current) this.out.write('\r\x1b[K');
  }

  draw() {
    if (!this.tty || !this.current) return;
    const filled = Math.round((BAR_WIDTH * this.done) / Math.max(1, this.total));
    const bar = `${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}`;
    const now = Date.now();
    this.out.write(
      `\r\x1b[K[${bar}] ${this.current.label} ${clock((now - this.current.sinceMs) / 1000)} (all: ${clock((now - this.startedMs) / 1000)})`,
    );
  }
}

/** The children now running, ended with the script (each is its own process group). */
const running = new Set();

function killGroup(child, signal) {
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

/**
 * Runs `node ARGV` in the repository, its stderr into `stderrFile`, killed (with its process
 * group: an embedded cluster's workers too) after `timeoutMs`.
 */
function runNode(argv, { env, timeoutMs, stderrFile }) {
  return new Promise((resolvePromise) => {
    const fd = openSync(stderrFile, 'w');
    const startedMs = Date.now();
    const child = spawn(process.execPath, argv, {
      cwd: ROOT,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', fd],
    });
    closeSync(fd);
    running.add(child);
    let stdout = '';
    let timedOut = false;
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child, 'SIGTERM');
      setTimeout(() => killGroup(child, 'SIGKILL'), KILL_GRACE_MS).unref();
    }, timeoutMs);
    const finish = (code, error) => {
      clearTimeout(timer);
      running.delete(child);
      resolvePromise({ code, stdout, timedOut, error, seconds: (Date.now() - startedMs) / 1000 });
    };
    child.on('error', (err) => finish(null, err.message));
    child.on('close', (code) => finish(code, undefined));
  });
}

/** The last line of a file that says something (a child's own account of why it stopped). */
function lastLine(file) {
  try {
    const lines = readFileSync(file, 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
    return lines.at(-1) ?? '';
  } catch {
    return '';
  }
}

function childEnv(home) {
  const env = { ...process.env, CLAWRAY_HOME: home };
  delete env.CLAWRAY_ADDRESS;
  return env;
}

/**
 * Runs a plan's make step once (the runs that share it ask again): its seconds go into its
 * record; `failed` says why it did not succeed.
 */
async function ensureMade(make, progress, track, keep) {
  if (make.attempted) return;
  make.attempted = true;
  progress.say(`${track} ${make.note}`);
  if (!make.build) return;
  const r = await runMake(make.build, progress, `${track} make`, keep);
  make.failed = r.failed;
  make.make.seconds = r.failed ? null : r.seconds;
  if (!r.failed && make.build.stamp) {
    writeFileSync(make.build.stamp.file, `${JSON.stringify(make.build.stamp.value, null, 2)}\n`);
  }
}

/** Runs a make step's command: `failed` is null when it succeeded, else why not. */
async function runMake(build, progress, label, keep) {
  const dir = mkdtempSync(join(tmpdir(), 'clawray-measure-make-'));
  const stderrFile = join(dir, 'make.log');
  progress.begin(`${label}: ${build.command}`, false);
  const r = await runNode(build.argv, { env: process.env, timeoutMs: MAKE_TIMEOUT_MIN * 60_000, stderrFile });
  const failed = r.timedOut
    ? `timed out after ${MAKE_TIMEOUT_MIN} min`
    : r.code !== 0
      ? (r.error ?? (lastLine(stderrFile) || `exit code ${r.code}`))
      : null;
  progress.end(
    failed ? `failed: ${failed} (its output: ${stderrFile})` : `done in ${clock(r.seconds)}`,
    false,
  );
  if (!failed && !keep) rmSync(dir, { recursive: true, force: true });
  return { failed, seconds: r.seconds };
}

/**
 * The driver's summary object from the job's log (its last `summary {JSON}` line), or undefined,
 * and the log's last line without its time stamp (a driver that failed before its summary says
 * why there). The log is where `job submit` keeps it in the run's home (the --json line names it
 * only beside a summary).
 */
async function readJobLog(submissionId, home) {
  const { jobLogFile, parseSummaryLine } = await import(join(ROOT, 'dist/cli/rljob-submit.js'));
  const logFile = jobLogFile(submissionId, home);
  let summary;
  const lines = readFileSync(logFile, 'utf8').split('\n');
  for (const line of lines) summary = parseSummaryLine(line) ?? summary;
  const tail = lines
    .map((l) => l.trim())
    .filter(Boolean)
    .at(-1);
  return { summary, tail: tail?.replace(/^\[?\d[\d:.TZ+-]*\]? /, '') };
}

/**
 * What a `job submit --json` process gave, as runRecord reads it: the JSON line and the driver's
 * summary, strictly parsed, or why there are none.
 */
async function jobOutcome(r, plan, home, stderrFile) {
  if (r.timedOut) return { error: `timed out after ${plan.timeoutMin} min (--timeout-min)` };
  if (r.error) return { error: r.error };
  let jobLine;
  try {
    jobLine = parseJobLine(r.stdout);
  } catch (err) {
    // `job submit` refused before it ran anything (a manifest error): its own line says why.
    return { error: lastLine(stderrFile) || err.message };
  }
  const ok = jobLine.status === 'SUCCEEDED';
  const submissionId = jobLine.submissionId;
  let log = { summary: undefined, tail: undefined };
  try {
    log = await readJobLog(submissionId, home);
  } catch (err) {
    if (ok) return { error: `the job's log: ${err.message}`, submissionId };
  }
  if (log.summary === undefined) {
    return ok
      ? { error: `the job's log has no summary line (${home})`, submissionId }
      : { jobLine, summary: undefined, logTail: log.tail };
  }
  try {
    return { jobLine, summary: parseDriverSummary(log.summary), logTail: log.tail };
  } catch (err) {
    // A failed job's summary may stop short; its error is what matters.
    return ok ? { error: err.message, submissionId } : { jobLine, summary: undefined, logTail: log.tail };
  }
}

/** What one job run gave: the outcome runRecord reads. */
async function runJob(plan, run, o, progress) {
  const label = `${plan.track} ${run.baseSeed === null ? '' : `base ${run.baseSeed} `}seed ${run.seed}`;
  const home = mkdtempSync(join(tmpdir(), `clawray-measure-${plan.track}-`));
  const stderrFile = join(home, 'submit.log');
  progress.begin(label, true);
  const r = await runNode(submitArgv(plan, run), {
    env: childEnv(home),
    timeoutMs: plan.timeoutMin * 60_000,
    stderrFile,
  });
  const outcome = await jobOutcome(r, plan, home, stderrFile);
  const record = runRecord({ ...runMeta(plan, run), interactionsPerStep: run.interactionsPerStep }, outcome);
  if (record.status === 'completed') {
    const f = (x) => (x === null ? '—' : x.toFixed(3));
    const curve = [
      record.start,
      ...(record.afterWarmup === null ? [] : [record.afterWarmup]),
      record.end,
    ].map(f);
    progress.end(`completed in ${clock(r.seconds)}, held-out ${curve.join(' → ')}`, true);
    keepCurves(outcome.summary.curves.svg, plan.track, run, o.out);
    if (!o.keep) rmSync(home, { recursive: true, force: true });
  } else {
    progress.end(`failed: ${record.error} (kept: ${home})`, true);
  }
  return record;
}

/** What a run's record says of it besides its figures. */
function runMeta(plan, run) {
  return {
    track: plan.track,
    manifest: plan.manifest,
    seed: run.seed,
    baseSeed: run.baseSeed,
    set: run.set,
    make: run.base.make,
    measuredAt: new Date().toISOString(),
  };
}

/**
 * The run's learning-curves.svg, kept beside the results file as curves/TRACK[-baseB]-seedS.svg
 * (examples/curves/ for examples/results.json, whose seed-0 curves the README shows; a results
 * file elsewhere keeps its curves elsewhere too) before the run's home is deleted.
 */
function keepCurves(svg, track, run, out) {
  if (!svg || !existsSync(svg)) return;
  const dir = join(dirname(resolve(out)), 'curves');
  mkdirSync(dir, { recursive: true });
  const base = run.baseSeed === null ? '' : `-base${run.baseSeed}`;
  copyFileSync(svg, join(dir, `${track}${base}-seed${run.seed}.svg`));
}

// ---------------------------------------------------------------- results

/** HEAD, with '-dirty' when tracked files differ from it (this script's own outputs aside). */
function gitCommit() {
  const git = (args) => {
    try {
      return execFileSync('git', args, {
        cwd: ROOT,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim();
    } catch {
      return null;
    }
  };
  const head = git(['rev-parse', 'HEAD']);
  if (!head) return 'unknown';
  const dirty = git([
    'status',
    '--porcelain',
    '--untracked-files=no',
    '--',
    '.',
    `:!${DEFAULT_OUT}`,
    `:!${README}`,
  ]);
  return dirty ? `${head}-dirty` : head;
}

function machine() {
  const list = cpus();
  return { cpus: list.length, cpuModel: list[0]?.model.trim() || 'unknown', node: process.version };
}

/** The results file as it is, or null; a file this script cannot read is refused unless every track is measured again. */
function previousResults(o) {
  if (!existsSync(o.out)) return null;
  try {
    return parseResults(JSON.parse(readFileSync(o.out, 'utf8')));
  } catch (err) {
    const why = err instanceof ResultsError ? err.message : `not JSON (${err.message})`;
    if (o.tracks.length === TRACKS.length) {
      process.stderr.write(`measure: ${rel(o.out)} is replaced: ${why}\n`);
      return null;
    }
    throw new UsageError(
      `${rel(o.out)}: ${why}; --only would keep its other tracks: measure every track, or move the file away`,
    );
  }
}

function writeResults(results, o) {
  writeFileSync(o.out, `${JSON.stringify(results, null, 2)}\n`);
  if (!o.readme) return;
  const file = join(ROOT, README);
  const before = readFileSync(file, 'utf8');
  const after = replaceResultsTable(before, renderResultsTable(results));
  if (after !== before) writeFileSync(file, after);
}

// ---------------------------------------------------------------- main

async function main() {
  const o = options(process.argv.slice(2));
  if (o.help) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  const loadManifest = await loadManifestFromDist();
  const previous = previousResults(o);
  if (o.readme) {
    try {
      readResultsTable(readFileSync(join(ROOT, README), 'utf8'));
    } catch (err) {
      throw new UsageError(`${README}: ${err.message}`);
    }
  } else if (o.readmeAsked) {
    process.stderr.write(
      `measure: ${README} is left alone: its table is generated from ${DEFAULT_OUT}, not ${rel(o.out)}\n`,
    );
  }
  const plans = [];
  for (const track of o.tracks) plans.push(await planTrack(track, o, loadManifest));
  if (o.dryRun) {
    printDryRun(plans, o);
    return 0;
  }

  const commit = gitCommit();
  const where = machine();
  const progress = new Progress(plans.reduce((n, p) => n + p.runs.length, 0));
  const fresh = { tracks: {}, runs: [] };
  let failed = 0;
  for (const plan of plans) {
    const records = [];
    for (const run of plan.runs) {
      await ensureMade(run.base, progress, plan.track, o.keep);
      if (run.base.failed) {
        progress.say(`${plan.track} seed ${run.seed}: not run, its make step failed`);
        records.push(runRecord(runMeta(plan, run), { error: `make step failed: ${run.base.failed}` }));
        progress.done++;
        continue;
      }
      records.push(await runJob(plan, run, o, progress));
    }
    failed += records.filter((r) => r.status === 'failed').length;
    const measuredAt = new Date().toISOString();
    fresh.tracks[plan.track] = summarizeTrack(records, {
      manifest: plan.manifest,
      measuredAt,
      commit,
      machine: where,
    });
    fresh.runs.push(...records);
    // After every track: a long measurement stopped later keeps what it measured.
    writeResults(mergeResults(previous, { measuredAt, machine: where, commit, ...fresh }), o);
    progress.say(`${plan.track}: written to ${rel(o.out)}${o.readme ? ` and ${README}` : ''}`);
  }
  if (failed > 0) progress.say(`${failed} run(s) failed; their errors are in ${rel(o.out)}`);
  return failed > 0 ? 1 : 0;
}

function stopChildren(signal) {
  for (const child of running) killGroup(child, 'SIGTERM');
  process.stderr.write(`\nmeasure: stopped (${signal}); tracks already finished are in the results file\n`);
  process.exit(130);
}
process.on('SIGINT', () => stopChildren('SIGINT'));
process.on('SIGTERM', () => stopChildren('SIGTERM'));

main().then(
  (code) => process.exit(code),
  (err) => {
    if (err instanceof UsageError) {
      process.stderr.write(`measure: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  },
);
