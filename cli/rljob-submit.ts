/**
 * `clawray job submit MANIFEST`: validates the manifest here (positioned errors, exit 2),
 * checks its GPU partition against the cluster, uploads the working dir (the manifest's
 * directory by default) and submits an ordinary entrypoint job whose entrypoint is
 * `clawray rljob run MANIFEST --set …` (Ray's model: the driver is the job's process; the head
 * knows nothing of manifests). While it runs, a terminal shows a live line made from the
 * driver's `step N/M: …` log lines; anything else gets the log itself. The driver's last log
 * line, `summary {JSON}`, becomes the `--json` line.
 */

import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import type { Cluster } from '../actors/runtime/cluster.js';
import { ConfigError } from '../common/errors.js';
import { loadManifest } from '../jobs/manifest/load.js';
import { planPartition } from '../jobs/manifest/partition.js';
import type { RLJobSummary as DriverSummary } from '../jobs/rl/driver.js';
import type { JobsClient, JobView } from '../jobs/supervisor/jobs-client.js';
import { LineSplitter, type Progress, parseStepLine, progress, TIME_STAMP } from './progress.js';

/** An RL driver stops at a step boundary and checkpoints first; that takes a while. */
export const RLJOB_STOP_GRACE_MS = 120_000;
/** Log lines kept to show why a job failed when the terminal only showed the live line. */
const TAIL_LINES = 20;

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

/** The `summary {JSON}` line an RL driver ends its log with (its curves left out). */
export type RLJobSummary = Omit<DriverSummary, 'history' | 'evals'>;

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

export async function submitManifest(
  conn: ManifestConn,
  file: string,
  o: ManifestSubmitOptions,
): Promise<{ job: JobView; summary: RLJobSummary | null }> {
  const manifest = await loadManifest(file, { set: o.set });
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

  const live = Boolean(process.stderr.isTTY);
  let summary: RLJobSummary | null = null;
  let bar: Progress | undefined;
  const tail: string[] = [];
  const lines = new LineSplitter((line) => {
    summary = parseSummaryLine(line) ?? summary;
    if (!live) return;
    tail.push(line);
    if (tail.length > TAIL_LINES) tail.shift();
    const step = parseStepLine(line);
    if (step) {
      bar ??= progress('rljob', step.total);
      bar.update(step.step, step.label);
    }
  });
  job = await conn.followLogs(job.submissionId, (text) => {
    if (!live) process.stdout.write(text);
    lines.push(text);
  });
  lines.end();
  bar?.finish();
  if (live && job.status === 'FAILED' && tail.length > 0) {
    process.stderr.write(`clawray: the last lines of the job's log:\n${tail.join('\n')}\n`);
  }
  return { job, summary };
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
    // Mean |trainer − rollout logprob| per step (goal ≤ 1e-3); null before any RL step.
    logprobAbsDiff: summary?.logprobAbsDiff ?? null,
  });
}
