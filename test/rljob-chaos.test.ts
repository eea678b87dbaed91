/**
 * RL jobs under chaos (issue 13): a multi-process cluster on Redis with three workers runs a
 * toolcall job while the test SIGKILLs a worker hosting rollout engines, later one hosting a
 * trainer shard, later the head (restarted on the same store); a second job loses the worker
 * its driver runs on. Each killed worker is replaced by a new one, as a node pool would. Both
 * jobs must SUCCEED with no trajectory lost or trained twice, and leave the cluster's free
 * resources where they were.
 */
import { execFile } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { SUPERVISOR_NAMESPACE, supervisorName } from '../common/job-names.js';
import { distEntry } from '../common/package-root.js';
import type { LogChunk } from '../jobs/supervisor/jobs-client.js';
import type { Cluster, ClusterStatusView } from '../runtime/index.js';
import { eventually, type Proc, TestCluster } from './helpers/processes.js';

const execFileAsync = promisify(execFile);

// Enough steps that the three kills land while the job runs (a step takes 0.3–2 s here; the
// test holds the job while it finds each worker to kill, see REWARD).
const STEPS = 20;
const WORKER = { cpus: 6, gpus: 2, poolSize: 0 } as const;

const MANIFEST = (name: string) => `apiVersion: clawray.dev/v1
kind: RLJob
metadata: { name: ${name} }
spec:
  track: toolcall
  method: rl
  model: { path: ./model, init: { preset: tiny } }
  resources:
    rollout: { replicas: 2, gpus: 0.5, strategy: SPREAD }
    trainer: { shards: 2, gpus: 0.5, strategy: SPREAD }
  rollout: { batchSize: 2, samplesPerPrompt: 2, maxTurns: 2, maxTokens: 12, temperature: 1.0 }
  train: { steps: ${STEPS}, lr: 1.0e-3, maxStaleness: 1 }
  env: { parallel: 2, settings: { tools: [calculator], systemPrompt: Use the calculator. } }
  judge: { votes: 1 }
  eval: { everySteps: 0 }
  checkpoint: { everySteps: 2 }
  maxDriverRestarts: 2
  plugins: { reward: ./reward.mjs }
`;

/**
 * Every group gets a learning signal, so every step trains (a random policy earns −1 everywhere).
 * While the file `hold` exists the reward waits: the test holds the job where it is while it
 * finds the worker to kill, so that a job running faster than the test can watch it (steps of
 * 0.3 s, a test slowed by load) cannot finish before the kill lands.
 */
const REWARD = (hold: string) => `import { existsSync } from 'node:fs';
export default async ({ messages }) => {
  while (existsSync(${JSON.stringify(hold)})) await new Promise((r) => setTimeout(r, 50));
  return JSON.stringify(messages).length % 2 ? 1 : -1;
};
`;

/** Free and total resources of the cluster, summed over alive nodes. */
function freeResources(s: ClusterStatusView) {
  const sum = (pick: (n: ClusterStatusView['nodes'][number]) => Record<string, number>) => {
    const out: Record<string, number> = {};
    for (const n of s.nodes.filter((n) => n.state === 'ALIVE')) {
      for (const [k, v] of Object.entries(pick(n))) out[k] = Math.round(((out[k] ?? 0) + v) * 1000) / 1000;
    }
    return out;
  };
  return { available: sum((n) => n.available), total: sum((n) => n.total) };
}

