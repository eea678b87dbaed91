/**
 * `clawray eval [MODEL_DIR|CHECKPOINT] --track TRACK | --manifest JOB.yaml`: a job's held-out
 * evaluation on its own (OpenClaw-RL's `openclaw-test/run_eval.sh`): the share of held-out
 * tasks solved greedily on an env track, or the simulated user's preference score on the
 * personal track, computed by the code a job's periodic evaluation runs, so evaluating a job's
 * checkpoint reproduces the figure the job logged for it.
 *
 * The manifest (`--manifest`, the job's own) supplies what the evaluation depends on: track,
 * tasks and split, env settings, turn and token limits, the simulated user, the base model a
 * checkpoint's weights go into and its chat template, LoRA alpha, engine and env-pool counts.
 * Without one, those are the track's defaults (as `clawray rljob run` would fill them) and
 * the flags. Exit 2 for a usage mistake, 1 when the evaluation itself fails.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { parse as parseYaml } from 'yaml';
import { makePreference } from '../actors/envs/personal/preferences.js';
import { CONFIG_FILE } from '../actors/models/model-dir.js';
import { ConfigError } from '../common/errors.js';
import { clawrayHome } from '../common/home.js';
import { newId } from '../common/ids.js';
import { silentLogger } from '../common/logger.js';
import { connect } from '../index.js';
import { loadManifest, parseManifest } from '../jobs/manifest/load.js';
import type { RLJobManifest } from '../jobs/manifest/schema.js';
import { type EvalTarget, newestRunTarget, resolveEvalTarget } from '../jobs/rl/eval-target.js';
import { runStandaloneEval, type StandaloneEvalResult } from '../jobs/rl/standalone-eval.js';
import type { Cluster } from '../runtime/index.js';
import { onShutdownSignal } from './cli-errors.js';
import { int } from './cli-parse.js';
import { type Progress, plainEvery, progress } from './progress.js';

const TRACKS = ['personal', 'terminal', 'gui', 'swe', 'toolcall'] as const;
const SPLITS = ['heldout', 'train', 'all'] as const;

interface EvalFlags {
  track?: string;
  manifest?: string;
  model?: string;
  tasks?: string;
  split?: string;
  userPreference?: string;
  sessions?: number;
  set: string[];
  address?: string;
  json?: boolean;
}

export function registerEvalCommand(program: Command): void {
  program
    .command('eval')
    .description(
      "held-out success of a model or a job's checkpoint on an env track, or the simulated user's preference score on personal (greedy; the numbers a job's evaluation reports)",
    )
    .argument(
      '[target]',
      "a model dir, a trainer checkpoint (<checkpoint.dir>/<submission>/step-N), a submission's checkpoint dir (its newest step) or its id SUBMISSION_ID[/step-N] (under the manifest's checkpoint.dir, else $CLAWRAY_HOME/checkpoints/<job>/); with --manifest, nothing: the job's newest run",
    )
    .option('--track <track>', `${TRACKS.join(' | ')} (default: the manifest's)`)
    .option(
      '--manifest <file>',
      "the job's manifest: track, tasks, env settings, limits, user, base model and chat template, LoRA (its relative paths resolve from its directory)",
    )
    .option(
      '--model <dir>',
      "the base model a checkpoint's weights go into (default: the manifest's spec.model)",
    )
    .option('--tasks <file>', "task file to evaluate on (default: the manifest's eval.tasks, else built-in)")
    .option('--split <split>', `${SPLITS.join(' | ')} (default: the manifest's eval.split, else heldout)`)
    .option('--user-preference <pref>', "personal: the simulated user's preference (signoff, brief:5, …)")
    .option('--sessions <n>', 'personal: held-out sessions to play (default 16)', int('--sessions'))
    .option(
      '--set <path=value>',
      'override a manifest field, e.g. spec.rollout.maxTokens=64 (repeatable)',
      (v, all: string[]) => [...all, v],
      [],
    )
    .option('--address <host:port>', 'the cluster (default CLAWRAY_ADDRESS; none: an embedded cluster)')
    .option(
      '--json',
      'print one JSON line: {track, metric, split, success, rewardMean, episodes, checkpoint, step, seconds, recorded}',
    )
    .action(async (path: string | undefined, flags: EvalFlags) => {
      await runEval(path, flags);
    });
}

async function runEval(path: string | undefined, flags: EvalFlags): Promise<void> {
  const cwd = process.cwd();
  const dataDir = clawrayHome();
  const { manifest, workingDir } = await evalManifest(flags, cwd);
  const { spec } = manifest;
  const target = evalTarget(path, flags, manifest, cwd, dataDir);
  if (target.kind === 'model' && flags.model) {
    throw new ConfigError(
      `--model names the base model of a checkpoint, but ${target.dir} is a model directory itself: drop --model`,
    );
  }
  if (target.kind === 'model') {
    // The directory given is the model; the manifest's chat template (if any) still applies.
    manifest.spec.model = { ...spec.model, path: target.dir };
  } else if (flags.model) {
    manifest.spec.model = { ...spec.model, path: resolve(cwd, flags.model), init: undefined };
  } else if (!flags.manifest) {
    throw new ConfigError(
      `${target.dir} is a trainer checkpoint: its weights go into the base model the job trained: pass --manifest JOB.yaml (the job's manifest) or --model BASE_MODEL_DIR`,
      { fields: { path: target.dir } },
    );
  }

  let bar: Progress | undefined;
  const log = (line: string) => {
    bar?.finish();
    process.stderr.write(`${line}\n`);
  };
  let cluster: Cluster | undefined;
  let result: StandaloneEvalResult;
  try {
    result = await runStandaloneEval({
      connect: async () => {
        if (!flags.address && !process.env.CLAWRAY_ADDRESS)
          log('no cluster address: starting an embedded cluster');
        cluster = await connect(flags.address, {
          jobId: `eval-${newId('job').slice(-8)}`,
          local: { logger: process.env.CLAWRAY_LOG_LEVEL ? undefined : silentLogger },
        });
        const connected = cluster;
        onShutdownSignal(() => connected.close());
        return connected;
      },
      manifest,
      workingDir,
      dataDir,
      target,
      log,
      onProgress: (done, total, label) => {
        bar ??= progress('eval', total, process.stderr, { plainEvery: plainEvery(total) });
        bar.update(done, label);
      },
    });
  } finally {
    bar?.finish();
    await cluster?.close();
  }
  if (result.sample) log(`eval sample: ${result.sample}`);
  // The job's own figure compares only under the job's manifest, as written.
  const asTheJob =
    Boolean(flags.manifest) &&
    !flags.split &&
    !flags.tasks &&
    flags.userPreference === undefined &&
    flags.sessions === undefined &&
    flags.set.length === 0;
  if (!asTheJob) result.recorded = null;
  if (flags.json) {
    const { track, metric, split, success, rewardMean, episodes, checkpoint, step, seconds, recorded } =
      result;
    process.stdout.write(
      `${JSON.stringify({ track, metric, split, success, rewardMean, episodes, checkpoint, step, seconds, recorded })}\n`,
    );
    return;
  }
  process.stdout.write(`${humanLine(result)}\n`);
}

function humanLine(r: StandaloneEvalResult): string {
  const personal = r.metric === 'preference_score';
  const what = personal ? 'preference score' : `${r.split === 'heldout' ? 'held-out' : r.split} success`;
  const units = personal ? 'sessions' : `${r.track} tasks`;
  const at = r.step === null ? r.checkpoint : `${r.checkpoint} (step ${r.step})`;
  const recorded = r.recorded
    ? `; the job measured ${r.recorded.success.toFixed(3)} at step ${r.recorded.step}`
    : '';
  return `${what} ${r.success.toFixed(3)} (${r.episodes} ${units}, mean reward ${r.rewardMean.toFixed(3)}, ${r.seconds.toFixed(1)} s): ${at}${recorded}`;
}

/** The job's manifest, or one made from the flags; flags override what it says. */
async function evalManifest(
  flags: EvalFlags,
  cwd: string,
): Promise<{ manifest: RLJobManifest; workingDir: string }> {
  if (flags.track !== undefined && !(TRACKS as readonly string[]).includes(flags.track)) {
    throw new ConfigError(`--track expects one of ${TRACKS.join(', ')}, got '${flags.track}'`);
  }
  if (flags.split !== undefined && !(SPLITS as readonly string[]).includes(flags.split)) {
    throw new ConfigError(`--split expects one of ${SPLITS.join(', ')}, got '${flags.split}'`);
  }
  if (flags.sessions !== undefined && flags.sessions < 1) {
    throw new ConfigError('--sessions expects a whole number ≥ 1');
  }
  if (flags.userPreference !== undefined) {
    try {
      makePreference(flags.userPreference);
    } catch (err) {
      throw new ConfigError(`--user-preference: ${(err as Error).message}`, { cause: err });
    }
  }
  if (!flags.manifest && !flags.track) {
    throw new ConfigError(
      'clawray eval needs --track TRACK (toolcall, terminal, swe, gui or personal) or --manifest JOB.yaml',
    );
  }
  const file = flags.manifest ? resolve(cwd, flags.manifest) : undefined;
  const written = file ? await writtenSpec(file, flags.set) : undefined;
  const track = file ? written?.track : flags.track;
  if (flags.track && track !== undefined && flags.track !== track) {
    throw new ConfigError(
      `--track ${flags.track} disagrees with ${flags.manifest}'s spec.track ${track}: drop --track or use the manifest of a ${flags.track} job`,
    );
  }
  const personal = track === 'personal';
  if (personal && flags.tasks) {
    throw new ConfigError(
      "--tasks: the personal track has no task file: it plays the simulated user's held-out sessions (--sessions N)",
    );
  }
  if (
    track !== undefined &&
    !personal &&
    (flags.userPreference !== undefined || flags.sessions !== undefined)
  ) {
    throw new ConfigError(
      `--${flags.userPreference !== undefined ? 'user-preference' : 'sessions'} applies to the personal track only; this evaluation is on ${track}`,
    );
  }
  // Flags become overrides after the user's --set, so the flag wins and errors name the field.
  const set = [...flags.set];
  if (flags.split) set.push(`spec.eval.split=${flags.split}`);
  if (flags.tasks) set.push(`spec.eval.tasks=${JSON.stringify(resolve(cwd, flags.tasks))}`);
  if (flags.userPreference !== undefined)
    set.push(`spec.user.preference=${JSON.stringify(flags.userPreference)}`);
  if (flags.sessions !== undefined) set.push(`spec.user.evalSessions=${flags.sessions}`);

  if (personal && flags.userPreference === undefined && !written?.user) {
    throw new ConfigError(
      "clawray eval --track personal scores the simulated user's preference: give --user-preference PREF (signoff, prefix, lowercase, brackets, brief:N), or --manifest with spec.user",
    );
  }
  if (file) return { manifest: await loadManifest(file, { set }), workingDir: dirname(file) };
  // What `rljob run` would fill in for a manifest that says only the track; the model path
  // is set once the target is known.
  const text = `apiVersion: clawray.dev/v1\nkind: RLJob\nmetadata: { name: eval }\nspec:\n  track: ${track}\n  method: rl\n  model: { path: . }\n`;
  return { manifest: parseManifest(text, '(clawray eval flags)', { set }), workingDir: cwd };
}

