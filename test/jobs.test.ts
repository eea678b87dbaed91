import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../common/errors.js';
import { distEntry } from '../common/package-root.js';
import { JobsClient } from '../jobs/supervisor/jobs-client.js';
import { eventually, fixture, TestCluster } from './helpers/processes.js';

describe('clawray job (entrypoint jobs on a cluster of real processes)', () => {
  const tc = new TestCluster();

  function clawray(args: string[]) {
    // Flags go before the subcommand's arguments: everything after `--` is the entrypoint.
    const argv = [...args.slice(0, 2), '--address', tc.head!.address, ...args.slice(2)];
    const result = spawnSync(process.execPath, [distEntry('cli/main'), ...argv], {
      encoding: 'utf8',
      env: { ...process.env, CLAWRAY_ADDRESS: '', ...tc.env },
      timeout: 30_000,
    });
    return { code: result.status, stdout: result.stdout, stderr: result.stderr };
  }

  const status = (id: string) => JSON.parse(clawray(['job', 'status', id, '--json']).stdout);

  function groupAlive(pgid: number): boolean {
    try {
      process.kill(-pgid, 0);
      return true;
    } catch {
      return false;
    }
  }

  beforeAll(async () => {
    await tc.startHead({ nodeTimeoutMs: 1500 });
    await tc.startWorker({ cpus: 2 });
    await tc.startWorker({ cpus: 2 });
  });
  afterAll(() => tc.teardown());

  it('runs an entrypoint that uses the SDK through CLAWRAY_ADDRESS, streams its logs and ends SUCCEEDED', () => {
    const run = clawray([
      'job',
      'submit',
      '--submission-id',
      'sdk-1',
      '--json',
      '--',
      process.execPath,
      fixture('job-counter.mjs'),
    ]);
    expect(run.stderr).toContain("job 'sdk-1' SUCCEEDED");
    expect(run.code).toBe(0);
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toBe('job sdk-1: counter says 42');
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({
      submissionId: 'sdk-1',
      status: 'SUCCEEDED',
      exitCode: 0,
    });

    const logs = clawray(['job', 'logs', 'sdk-1']);
    expect(logs.code).toBe(0);
    expect(logs.stdout).toBe('job sdk-1: counter says 42\n');
    expect(status('sdk-1')).toMatchObject({ status: 'SUCCEEDED', exitCode: 0 });
  });

  it('fails a job whose entrypoint exits non-zero, and submit exits non-zero', () => {
    const run = clawray([
      'job',
      'submit',
      '--submission-id',
      'bad-1',
      '--json',
      '--',
      'echo oops >&2; exit 7',
    ]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('oops');
    expect(JSON.parse(run.stdout.trim().split('\n').at(-1)!)).toMatchObject({
      status: 'FAILED',
      exitCode: 7,
      message: 'the entrypoint exited with code 7',
    });
  });

  it('runs an entrypoint given as words with quotes and parentheses as those very words', () => {
    // As a person types it: clawray job submit -- node -e "console.log('a (b)')"
    const run = clawray([
      'job',
      'submit',
      '--',
      process.execPath,
      '-e',
      "console.log('a (b)', process.argv[1])",
      'x y',
    ]);
    expect(run.stderr).not.toContain('Syntax error');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe('a (b) x y\n');
  });

  it('--working-dir uploads the directory and runs the entrypoint in it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'clawray-wd-'));
    try {
      writeFileSync(join(dir, 'data.txt'), 'payload from the working dir\n');
      const run = clawray(['job', 'submit', '--working-dir', dir, '--', 'cat data.txt']);
      expect(run.stderr).toContain('1 files');
      expect(run.code).toBe(0);
      expect(run.stdout).toBe('payload from the working dir\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a duplicate submission id', () => {
    const dup = clawray(['job', 'submit', '--no-wait', '--submission-id', 'sdk-1', '--', 'true']);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toContain("a job with submission id 'sdk-1' already exists");
  });

  it('refuses a checkpoint path as --resume-from by name, before submitting anything', () => {
    const run = clawray(['job', 'submit', '--resume-from', '/ckpt/swe-grpo/job-1/step-900', 'job.yaml']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--resume-from /ckpt/swe-grpo/job-1/step-900: expected SUBMISSION_ID');
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('--no-wait, status, logs -f and stop: STOPPED with the process group gone', async () => {
    const submitted = clawray([
      'job',
      'submit',
      '--no-wait',
      '--submission-id',
      'long-1',
      '--',
      'echo started; sleep 300 & sleep 300',
    ]);
    expect(submitted.code).toBe(0);
    expect(submitted.stdout.trim()).toBe('long-1');
    const running = await eventually(() => {
      const s = status('long-1');
      return s.status === 'RUNNING' && s.pid ? s : undefined;
    }, 15_000);
    expect(groupAlive(running.pid)).toBe(true);

    // What the job's process reports about itself (as an RL driver does) shows in `job status`.
    const jobs = new JobsClient(tc.head!.address, tc.token);
    try {
      await jobs.reportInfo('long-1', 1, { phase: 'training', step: '3/20' });
      await jobs.reportInfo('long-1', 0, { step: '4/20', runtime: 'rollout onnxruntime/cpu' });
      await jobs.reportInfo('long-1', 7, { step: 'from a replaced attempt' });
      await jobs.reportInfo('long-1', 1, { phase: '' }); // an empty value removes the key
      expect(status('long-1').info).toEqual({ step: '4/20', runtime: 'rollout onnxruntime/cpu' });
      expect(clawray(['job', 'status', 'long-1']).stdout).toMatch(/\nstep: +4\/20\nruntime: +rollout/);
      await expect(jobs.reportInfo('long-1', 1, { 'bad key': 'x' })).rejects.toThrow(
        /job info key "bad key"/,
      );
      await expect(jobs.reportInfo('long-1', 1, { step: 'x'.repeat(1025) })).rejects.toBeInstanceOf(
        ConfigError,
      );
    } finally {
      jobs.close();
    }

    const follow = spawn(
      process.execPath,
      [distEntry('cli/main'), 'job', 'logs', 'long-1', '-f', '--address', tc.head!.address],
      { env: { ...process.env, ...tc.env }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let followed = '';
    follow.stdout.on('data', (d) => {
      followed += d;
    });
    const followExit = new Promise<number | null>((r) => follow.once('exit', r));
    await eventually(() => followed.includes('started'), 10_000);

    const deleteRunning = clawray(['job', 'delete', 'long-1']);
    expect(deleteRunning.code).toBe(2);
    expect(deleteRunning.stderr).toContain('stop it before deleting it');

    const stop = clawray(['job', 'stop', 'long-1']);
    expect(stop.code).toBe(0);
    expect(stop.stdout).toContain("job 'long-1' STOPPED");
    expect(await followExit).toBe(0);
    expect(followed).toBe('started\n');
    // Killed members may linger a moment as zombies until their new parent reaps them.
    await eventually(() => !groupAlive(running.pid), 5000);
    // An ended job keeps what its last attempt reported.
    expect(status('long-1').info).toEqual({ step: '4/20', runtime: 'rollout onnxruntime/cpu' });
  });

  it('lists jobs as a table and as JSON, and deletes finished ones', () => {
    const list = clawray(['job', 'list']);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^SUBMISSION ID\s+STATUS/);
    expect(list.stdout).toMatch(/sdk-1\s+SUCCEEDED\s+0/);
    expect(list.stdout).toMatch(/bad-1\s+FAILED\s+7/);
    expect(list.stdout).toMatch(/long-1\s+STOPPED/);
    const ids = JSON.parse(clawray(['job', 'list', '--json']).stdout).map(
      (j: { submissionId: string }) => j.submissionId,
    );
    expect(ids.filter((id: string) => !id.startsWith('job-'))).toEqual(['sdk-1', 'bad-1', 'long-1']);

    expect(clawray(['job', 'delete', 'bad-1']).code).toBe(0);
    const gone = clawray(['job', 'status', 'bad-1']);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain("no job with submission id 'bad-1'");
  });

  it('fails the job when the worker hosting its supervisor dies', async () => {
    expect(
      clawray(['job', 'submit', '--no-wait', '--submission-id', 'orphan-1', '--', 'sleep 300']).code,
    ).toBe(0);
    const running = await eventually(() => {
      const s = status('orphan-1');
      return s.status === 'RUNNING' && s.nodeId ? s : undefined;
    }, 15_000);
    const worker = tc.workers.find((w) => w.nodeId === running.nodeId)!;
    expect(worker).toBeDefined();
    await worker.kill('SIGKILL');
    const failed = await eventually(() => {
      const s = status('orphan-1');
      return s.status === 'FAILED' ? s : undefined;
    }, 15_000);
    expect(failed.message).toMatch(/^the job's supervisor died: /);
    // Nothing of the entrypoint outlives its supervisor.
    await eventually(() => !groupAlive(running.pid), 5000);
  });
});
