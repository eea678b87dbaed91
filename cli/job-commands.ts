/** `clawray job submit|status|logs|stop|list|delete` (Ray Jobs semantics). */
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { requireClientToken } from '../common/auth.js';
import { ConfigError } from '../common/errors.js';
import {
  checkEntrypoint,
  checkSubmissionId,
  DEFAULT_STOP_GRACE_MS,
  SUPERVISOR_NAMESPACE,
  supervisorName,
} from '../common/job-names.js';
import { findLocalHead, staleHeadMessage } from '../common/local-head.js';
import { silentLogger } from '../common/logger.js';
import { DEFAULT_MAX_PACKAGE_BYTES, packWorkingDir } from '../jobs/package/working-dir.js';
import { checkResumeRef } from '../jobs/rl/job-state.js';
import {
  JobsClient,
  type JobView,
  type LogChunk,
  TERMINAL_STATUSES,
} from '../jobs/supervisor/jobs-client.js';
import { Cluster } from '../runtime/index.js';
import { int } from './cli-parse.js';
import {
  isManifestPath,
  loadSubmittedManifest,
  RLJOB_STOP_GRACE_MS,
  rljobSummaryLine,
  shellWord,
  submitManifest,
} from './rljob-submit.js';
import { table } from './table.js';

/** Ray's limit; larger dirs are almost always a stray `.git`, `node_modules` or dataset. */
const POLL_MS = 250;

/**
 * The shell command (`/bin/sh -c`) that runs what followed `--`. One word is a shell command
 * as written (`-- "python a.py | tee log"`), as the SDK's entrypoint string is; several words
 * are an argv, each word quoted where the shell would read it (Ray joins them with
 * `list2cmdline`), so `-- node -e "console.log('a (b)')"` runs node with exactly those
 * arguments.
 */
export function entrypointCommand(words: readonly string[]): string {
  return words.length === 1 ? words[0] : words.map(shellWord).join(' ');
}

interface ConnOpts {
  address?: string;
  token?: string;
}

interface Conn {
  jobs: JobsClient;
  address: string;
  token: string;
  sdk(): Promise<Cluster>;
  close(): Promise<void>;
}

/**
 * --address, CLAWRAY_ADDRESS, then the head started on this machine; undefined when there is
 * none (a stale record is removed and said, and the caller may start an embedded cluster).
 */
function findAddress(flag?: string): string | undefined {
  if (flag) return flag;
  if (process.env.CLAWRAY_ADDRESS) return process.env.CLAWRAY_ADDRESS;
  const local = findLocalHead();
  if (local.stale) process.stderr.write(`clawray: ${staleHeadMessage(local.stale)}\n`);
  return local.head?.address;
}

/**
 * How long job commands wait for an unreachable head: a head restarting on Redis is back
 * within seconds, and a `submit` or `logs -f` following a job must outlive that.
 */
const HEAD_RETRY_MS = 60_000;

function open(address: string, token: string, onClose?: () => Promise<void>): Conn {
  const jobs = new JobsClient(address, token, HEAD_RETRY_MS);
  let cluster: Promise<Cluster> | undefined;
  return {
    jobs,
    address,
    token,
    sdk: () => {
      cluster ??= Cluster.connect({ address, token, headRetryMs: 0 });
      return cluster;
    },
    close: async () => {
      jobs.close();
      if (cluster) await (await cluster.catch(() => undefined))?.close();
      await onClose?.();
    },
  };
}

async function connectTo(opts: ConnOpts, allowLocal = false): Promise<Conn> {
  const address = findAddress(opts.address);
  if (address) return open(address, requireClientToken(opts.token).token);
  if (!allowLocal) {
    throw new ConfigError(
      'no cluster address: pass --address HOST:PORT, set CLAWRAY_ADDRESS, or start a head on this machine (clawray head start)',
    );
  }
  process.stderr.write('clawray: no cluster address; starting a local cluster for this job\n');
  const { LocalCluster } = await import('../local/local-cluster.js');
  const local = await LocalCluster.start({
    workers: 1,
    logger: process.env.CLAWRAY_LOG_LEVEL ? undefined : silentLogger,
  });
  return open(local.address, local.token, () => local.stop());
}

