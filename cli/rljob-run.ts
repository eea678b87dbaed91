/**
 * `clawray rljob run MANIFEST`: the RL job's driver process. `clawray job submit MANIFEST` runs
 * this as the job's entrypoint (Ray's model: the driver is just the job's process); users may
 * also run it themselves, inside a job or against a cluster (`--address`), or alone, when it
 * starts an embedded cluster.
 *
 * Exit codes: 0 when the job completed or was stopped (SIGTERM: the step in progress finishes
 * and is checkpointed), 2 for a manifest mistake, 75 (EX_TEMPFAIL) when the trainer state was
 * lost and a restarted driver can continue from the last checkpoint, 1 otherwise. The last
 * line of a finished run is `summary {JSON}`.
 */
import type { Command } from 'commander';
import { Registry } from 'prom-client';
import { writeFileAtomic } from '../common/atomic-file.js';
import { ClawrayError, ConfigError } from '../common/errors.js';
import { clawrayHome } from '../common/home.js';
import { newId } from '../common/ids.js';
import { checkSubmissionId, EXIT_RESTART } from '../common/job-names.js';
import { createLogger, silentLogger } from '../common/logger.js';
import { serveMetrics } from '../common/metrics-server.js';
import { jobStreamName } from '../common/redis-keys.js';
import { connect } from '../index.js';
import { openJobBuffer } from '../jobs/buffer/open-job-buffer.js';
import { loadManifest } from '../jobs/manifest/load.js';
import { checkLocalPaths } from '../jobs/manifest/local-paths.js';
import { RLDriver, type RLJobSummary } from '../jobs/rl/driver.js';
import { checkResumeRef } from '../jobs/rl/job-state.js';
import { reportProgress } from '../jobs/rl/progress-report.js';
import { TrainerStateLostError } from '../jobs/rl/trainer-group.js';
import { JobsClient } from '../jobs/supervisor/jobs-client.js';
import { EXIT_USAGE, exitOnError } from './cli-errors.js';
import { int } from './cli-parse.js';

/** How often a driver inside a job refreshes its metrics file. */
const METRICS_FILE_MS = 5000;
/** How often the driver's progress is checked for a change to report to the head. */
const PROGRESS_REPORT_MS = 2000;

interface RunFlags {
  set: string[];
  resume?: string | boolean;
  address?: string;
  metricsPort?: number;
}

export function registerRljobCommands(program: Command): void {
  const rljob = program.command('rljob').description('RL job drivers');
  rljob
    .command('run')
    .description('Run an RLJob manifest as this process (the entrypoint `job submit MANIFEST` uses)')
    .argument('<manifest>', 'the RLJob YAML file')
    .option(
      '--set <path=value>',
      'override a manifest field (repeatable)',
      (v, all: string[]) => [...all, v],
      [],
    )
    .option(
      '--resume [ref]',
      "start from a checkpoint: the newest run of this job's name, or SUBMISSION_ID[/step-N]",
      (ref: string) => checkResumeRef(ref),
    )
    .option('--address <host:port>', 'the cluster (default CLAWRAY_ADDRESS; none: an embedded cluster)')
    .option(
      '--metrics-port <port>',
      "serve the job's Prometheus metrics on this port (0: any)",
      int('--metrics-port'),
    )
    .action(async (file: string, flags: RunFlags) => {
      process.exitCode = await runRljob(file, flags);
    });
}

const stamp = () => new Date().toISOString().slice(11, 19);

