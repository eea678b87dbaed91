/**
 * `clawray job submit MANIFEST`: validates the manifest here (positioned errors, exit 2),
 * checks its GPU partition against the cluster, uploads the manifest's directory as the
 * working dir and submits the job; its supervisor runs the RL pipeline. While it runs, a
 * terminal shows a live line (step, reward, held-out success, samples/s, staleness, ETA);
 * anything else gets the job's log lines.
 */
import { readFileSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Cluster } from '../actors/runtime/cluster.js';
import { SUPERVISOR_NAMESPACE, supervisorName } from '../common/job-names.js';
import { loadManifest } from '../jobs/manifest/load.js';
import { planPartition } from '../jobs/manifest/partition.js';
import type { PipelineProgress, PipelineSummary } from '../jobs/pipeline/rl-pipeline.js';
import { type JobsClient, type JobView, TERMINAL_STATUSES } from '../jobs/supervisor/jobs-client.js';
import { progress } from './progress.js';

export interface ManifestSubmitOptions {
  set: string[];
  resume?: boolean;
  workingDir?: string;
  workingDirLimitMb: number;
  submissionId?: string;
  metadata: Record<string, string>;
  wait: boolean;
  json?: boolean;
}

/** What `submit` needs from the CLI's connection (see job-commands.ts). */
export interface ManifestConn {
  jobs: JobsClient;
  sdk(): Promise<Cluster>;
  uploadWorkingDir(dir: string, limitMb: number): Promise<string>;
  /** Prints the job's log until it ends. */
  streamLogs(submissionId: string): Promise<JobView>;
}

export function isManifestPath(entrypoint: string[]): boolean {
  return entrypoint.length === 1 && /\.ya?ml$/i.test(entrypoint[0]);
}

const POLL_MS = 500;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fmt = (v: number | null, digits = 3) => (v === null ? '–' : v.toFixed(digits));

function progressLabel(p: PipelineProgress): string {
  if (p.phase === 'warmup') return `warmup ${p.warmupStep}/${p.warmupSteps}`;
  const eta = p.etaSeconds === null ? '' : ` eta ${Math.round(p.etaSeconds)}s`;
  return `${p.phase} reward ${fmt(p.rewardMean)} held-out ${fmt(p.heldoutSuccess)} ${p.samplesPerSecond.toFixed(2)} samples/s staleness ${fmt(p.staleness, 2)}${eta}`;
}

/** Follows the job with a live line until it ends. */
async function followLive(conn: ManifestConn, submissionId: string, totalSteps: number): Promise<JobView> {
  const bar = progress('rljob', totalSteps);
  const cluster = await conn.sdk();
  let job = await conn.jobs.get(submissionId);
  while (!TERMINAL_STATUSES.has(job.status)) {
    try {
      const supervisor = await cluster.getActor(supervisorName(submissionId), {
        namespace: SUPERVISOR_NAMESPACE,
      });
      const p = (await supervisor.call('progress' as never)) as PipelineProgress | null;
      if (p) bar.update(p.step, progressLabel(p));
    } catch {
      // The supervisor is still starting.
    }
    await sleep(POLL_MS);
    job = await conn.jobs.get(submissionId);
  }
  bar.finish();
  return job;
}

export async function submitManifest(
  conn: ManifestConn,
  file: string,
  o: ManifestSubmitOptions,
): Promise<{ job: JobView; summary: PipelineSummary | null }> {
  const set = o.resume ? [...o.set, 'spec.checkpoint.resume=true'] : o.set;
  const manifest = await loadManifest(file, { set });
  const cluster = await conn.sdk();
  planPartition(manifest, (await cluster.status()).nodes);
  const workingDirHash = await conn.uploadWorkingDir(o.workingDir ?? dirname(file), o.workingDirLimitMb);
  let job = await conn.jobs.submit({
    submissionId: o.submissionId ?? '',
    entrypoint: `rljob ${basename(file)} (${manifest.spec.track}/${manifest.spec.method})`,
    workingDirHash,
    metadata: { ...o.metadata, 'rljob.name': manifest.metadata.name },
    manifest: readFileSync(file, 'utf8'),
    manifestFile: basename(file),
    manifestSet: set,
  });
  process.stderr.write(`clawray: job '${job.submissionId}' submitted (RLJob ${manifest.metadata.name})\n`);
  if (!o.wait) return { job, summary: null };
  job = process.stderr.isTTY
    ? await followLive(conn, job.submissionId, manifest.spec.train.steps)
    : await conn.streamLogs(job.submissionId);
  let summary: PipelineSummary | null = null;
  try {
    const supervisor = await cluster.getActor(supervisorName(job.submissionId), {
      namespace: SUPERVISOR_NAMESPACE,
    });
    summary = (await supervisor.call('summary' as never)) as PipelineSummary | null;
  } catch {
    // The supervisor died with its node: the status says why.
  }
  return { job, summary };
}

/** The one JSON line `submit --json` ends with. */
export function rljobSummaryLine(job: JobView, summary: PipelineSummary | null): string {
  return JSON.stringify({
    submissionId: job.submissionId,
    status: job.status,
    message: job.message,
    job: summary?.job ?? null,
    track: summary?.track ?? null,
    method: summary?.method ?? null,
    steps: summary?.steps ?? 0,
    metric: summary?.metric ?? null,
    heldoutStart: summary?.heldout.start ?? null,
    heldoutEnd: summary?.heldout.end ?? null,
    samplesPerSecond: summary?.samplesPerSecond ?? null,
    trainerIdleRatio: summary?.trainerIdleRatio ?? null,
    rolloutIdleRatio: summary?.rolloutIdleRatio ?? null,
    elapsedSeconds: summary?.elapsedSeconds ?? null,
    resumedFromStep: summary?.resumedFromStep ?? null,
  });
}
