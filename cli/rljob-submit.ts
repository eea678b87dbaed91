/**
 * `clawray job submit MANIFEST`: validates the manifest here (positioned errors, exit 2) and
 * the local files it names (local-paths.ts), checks its GPU partition against the cluster,
 * uploads the working dir (the manifest's directory by default) and submits an ordinary
 * entrypoint job whose entrypoint is `clawray rljob run MANIFEST --set …` (Ray's model: the
 * driver is the job's process; the head knows nothing of manifests). While it runs, a terminal
 * shows a bar per phase made from the driver's log lines (rljob-view.ts); anything else gets the
 * log itself, long step series thinned. The log is kept in $CLAWRAY_HOME/logs/rljobs/ID.log
 * (an embedded cluster's store ends with this command). The driver's last log line, `summary
 * {JSON}`, becomes a short human summary on stderr (rljob-summary.ts) and the `--json` line.
 */

import { closeSync, existsSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { ConfigError } from '../common/errors.js';
import { clawrayHome } from '../common/home.js';
import { loadManifest } from '../jobs/manifest/load.js';
import { checkLocalPaths } from '../jobs/manifest/local-paths.js';
import { planPartition } from '../jobs/manifest/partition.js';
import type { RLJobManifest } from '../jobs/manifest/schema.js';
import type { RLJobSummary as DriverSummary } from '../jobs/rl/driver.js';
import type { JobsClient, JobView } from '../jobs/supervisor/jobs-client.js';
import type { Cluster } from '../runtime/index.js';
import { LineSplitter, TIME_STAMP } from './progress.js';
import { humanSummary } from './rljob-summary.js';
import { RljobView } from './rljob-view.js';

/** An RL driver stops at a step boundary and checkpoints first; that takes a while. */
export const RLJOB_STOP_GRACE_MS = 120_000;

export interface ManifestSubmitOptions {
  set: string[];
  /** `--resume`, optionally `--resume-from SUBMISSION_ID[/step-N]`. */
  resume?: boolean;
  resumeFrom?: string;
  workingDir?: string;
  workingDirLimitMb: number;
  submissionId?: string;
  metadata: Record<string, string>;
  wait: boolean;
  /** Default: the manifest's spec.maxDriverRestarts. */
  maxRetries?: number;
  /** Default: RLJOB_STOP_GRACE_MS. */
  stopGraceMs?: number;
}

/** What `submit` needs from the CLI's connection (see job-commands.ts). */
export interface ManifestConn {
  jobs: JobsClient;
  sdk(): Promise<Cluster>;
  uploadWorkingDir(dir: string, limitMb: number): Promise<string>;
  /** Hands the job's log to `write` until the job ends; resolves with the job at the end. */
  followLogs(submissionId: string, write: (text: string) => void): Promise<JobView>;
}

/**
 * The `summary {JSON}` line an RL driver ends its log with (its step and evaluation records left
 * out; `curves` has their points), and where `job submit` kept the log.
 */
export type RLJobSummary = Omit<DriverSummary, 'history' | 'evals'> & { logFile?: string };

export function isManifestPath(entrypoint: string[]): boolean {
  return entrypoint.length === 1 && /\.ya?ml$/i.test(entrypoint[0]);
}

/** A word for `/bin/sh -c`: as it is when it is plainly safe, single-quoted otherwise. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_\-.,/:=@%+]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * The entrypoint that runs MANIFEST (a path inside the working dir) as the job's driver. `exec`:
 * the driver replaces the shell, so a stop's SIGTERM reaches it and nothing else.
 */
export function rljobEntrypoint(
  manifestInWorkingDir: string,
  o: Pick<ManifestSubmitOptions, 'set' | 'resume' | 'resumeFrom'>,
): string {
  const argv = ['clawray', 'rljob', 'run', manifestInWorkingDir, ...o.set.flatMap((s) => ['--set', s])];
  if (o.resume || o.resumeFrom) argv.push('--resume', ...(o.resumeFrom ? [o.resumeFrom] : []));
  return `exec ${argv.map(shellWord).join(' ')}`;
}

/** The manifest's path inside the working dir, which is where the job finds it. */
export function manifestInWorkingDir(file: string, workingDir: string): string {
  const rel = relative(resolve(workingDir), resolve(file));
  if (rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) {
    throw new ConfigError(
      `${file} is not inside the working dir ${workingDir}: the job reads its manifest from the uploaded working dir; pass --working-dir with a directory that holds it`,
      { fields: { manifest: file, workingDir } },
    );
  }
  return rel.split(sep).join('/');
}

const SUMMARY_LINE = new RegExp(String.raw`^${TIME_STAMP}summary (\{.*\})\s*$`);

/** `summary {JSON}` (after an optional time stamp); undefined for any other line. */
export function parseSummaryLine(line: string): RLJobSummary | undefined {
  const match = SUMMARY_LINE.exec(line);
  if (!match) return undefined;
  try {
    const value = JSON.parse(match[1]) as RLJobSummary;
    return value && typeof value === 'object' ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The manifest, validated, with the local files it names checked where the job will look for
 * them (the working dir): everything `submit` refuses before it contacts a cluster (exit 2).
 */
export async function loadSubmittedManifest(
  file: string,
  o: Pick<ManifestSubmitOptions, 'set' | 'workingDir'>,
): Promise<RLJobManifest> {
  const manifest = await loadManifest(file, { set: o.set });
  checkLocalPaths(manifest, { file, workingDir: o.workingDir ?? dirname(file) });
  return manifest;
}

export async function submitManifest(
  conn: ManifestConn,
  file: string,
  o: ManifestSubmitOptions,
): Promise<{ job: JobView; summary: RLJobSummary | null }> {
  const manifest = await loadSubmittedManifest(file, o);
  const cluster = await conn.sdk();
  await planPartition(manifest, cluster);
  const workingDir = o.workingDir ?? dirname(file);
  const inDir = manifestInWorkingDir(file, workingDir);
  const workingDirHash = await conn.uploadWorkingDir(workingDir, o.workingDirLimitMb);
  let job = await conn.jobs.submit({
    submissionId: o.submissionId ?? '',
    entrypoint: rljobEntrypoint(inDir, o),
    workingDirHash,
    metadata: { ...o.metadata, 'rljob.name': manifest.metadata.name },
    maxRetries: o.maxRetries ?? manifest.spec.maxDriverRestarts,
    stopGraceMs: o.stopGraceMs ?? RLJOB_STOP_GRACE_MS,
  });
  process.stderr.write(`clawray: job '${job.submissionId}' submitted (RLJob ${manifest.metadata.name})\n`);
  if (!o.wait) return { job, summary: null };

  const log = openJobLog(job.submissionId);
  const view = new RljobView({
    live: Boolean(process.stderr.isTTY),
    out: process.stdout,
    err: process.stderr,
    logFile: log?.path,
  });
  let summary: RLJobSummary | null = null;
  const lines = new LineSplitter((line) => {
    summary = parseSummaryLine(line) ?? summary;
    view.push(line);
  });
  try {
    job = await conn.followLogs(job.submissionId, (text) => {
      log?.write(text);
      lines.push(text);
    });
    lines.end();
  } finally {
    view.end();
    log?.close();
  }
  const kept: RLJobSummary | null = summary ? { ...(summary as RLJobSummary), logFile: log?.path } : null;
  const report = humanSummary(job.status, kept, job.submissionId, {
    manifest: file,
    set: o.set,
    logFile: log?.path,
    cli: cliName(),
    exists: existsSync,
    quote: shellWord,
  });
  process.stderr.write(`${report.join('\n')}\n`);
  return { job, summary: kept };
}

/** Where `job submit` keeps an RL job's log: the embedded cluster's store ends with the command. */
export function jobLogFile(submissionId: string, home = clawrayHome()): string {
  return join(home, 'logs', 'rljobs', `${submissionId}.log`);
}

/** The job's log file, written as the log is followed; undefined (and said) when it cannot be. */
function openJobLog(
  submissionId: string,
): { path: string; write(text: string): void; close(): void } | undefined {
  const path = jobLogFile(submissionId);
  let fd: number;
  try {
    mkdirSync(dirname(path), { recursive: true });
    fd = openSync(path, 'w');
  } catch (err) {
    process.stderr.write(`clawray: the job's log is not kept in a file: ${(err as Error).message}\n`);
    return undefined;
  }
  let open = true;
  return {
    path,
    write(text) {
      if (!open) return;
      try {
        writeSync(fd, text);
      } catch (err) {
        open = false;
        process.stderr.write(`clawray: writing ${path} failed: ${(err as Error).message}\n`);
      }
    },
    close() {
      closeSync(fd);
    },
  };
}

/** How the user ran clawray, for the commands the summary prints: through npx, or on the PATH. */
function cliName(): string {
  return process.env.npm_command === 'exec' || process.env.npm_lifecycle_event === 'npx'
    ? 'npx clawray'
    : 'clawray';
}

/** The one JSON line `submit --json` ends with. */
export function rljobSummaryLine(job: JobView, summary: RLJobSummary | null): string {
  return JSON.stringify({
    submissionId: job.submissionId,
    status: job.status,
    message: job.message,
    // A failed job's own account of why (the driver's error), beside the head's exit message.
    error: summary?.error ?? null,
    attempt: job.attempt,
    job: summary?.job ?? null,
    track: summary?.track ?? null,
    method: summary?.method ?? null,
    steps: summary?.steps ?? 0,
    // Steps the trainer did not take (loss or gradients not finite): the weights stayed as they were.
    skippedSteps: summary?.skippedSteps ?? 0,
    warmupSteps: summary?.warmupSteps ?? 0,
    metric: summary?.metric ?? null,
    heldoutStart: summary?.heldout?.start ?? null,
    // After train.warmup's SFT: where RL itself started (null without a warm start).
    heldoutAfterWarmup: summary?.heldout?.afterWarmup ?? null,
    heldoutEnd: summary?.heldout?.end ?? null,
    samplesPerSecond: summary?.samplesPerSecond ?? null,
    trainerIdleRatio: summary?.trainerIdleRatio ?? null,
    rolloutIdleRatio: summary?.rolloutIdleRatio ?? null,
    elapsedSeconds: summary?.elapsedSeconds ?? null,
    resumedFromStep: summary?.resumedFromStep ?? null,
    trajectories: summary?.trajectories ?? null,
    recoveries: summary?.recoveries ?? null,
    // What the engines and shards computed on ('onnxruntime/cpu', 'tfjs/wasm'…): a GPU job that
    // fell back to the CPU shows here.
    runtime: summary?.runtime ?? null,
    // The train–inference mismatch (same weights, trainer vs engine; goal ≤ 1e-3) and the policy
    // lag of stale samples (with its version gap), each a mean over RL steps; null when none.
    mismatch: summary?.mismatch ?? null,
    policyLag: summary?.policyLag ?? null,
    policyLagVersions: summary?.policyLagVersions ?? null,
    // The newest checkpoint: its dir (step-N counts optimizer steps), its job step, and N.
    checkpoint: summary?.checkpoint ?? null,
    // The held-out and reward curves' points, and the SVG drawn from them beside the checkpoints.
    curves: summary?.curves ?? null,
    // The job's whole log, kept by `job submit` (an embedded cluster's store ends with it).
    logFile: summary?.logFile ?? null,
  });
}