describe('RL jobs under chaos (multi-process cluster on Redis, three workers)', () => {
  let tc: TestCluster;
  let dir: string;
  afterEach(async () => {
    await tc.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  async function setup(name: string) {
    tc = new TestCluster();
    dir = mkdtempSync(join(tmpdir(), 'clawray-chaos-'));
    await tc.startHead({ store: inject('redisUrl'), clusterName: `chaos${Date.now()}`, nodeTimeoutMs: 3000 });
    for (let i = 0; i < 3; i++) await tc.startWorker(WORKER);
    const jobDir = join(dir, name);
    mkdirSync(jobDir, { recursive: true });
    writeFileSync(join(jobDir, 'job.yaml'), MANIFEST(name));
    writeFileSync(join(jobDir, 'reward.mjs'), REWARD(join(dir, 'hold')));
    const cluster = await tc.connect({ headRetryMs: 60_000 });
    return { cluster, file: join(jobDir, 'job.yaml') };
  }

  async function clawray(args: string[], timeoutMs = 30_000) {
    const argv = [...args.slice(0, 2), '--address', tc.head!.address, ...args.slice(2)];
    return execFileAsync(process.execPath, [distEntry('cli/main'), ...argv], {
      env: { ...process.env, CLAWRAY_ADDRESS: '', ...tc.env },
      timeout: timeoutMs,
      maxBuffer: 64 * 1024 * 1024,
    });
  }

  /**
   * The highest `step N/M:` line in the running job's log so far, read from its supervisor in
   * this process (a `clawray job logs` process a poll takes seconds to start under load).
   */
  async function stepOf(cluster: Cluster, id: string): Promise<number> {
    try {
      const supervisor = await cluster.getActor(supervisorName(id), { namespace: SUPERVISOR_NAMESPACE });
      const { text } = (await supervisor.call('logs', 0)) as LogChunk;
      const steps = [...text.matchAll(/ step (\d+)\/\d+: reward/g)].map((m) => Number(m[1]));
      return steps.length ? Math.max(...steps) : 0;
    } catch {
      return 0; // between attempts, or the head restarting
    }
  }

  /** Holds the job at its next reward (see REWARD) until `release`. */
  const hold = () => writeFileSync(join(dir, 'hold'), '');
  const release = () => rmSync(join(dir, 'hold'), { force: true });

  /** The worker process hosting an ALIVE actor of `className` for job `id` (not `avoid`'s node). */
  async function workerHosting(
    cluster: Cluster,
    id: string,
    className: string,
    avoid?: string,
  ): Promise<Proc> {
    let seen = '';
    const found = await eventually(
      async () => {
        if (jobEnded) return 'ended' as const; // nothing of it is left to find
        const alive = await cluster.listActors({ state: 'ALIVE' });
        const actors = alive.filter(
          (a) => a.className === className && (className === 'JobSupervisor' || a.jobId === id),
        );
        const nodes = actors.map((a) => a.nodeId).filter((n) => n !== avoid);
        // Every ALIVE actor of the class with its job, in case the filter is what misses it.
        const ofClass = alive.filter((a) => a.className === className).map((a) => `${a.jobId}@${a.nodeId}`);
        seen = `${className} on [${nodes.join(', ')}] (all ALIVE of the class: [${ofClass.join(', ')}]), workers [${tc.workers.map((w) => `${w.nodeId}${w.child.exitCode === null ? '' : ' (exited)'}`).join(', ')}]`;
        const found = tc.workers.find((w) => nodes.includes(w.nodeId) && w.child.exitCode === null);
        // The last check's view goes into the failure, so that one says where the actor was.
        if (!found) throw new Error(seen);
        return found;
      },
      // A killed worker's actors come back within seconds alone; beside two busy test workers
      // (load 7 on 2 cores, 3 s node timeouts) once none of the trainer shards was up for 60 s.
      180_000,
      500,
    ).catch((err: unknown) => {
      throw new Error(`no live worker hosts ${seen || className}`, { cause: err });
    });
    if (found === 'ended') throw new Error(`job ${id} ended before a worker hosting ${className} was killed`);
    return found;
  }

  /**
   * Kills what `find` returns while the job runs, whatever the test's own pace: the job is held
   * while `find` looks (the CLAWRAY_CHAOS_LOG line is written then), released just before the
   * SIGKILL, and held again while `replace` brings up the replacement (a new worker, the head
   * restarted), so that it cannot run to its end meanwhile.
   */
  async function killHeld<T extends Proc>(
    find: () => Promise<T>,
    replace: () => Promise<unknown>,
    cluster?: Cluster,
  ): Promise<void> {
    hold();
    try {
      const target = await find();
      if (process.env.CLAWRAY_CHAOS_LOG && cluster) {
        const on = (await cluster.listActors({ state: 'ALIVE' })).filter((a) => a.nodeId === target.nodeId);
        appendFileSync(
          process.env.CLAWRAY_CHAOS_LOG,
          `${new Date().toISOString().slice(11, 19)} killing ${target.nodeId}: ${on.map((a) => a.className).join(', ')}\n`,
        );
      }
      release();
      await target.kill('SIGKILL');
      hold();
      await replace();
    } finally {
      release();
    }
  }

  /** Kills the worker `find` returns (see killHeld) and starts a new one, as a node pool would. */
  async function killWorker(find: () => Promise<Proc>, cluster?: Cluster): Promise<void> {
    let killed: Proc | undefined;
    await killHeld(
      async () => {
        killed = await find();
        return killed;
      },
      async () => {
        tc.workers.splice(tc.workers.indexOf(killed!), 1);
        await tc.startWorker(WORKER);
      },
      cluster,
    );
  }

  async function supervisorNode(cluster: Cluster, id: string): Promise<string> {
    const sup = (await cluster.listActors({ state: 'ALIVE', jobId: id })).find(
      (a) => a.className === 'JobSupervisor',
    );
    return sup?.nodeId ?? '';
  }

  let jobEnded = false;
  let lastRun: ReturnType<typeof clawray> | undefined;

  /** Submits and follows the job; a wait for a step fails at once if the job has ended. */
  function submit(file: string, id: string) {
    jobEnded = false;
    const run = clawray(['job', 'submit', file, '--submission-id', id, '--json'], 900_000);
    lastRun = run;
    run.then(
      () => {
        jobEnded = true;
      },
      () => {
        jobEnded = true;
      },
    );
    return run;
  }

  async function untilStep(cluster: Cluster, id: string, step: number): Promise<void> {
    const deadline = Date.now() + 300_000;
    while ((await stepOf(cluster, id)) < step) {
      if (jobEnded) {
        const out = await lastRun!.then(
          (r) => `${r.stdout}\n${r.stderr}`,
          (e: { stdout?: string; stderr?: string; message: string }) =>
            `${e.stdout ?? ''}\n${e.stderr ?? e.message}`,
        );
        throw new Error(`job ${id} ended before step ${step}:\n${out.slice(-4000)}`);
      }
      if (Date.now() > deadline) throw new Error(`job ${id} did not reach step ${step}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /** The job's result; a job that failed throws with the tail of its log (what went wrong). */
  async function finished(job: ReturnType<typeof clawray>, id: string) {
    try {
      return await job;
    } catch (err) {
      const { stdout } = await clawray(['job', 'logs', id]).catch(() => ({ stdout: '(no log)' }));
      throw new Error(`${(err as Error).message}\njob ${id}'s log, last lines:\n${stdout.slice(-6000)}`);
    }
  }

  /** The summary line; with CLAWRAY_CHAOS_LOG set, the job's output goes to that file too (recovery times). */
  function summaryOf(stdout: string) {
    if (process.env.CLAWRAY_CHAOS_LOG) appendFileSync(process.env.CLAWRAY_CHAOS_LOG, stdout);
    return JSON.parse(stdout.trim().split('\n').at(-1)!);
  }

  async function expectNothingLeft(cluster: Cluster, id: string, before: ReturnType<typeof freeResources>) {
    await eventually(
      async () => {
        const s = await cluster.status();
        const left = s.actors.filter((a) => a.jobId === id && a.state !== 'DEAD');
        const now = freeResources(s);
        return left.length === 0 && JSON.stringify(now) === JSON.stringify(before) ? true : undefined;
      },
      30_000,
      500,
    );
    const { stdout } = await clawray(['status', '--json']);
    const status = JSON.parse(stdout);
    expect(status.placementGroups.filter((g: { state: string }) => g.state !== 'REMOVED')).toEqual([]);
  }

  it('survives SIGKILL of a rollout worker, a trainer worker and the head: SUCCEEDED, nothing lost or doubled', async () => {
    const { cluster, file } = await setup('chaos');
    const before = freeResources(await cluster.status());
    const id = 'chaos-1';
    const job = submit(file, id);

    await untilStep(cluster, id, 2);
    const driverNode = await supervisorNode(cluster, id);
    await killWorker(() => workerHosting(cluster, id, 'RolloutEngine', driverNode), cluster);

    await untilStep(cluster, id, 5);
    await killWorker(
      async () => workerHosting(cluster, id, 'TrainerShard', await supervisorNode(cluster, id)),
      cluster,
    );

    await untilStep(cluster, id, 8);
    await killHeld(
      async () => tc.head!,
      () => tc.restartHead(),
    );

    const { stdout } = await finished(job, id);
    const summary = summaryOf(stdout);
    expect(summary).toMatchObject({ submissionId: id, status: 'SUCCEEDED', steps: STEPS });
    expect(summary.trajectories.lost).toBe(0);
    expect(summary.trajectories.duplicated).toBe(0);
    expect(summary.trajectories.trained).toBeGreaterThan(0);
    expect(summary.recoveries.engines + summary.recoveries.trainers).toBeGreaterThan(0);
    await expectNothingLeft(cluster, id, before);
  }, 900_000);

  it('restarts the driver when its worker dies and continues from its checkpoint and streams', async () => {
    const { cluster, file } = await setup('chaos-driver');
    const before = freeResources(await cluster.status());
    const id = 'chaos-2';
    const job = submit(file, id);
    await untilStep(cluster, id, 3);
    await killWorker(() => workerHosting(cluster, id, 'JobSupervisor'));

    const { stdout } = await finished(job, id);
    const summary = summaryOf(stdout);
    expect(summary).toMatchObject({ submissionId: id, status: 'SUCCEEDED', steps: STEPS });
    expect(summary.trajectories.lost).toBe(0);
    expect(summary.trajectories.duplicated).toBe(0);
    const { stdout: log } = await clawray(['job', 'logs', id]);
    expect(log).toMatch(/continuing submission chaos-2 from its checkpoint at step \d+/);
    await expectNothingLeft(cluster, id, before);
  }, 900_000);
});