/**
 * What a manifest says of its track (after `--set spec.track=…`) and simulated user, read
 * before the manifest is checked: the personal-only flags are judged by it. Undefined fields
 * when it cannot be read; loading the manifest then reports why.
 */
async function writtenSpec(file: string, set: readonly string[]): Promise<{ track?: string; user: boolean }> {
  let spec: { track?: unknown; user?: unknown } | undefined;
  try {
    spec = (parseYaml(await readFile(file, 'utf8')) as { spec?: typeof spec } | null)?.spec;
  } catch {
    spec = undefined;
  }
  const override = set.findLast((e) => /^\s*spec\.track\s*=/.test(e));
  const track = override
    ? override.slice(override.indexOf('=') + 1).trim()
    : typeof spec?.track === 'string'
      ? spec.track
      : undefined;
  return { track, user: Boolean(spec?.user) || set.some((e) => /^\s*spec\.user[.=]/.test(e)) };
}

function evalTarget(
  path: string | undefined,
  flags: EvalFlags,
  manifest: RLJobManifest,
  cwd: string,
  dataDir: string,
): EvalTarget {
  const root = flags.manifest ? resolve(dataDir, manifest.spec.checkpoint.dir) : undefined;
  if (path === undefined) {
    if (!root) {
      throw new ConfigError(
        "clawray eval needs what to evaluate: a MODEL_DIR, a CHECKPOINT (<checkpoint.dir>/<submission>[/step-N]), or --manifest for the job's newest run",
      );
    }
    return newestRunTarget(root, manifest.metadata.name);
  }
  const target = resolveEvalTarget(path, { cwd, checkpointRoot: root, home: dataDir });
  if (
    target.kind === 'checkpoint' &&
    flags.model &&
    !existsSync(join(resolve(cwd, flags.model), CONFIG_FILE))
  ) {
    throw new ConfigError(`--model ${flags.model}: no model there (no ${CONFIG_FILE})`);
  }
  return target;
}