async function runRljob(file: string, flags: RunFlags): Promise<number> {
  const resume = flags.resume === undefined ? undefined : flags.resume === true ? '' : String(flags.resume);
  const set = resume !== undefined ? [...flags.set, 'spec.checkpoint.resume=true'] : flags.set;
  const manifest = await loadManifest(file, { set }).catch((err) => exitOnError(err));
  // The files it names, where this driver resolves them (its working dir), before any cluster.
  try {
    checkLocalPaths(manifest, { file, workingDir: process.cwd() });
  } catch (err) {
    exitOnError(err);
  }
  const log = (line: string) => process.stdout.write(`${stamp()} ${line}\n`);
  // The id names the run's checkpoint folder: a hand-set CLAWRAY_JOB_ID of `..` must not climb.
  const submissionId = process.env.CLAWRAY_JOB_ID
    ? checkSubmissionId(process.env.CLAWRAY_JOB_ID, 'CLAWRAY_JOB_ID')
    : `${manifest.metadata.name}-${newId('job').slice(-8)}`;
  const attempt = Number(process.env.CLAWRAY_JOB_ATTEMPT) || 1;
  if (attempt > 1) log(`driver attempt ${attempt} of submission ${submissionId}`);
  // An embedded cluster (no address anywhere) logs only when asked to, as `job submit`'s does.
  const cluster = await connect(flags.address, {
    jobId: submissionId,
    local: { logger: process.env.CLAWRAY_LOG_LEVEL ? undefined : silentLogger },
  });
  const storeUrl = process.env.CLAWRAY_STORE_URL;
  const storeCluster = process.env.CLAWRAY_CLUSTER_NAME;
  const open = (stage: 'rollouts' | 'judged') =>
    openJobBuffer({
      redisUrl: storeUrl,
      cluster: storeCluster ?? 'default',
      name: jobStreamName(submissionId, stage),
    });
  const buffers = { rollouts: open('rollouts'), judged: open('judged') };
  log(
    `trajectory streams: ${buffers.rollouts.kind === 'redis' ? 'Redis Streams in the cluster store' : 'in memory (not durable: the cluster has no Redis store)'}`,
  );
  const registry = new Registry();
  const metrics =
    flags.metricsPort === undefined
      ? undefined
      : await serveMetrics({
          host: process.env.CLAWRAY_BIND_HOST ?? '127.0.0.1',
          port: flags.metricsPort,
          token: cluster.token,
          collect: async () => ({ contentType: registry.contentType, body: await registry.metrics() }),
        });
  if (metrics) log(`metrics on port ${metrics.port}`);
  // Inside a job, the supervisor hands these to its node's /metrics (it reads the file on scrape).
  const metricsFile = process.env.CLAWRAY_JOB_METRICS_FILE;
  const writeMetrics = async () => {
    if (metricsFile) writeFileAtomic(metricsFile, JSON.stringify(await registry.getMetricsAsJSON()));
  };
  const metricsTimer = metricsFile
    ? setInterval(() => void writeMetrics().catch(() => {}), METRICS_FILE_MS)
    : undefined;
  const driver = new RLDriver({
    cluster,
    manifest,
    workingDir: process.cwd(),
    dataDir: clawrayHome(),
    submissionId,
    buffers,
    resume,
    logger: createLogger({ component: 'rljob', jobId: submissionId }),
    log,
    registry,
  });
  // Inside a job: the head shows the driver's phase, step and runtime in `job status`.
  const jobs = process.env.CLAWRAY_JOB_ID ? new JobsClient(cluster.address, cluster.token) : undefined;
  const progress = jobs
    ? reportProgress(
        () => driver.progress(),
        (info) => jobs.reportInfo(submissionId, attempt, info),
        PROGRESS_REPORT_MS,
      )
    : undefined;
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    if (++signals > 1) process.exit(130);
    log(`${signal} received`);
    driver.requestStop();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  let code = 0;
  const printSummary = (summary: RLJobSummary) =>
    process.stdout.write(
      `${stamp()} summary ${JSON.stringify({ ...summary, history: undefined, evals: undefined })}\n`,
    );
  try {
    printSummary(await driver.run());
  } catch (err) {
    log(`the job failed: ${(err as Error).message}`);
    const partial = driver.partialSummary();
    if (partial) printSummary(partial);
    code = err instanceof TrainerStateLostError ? EXIT_RESTART : err instanceof ConfigError ? EXIT_USAGE : 1;
    if (!(err instanceof ClawrayError) && process.env.CLAWRAY_DEBUG) log(String((err as Error).stack));
  }
  try {
    // Only a restarted driver of this submission reads its streams again (`--resume` starts a
    // new submission with new streams): otherwise nothing is left that any run could use.
    if (code !== EXIT_RESTART) await Promise.all([buffers.rollouts.destroy(), buffers.judged.destroy()]);
  } finally {
    clearInterval(metricsTimer);
    await progress?.stop();
    jobs?.close();
    await writeMetrics().catch(() => {});
    await Promise.allSettled([buffers.rollouts.close(), buffers.judged.close()]);
    await metrics?.close();
    await cluster.close();
  }
  return code;
}