async function withConn<T>(opts: ConnOpts, fn: (c: Conn) => Promise<T>): Promise<T> {
  const conn = await connectTo(opts);
  try {
    return await fn(conn);
  } finally {
    await conn.close();
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A running job's log comes from its supervisor; a finished one's from the head. */
async function readLogs(conn: Conn, job: JobView, offset: number): Promise<LogChunk> {
  if (TERMINAL_STATUSES.has(job.status)) return conn.jobs.logs(job.submissionId, offset);
  const cluster = await conn.sdk();
  const supervisor = await cluster.getActor(supervisorName(job.submissionId), {
    namespace: SUPERVISOR_NAMESPACE,
  });
  return (await supervisor.call('logs', offset)) as LogChunk;
}

const toStdout = (text: string) => {
  process.stdout.write(text);
};

/**
 * Hands the job's output to `write` from the start; with `follow`, until the job has ended,
 * across restarts (each attempt's log from its start, after a note on stderr). Resolves with
 * the job as the head has it at the end.
 */
async function streamLogs(
  conn: Conn,
  submissionId: string,
  follow: boolean,
  write: (text: string) => void = toStdout,
): Promise<JobView> {
  let job = await conn.jobs.get(submissionId);
  while (follow && job.status === 'PENDING') {
    await sleep(POLL_MS);
    job = await conn.jobs.get(submissionId);
  }
  let attempt = job.attempt;
  let offset = 0;
  for (;;) {
    let chunk: LogChunk;
    try {
      chunk = await readLogs(conn, job, offset);
    } catch (err) {
      const wasTerminal = TERMINAL_STATUSES.has(job.status);
      job = await conn.jobs.get(submissionId);
      if (wasTerminal) {
        // Not even the head has it (the supervisor died with its node): the status says why.
        process.stderr.write(`clawray: the job's logs are not available: ${(err as Error).message}\n`);
        break;
      }
      if (TERMINAL_STATUSES.has(job.status)) continue; // it ended: the head has the log now
      if (!follow) {
        // Its supervisor is starting, or being replaced after the driver was lost.
        process.stderr.write(`clawray: job '${submissionId}' is ${job.status}: ${job.message}\n`);
        break;
      }
      await sleep(POLL_MS);
      continue;
    }
    if (chunk.attempt !== attempt) {
      // Another attempt's log: the job restarted; it is read from its start.
      if (chunk.attempt > attempt) {
        process.stderr.write(`clawray: job '${submissionId}' restarted (attempt ${chunk.attempt})\n`);
      }
      attempt = chunk.attempt;
      if (offset > 0) {
        offset = 0;
        continue;
      }
    }
    if (chunk.text) write(chunk.text);
    const advanced = chunk.nextOffset > offset;
    offset = chunk.nextOffset;
    if (chunk.done || (!follow && !advanced)) break;
    if (!advanced) {
      await sleep(POLL_MS);
      job = await conn.jobs.get(submissionId);
    }
  }
  job = await conn.jobs.get(submissionId);
  // The supervisor reports the final status just after the last output is readable.
  for (let i = 0; follow && !TERMINAL_STATUSES.has(job.status) && i < 40; i++) {
    await sleep(POLL_MS);
    job = await conn.jobs.get(submissionId);
  }
  return job;
}

const time = (ms?: number) => (ms ? new Date(ms).toISOString().replace('T', ' ').slice(0, 19) : '');

function describe(job: JobView): string {
  const lines = [
    `submission id: ${job.submissionId}`,
    `status:        ${job.status}`,
    `message:       ${job.message}`,
    `entrypoint:    ${job.entrypoint}`,
    `created:       ${time(job.createdAtMs)}`,
  ];
  if (job.startedAtMs) lines.push(`started:       ${time(job.startedAtMs)}`);
  if (job.endedAtMs) lines.push(`ended:         ${time(job.endedAtMs)}`);
  if (job.exitCode !== undefined) lines.push(`exit code:     ${job.exitCode}`);
  if (job.attempt > 1 || job.maxRetries > 0)
    lines.push(`attempt:       ${job.attempt} of at most ${job.maxRetries + 1}`);
  if (job.workingDirHash) lines.push(`working dir:   ${job.workingDirHash}`);
  // What the job's own process reported (an RL driver: phase, step, what its actors run on).
  for (const [key, value] of Object.entries(job.info)) lines.push(`${`${key}:`.padEnd(15)}${value}`);
  return lines.join('\n');
}

function summary(job: JobView): string {
  return JSON.stringify({
    submissionId: job.submissionId,
    status: job.status,
    exitCode: job.exitCode ?? null,
    message: job.message,
    startedAtMs: job.startedAtMs ?? null,
    endedAtMs: job.endedAtMs ?? null,
    attempt: job.attempt,
    info: job.info,
  });
}

function metadataFrom(value: string): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new ConfigError(`--metadata-json expects a JSON object of strings, got '${value}'`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ConfigError(`--metadata-json expects a JSON object of strings, got '${value}'`);
  }
  return Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k, String(v)]));
}

async function uploadWorkingDir(conn: Conn, dir: string, limitMb: number): Promise<string> {
  const path = resolve(dir);
  if (!existsSync(path) || !statSync(path).isDirectory()) {
    throw new ConfigError(`--working-dir ${dir}: not a directory`);
  }
  const pkg = await packWorkingDir(path, {
    maxBytes: limitMb * 1024 * 1024,
    limitHint: `--working-dir-limit-mb ${limitMb * 2}`,
  });
  const sent = await conn.jobs.uploadPackage(pkg.hash, pkg.bytes);
  process.stderr.write(
    `clawray: working dir ${dir}: ${pkg.files} files, ${pkg.sizeBytes} bytes${sent ? ' uploaded' : ' (already on the cluster)'}\n`,
  );
  return pkg.hash;
}

interface SubmitOpts extends ConnOpts {
  workingDir?: string;
  workingDirLimitMb: number;
  submissionId?: string;
  wait: boolean;
  json?: boolean;
  metadataJson?: string;
  set: string[];
  resume?: boolean;
  resumeFrom?: string;
  maxRetries?: number;
  stopGraceMs?: number;
}

export function registerJobCommands(program: Command): void {
  const job = program.command('job').description('submit and manage jobs (an entrypoint run on the cluster)');
  const conn = (c: Command) =>
    c
      .option('--address <host:port>', 'head address (default: CLAWRAY_ADDRESS or the local head)')
      .option('--token <token>', 'cluster token (default: CLAWRAY_TOKEN or the local token file)');

  conn(
    job
      .command('submit')
      .description(
        'run ENTRYPOINT on the cluster and follow its logs; with no cluster address, on a local cluster',
      )
      .argument(
        '<manifest-or-entrypoint...>',
        'an RLJob manifest (.yaml), or a command after --: its words are passed as they are; one word is a shell command (-- "a | b")',
      )
      .option('--working-dir <dir>', 'upload this directory and run the entrypoint in it')
      .option(
        '--working-dir-limit-mb <n>',
        'refuse a working directory larger than this, compressed',
        int('--working-dir-limit-mb'),
        DEFAULT_MAX_PACKAGE_BYTES / (1024 * 1024),
      )
      .option(
        '--submission-id <id>',
        "the job id: letters, digits, '.', '_' or '-', at most 128 (default: a generated job-…)",
        (id: string) => checkSubmissionId(id, '--submission-id'),
      )
      .option('--metadata-json <json>', 'metadata to record with the job')
      .option('--no-wait', 'return once the job is submitted')
      .option(
        '--set <path=value>',
        'manifest: override a field (YAML value), e.g. --set spec.train.steps=20; repeatable',
        (v: string, all: string[]) => [...all, v],
        [] as string[],
      )
      .option('--resume', "manifest: resume from the newest checkpoint of this job's newest run")
      .option(
        '--resume-from <submission-id[/step-N]>',
        "manifest: resume from that run's newest checkpoint, or from that step of it",
        (ref: string) => checkResumeRef(ref, undefined, '--resume-from'),
      )
      .option(
        '--max-retries <n>',
        'start the entrypoint again when its driver is lost (its node dies, or it is SIGKILLed); an error exit is final, except 75, which asks for a restart (default 0; manifests: spec.maxDriverRestarts)',
        int('--max-retries'),
      )
      .option(
        '--stop-grace-ms <ms>',
        `on stop, SIGKILL this long after SIGTERM (default ${DEFAULT_STOP_GRACE_MS}; manifests ${RLJOB_STOP_GRACE_MS}, time to checkpoint)`,
        int('--stop-grace-ms'),
      )
      .option(
        '--json',
        'end with one JSON line: {submissionId, status, …} (manifests: steps, held-out success at start and end)',
      ),
  ).action(async (entrypoint: string[], opts: SubmitOpts) => {
    const manifest = isManifestPath(entrypoint) ? entrypoint[0] : undefined;
    if (manifest && !existsSync(manifest)) throw new ConfigError(`${manifest}: no such manifest file`);
    // Fail fast, before any cluster starts: the manifest's mistakes and the local files it names.
    if (manifest) await loadSubmittedManifest(manifest, { set: opts.set, workingDir: opts.workingDir });
    else if (opts.set.length > 0 || opts.resume || opts.resumeFrom) {
      throw new ConfigError(
        `${opts.set.length > 0 ? '--set' : opts.resumeFrom ? '--resume-from' : '--resume'} applies to an RLJob manifest (clawray job submit job.yaml), not to an entrypoint command`,
      );
    } else checkEntrypoint(entrypointCommand(entrypoint)); // the head refuses it too; here before any cluster starts
    const c = await connectTo(opts, true);
    let code = 0;
    try {
      if (manifest) {
        const { job: done, summary } = await submitManifest(
          {
            ...c,
            uploadWorkingDir: (dir, limitMb) => uploadWorkingDir(c, dir, limitMb),
            followLogs: (id, write) => streamLogs(c, id, true, write),
          },
          manifest,
          {
            set: opts.set,
            resume: opts.resume,
            resumeFrom: opts.resumeFrom,
            maxRetries: opts.maxRetries,
            stopGraceMs: opts.stopGraceMs,
            workingDir: opts.workingDir,
            workingDirLimitMb: opts.workingDirLimitMb,
            submissionId: opts.submissionId,
            metadata: opts.metadataJson ? metadataFrom(opts.metadataJson) : {},
            wait: opts.wait,
          },
        );
        if (opts.wait) {
          process.stderr.write(`clawray: job '${done.submissionId}' ${done.status}: ${done.message}\n`);
          if (done.status !== 'SUCCEEDED') code = 1;
        }
        if (opts.json) process.stdout.write(`${rljobSummaryLine(done, summary)}\n`);
        else if (!opts.wait) process.stdout.write(`${done.submissionId}\n`);
      } else {
        const workingDirHash = opts.workingDir
          ? await uploadWorkingDir(c, opts.workingDir, opts.workingDirLimitMb)
          : '';
        let submitted = await c.jobs.submit({
          submissionId: opts.submissionId ?? '',
          entrypoint: entrypointCommand(entrypoint),
          workingDirHash,
          metadata: opts.metadataJson ? metadataFrom(opts.metadataJson) : {},
          maxRetries: opts.maxRetries ?? 0,
          stopGraceMs: opts.stopGraceMs ?? 0,
        });
        process.stderr.write(`clawray: job '${submitted.submissionId}' submitted\n`);
        if (opts.wait) {
          submitted = await streamLogs(c, submitted.submissionId, true);
          process.stderr.write(
            `clawray: job '${submitted.submissionId}' ${submitted.status}: ${submitted.message}\n`,
          );
          if (submitted.status !== 'SUCCEEDED') code = 1;
        }
        if (opts.json) process.stdout.write(`${summary(submitted)}\n`);
        else if (!opts.wait) process.stdout.write(`${submitted.submissionId}\n`);
      }
    } finally {
      await c.close();
    }
    process.exit(code);
  });

  conn(
    job
      .command('status')
      .description("show a job's status")
      .argument('<submission-id>')
      .option('--json', 'print JSON'),
  ).action(async (id: string, opts: ConnOpts & { json?: boolean }) => {
    const j = await withConn(opts, (c) => c.jobs.get(id));
    process.stdout.write(opts.json ? `${JSON.stringify(j, null, 2)}\n` : `${describe(j)}\n`);
  });

  conn(
    job
      .command('logs')
      .description("print a job's output")
      .argument('<submission-id>')
      .option('-f, --follow', 'keep printing until the job ends'),
  ).action(async (id: string, opts: ConnOpts & { follow?: boolean }) => {
    await withConn(opts, (c) => streamLogs(c, id, Boolean(opts.follow)));
  });

  conn(
    job
      .command('stop')
      .description("stop a job: SIGTERM to its process group, SIGKILL after the job's stop grace")
      .argument('<submission-id>')
      .option('--no-wait', 'return without waiting for the job to end'),
  ).action(async (id: string, opts: ConnOpts & { wait: boolean }) => {
    const j = await withConn(opts, async (c) => {
      let current = await c.jobs.stop(id);
      while (opts.wait && !TERMINAL_STATUSES.has(current.status)) {
        await sleep(POLL_MS);
        current = await c.jobs.get(id);
      }
      return current;
    });
    process.stdout.write(`job '${j.submissionId}' ${j.status}: ${j.message}\n`);
  });

  conn(job.command('list').description('list jobs').option('--json', 'print JSON')).action(
    async (opts: ConnOpts & { json?: boolean }) => {
      const jobs = await withConn(opts, (c) => c.jobs.list());
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(jobs, null, 2)}\n`);
        return;
      }
      process.stdout.write(
        `${table(
          ['SUBMISSION ID', 'STATUS', 'EXIT', 'STARTED', 'ENDED', 'ENTRYPOINT'],
          jobs.map((j) => [
            j.submissionId,
            j.status,
            j.exitCode === undefined ? '' : String(j.exitCode),
            time(j.startedAtMs),
            time(j.endedAtMs),
            j.entrypoint.length > 60 ? `${j.entrypoint.slice(0, 57)}...` : j.entrypoint,
          ]),
        )}\n`,
      );
    },
  );

  conn(job.command('delete').description('delete a finished job').argument('<submission-id>')).action(
    async (id: string, opts: ConnOpts) => {
      await withConn(opts, (c) => c.jobs.delete(id));
      process.stdout.write(`job '${id}' deleted\n`);
    },
  );
}
