/**
 * Job lifetime on a cluster of real processes: a job that ends releases everything it owns
 * (its supervisor included) and its log is still served by the head; a driver lost with its
 * worker, or SIGKILLed, is started again up to --max-retries, and the lost one leaves nothing
 * running; the entrypoint finds `clawray` (this install) on its PATH.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUPERVISOR_NAMESPACE } from '../common/job-names.js';
import { distEntry, packageRoot } from '../common/package-root.js';
import type { Cluster } from '../runtime/index.js';
import { eventually, fixture, TestCluster } from './helpers/processes.js';

describe('job lifetime: cleanup, logs after the supervisor, driver restarts', () => {
  const tc = new TestCluster();
  const dir = mkdtempSync(join(tmpdir(), 'clawray-job-lifetime-'));
  let cluster: Cluster;

  function clawray(args: string[], timeoutMs = 60_000) {
    // Flags go before the subcommand's arguments: everything after `--` is the entrypoint.
    const argv = [...args.slice(0, 2), '--address', tc.head!.address, ...args.slice(2)];
    const result = spawnSync(process.execPath, [distEntry('cli/main'), ...argv], {
      encoding: 'utf8',
      env: { ...process.env, CLAWRAY_ADDRESS: '', ...tc.env },
      timeout: timeoutMs,
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: result.status, stdout: result.stdout, stderr: result.stderr };
  }

  const status = (id: string) => JSON.parse(clawray(['job', 'status', id, '--json']).stdout);

  /** Processes whose command line contains `marker` (pgrep -f). */
  function processesWith(marker: string): string[] {
    const r = spawnSync('pgrep', ['-f', marker], { encoding: 'utf8' });
    return r.stdout.split('\n').filter(Boolean);
  }

  async function freeCpus(): Promise<number> {
    const s = await cluster.status();
    return s.nodes.filter((n) => n.state === 'ALIVE').reduce((sum, n) => sum + (n.available.CPU ?? 0), 0);
  }

  async function supervisorsOf(id: string) {
    return (await cluster.listActors({ jobId: id })).filter((a) => a.name.startsWith('supervisor:'));
  }

  /** A shell entrypoint that records its attempt, then sleeps on attempt 1 (and in a child). */
  function attemptScript(name: string, marker: string): string {
    const script = join(dir, `${name}.sh`);
    writeFileSync(
      script,
      [
        `echo "$CLAWRAY_JOB_ATTEMPT" >> ${join(dir, `${name}.attempts`)}`,
        `echo "attempt $CLAWRAY_JOB_ATTEMPT on its way"`,
        `if [ "$CLAWRAY_JOB_ATTEMPT" = 1 ]; then sleep ${marker} & sleep ${marker}; fi`,
        `echo "attempt $CLAWRAY_JOB_ATTEMPT done"`,
        '',
      ].join('\n'),
    );
    return script;
  }

  beforeAll(async () => {
    await tc.startHead({ nodeTimeoutMs: 1500 });
    await tc.startWorker({ cpus: 2 });
    await tc.startWorker({ cpus: 2 });
    cluster = await tc.connect();
  });
  afterAll(async () => {
    await tc.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  it("kills the actors and placement groups a job's entrypoint left behind, and frees their resources", async () => {
    const before = await freeCpus();
    const run = clawray([
      'job',
      'submit',
      '--submission-id',
      'leaker-1',
      '--',
      process.execPath,
      fixture('job-leaker.mjs'),
    ]);
    expect(run.stderr).toContain("job 'leaker-1' SUCCEEDED");
    const [, looseId, groupedId, pgId, value] = run.stdout.trim().split(' ');
    expect(value).toBe('1');

    const actors = await eventually(async () => {
      const list = await cluster.listActors({ jobId: 'leaker-1' });
      return list.every((a) => a.state === 'DEAD') ? list : undefined;
    }, 15_000);
    // Its two actors and its supervisor, all gone.
    expect(actors.map((a) => a.actorId)).toEqual(expect.arrayContaining([looseId, groupedId]));
    expect(actors.filter((a) => a.namespace === SUPERVISOR_NAMESPACE)).toHaveLength(1);
    expect(pgId).toMatch(/^pg_/);
    // The only group of the cluster was the job's.
    expect((await cluster.status()).placementGroups).toEqual([]);
    await eventually(async () => (await freeCpus()) === before, 10_000);
  });

  it("serves a finished job's log from the head once its supervisor is gone, the local file removed", async () => {
    const run = clawray(['job', 'submit', '--submission-id', 'logs-1', '--', 'echo hello; echo world >&2']);
    expect(run.code).toBe(0);
    await eventually(async () => (await supervisorsOf('logs-1')).every((a) => a.state === 'DEAD'), 10_000);
    const logs = clawray(['job', 'logs', 'logs-1']);
    expect(logs.code).toBe(0);
    expect(logs.stdout).toBe('hello\nworld\n');
    const followed = clawray(['job', 'logs', 'logs-1', '-f']);
    expect(followed.stdout).toBe('hello\nworld\n');
    expect(existsSync(join(tc.home, 'logs', 'jobs', 'logs-1.1.log'))).toBe(false);
  });

  it('keeps the last 8 MiB of a long log, cut at a line, and says so', async () => {
    // 10 MiB of 100-byte lines, then a last line.
    const entrypoint = `awk 'BEGIN { for (i = 0; i < 104858; i++) printf "%099d\\n", i; print "the last line" }'`;
    const run = clawray(['job', 'submit', '--no-wait', '--submission-id', 'biglog-1', '--', entrypoint]);
    expect(run.code).toBe(0);
    await eventually(() => status('biglog-1').status === 'SUCCEEDED', 30_000, 200);
    await eventually(async () => (await supervisorsOf('biglog-1')).every((a) => a.state === 'DEAD'), 10_000);
    const logs = clawray(['job', 'logs', 'biglog-1']);
    expect(logs.code).toBe(0);
    const lines = logs.stdout.split('\n');
    expect(lines[0]).toMatch(
      /^\[clawray: the first \d+ bytes of this log were cut; the cluster keeps the last 8 MiB\]$/,
    );
    expect(lines[1]).toMatch(/^\d{99}$/);
    expect(lines.at(-2)).toBe('the last line');
    expect(logs.stdout.length).toBeLessThanOrEqual(8 * 1024 * 1024 + lines[0].length + 1);
  });

  it("puts this install's clawray on the entrypoint's PATH and lets its scripts import clawray", () => {
    const wd = join(dir, 'wd');
    execFileSync('mkdir', ['-p', wd]);
    writeFileSync(
      join(wd, 'probe.mjs'),
      "import { connect } from 'clawray';\nconsole.log('import:', typeof connect);\n",
    );
    const version = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')).version as string;
    const run = clawray([
      'job',
      'submit',
      '--working-dir',
      wd,
      '--',
      'clawray --version && clawray status --json >/dev/null && echo status-ok && node probe.mjs && command -v clawray',
    ]);
    expect(run.stderr).toContain('SUCCEEDED');
    const lines = run.stdout.trim().split('\n');
    expect(lines.slice(0, 3)).toEqual([version, 'status-ok', 'import: function']);
    expect(lines[3].startsWith(join(tc.home, 'bin'))).toBe(true);
  });

  it('restarts an entrypoint that was SIGKILLed; an error exit is not restarted', async () => {
    const marker = '3000.4242';
    const script = attemptScript('killed', marker);
    expect(
      clawray([
        'job',
        'submit',
        '--no-wait',
        '--submission-id',
        'killed-1',
        '--max-retries',
        '1',
        '--',
        `sh ${script}`,
      ]).code,
    ).toBe(0);
    const running = await eventually(() => {
      const s = status('killed-1');
      return s.status === 'RUNNING' && s.pid && processesWith(marker).length === 2 ? s : undefined;
    }, 15_000);
    process.kill(running.pid, 'SIGKILL');
    const done = await eventually(() => {
      const s = status('killed-1');
      return s.status === 'SUCCEEDED' ? s : undefined;
    }, 20_000);
    expect(done.attempt).toBe(2);
    expect(readFileSync(join(dir, 'killed.attempts'), 'utf8')).toBe('1\n2\n');
    const logs = clawray(['job', 'logs', 'killed-1']).stdout;
    expect(logs).toBe(
      '[clawray: attempt 2; the previous one ended: the entrypoint was killed by SIGKILL]\nattempt 2 on its way\nattempt 2 done\n',
    );
    await eventually(() => processesWith(marker).length === 0, 5000);

    // Exit 75 asks for a restart; any other error exit is final.
    const again = clawray([
      'job',
      'submit',
      '--submission-id',
      'again-1',
      '--max-retries',
      '1',
      '--',
      'echo "attempt $CLAWRAY_JOB_ATTEMPT"; [ "$CLAWRAY_JOB_ATTEMPT" = 2 ] || exit 75',
    ]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('attempt 2\n');
    expect(clawray(['job', 'logs', 'again-1']).stdout).toBe(
      '[clawray: attempt 2; the previous one ended: the entrypoint asked to be restarted (exit 75)]\nattempt 2\n',
    );
    expect(status('again-1')).toMatchObject({ status: 'SUCCEEDED', attempt: 2 });
    const failing = clawray([
      'job',
      'submit',
      '--submission-id',
      'exit-1',
      '--max-retries',
      '2',
      '--',
      'exit 3',
    ]);
    expect(failing.code).toBe(1);
    expect(status('exit-1')).toMatchObject({ status: 'FAILED', exitCode: 3, attempt: 1 });
  }, 120_000);

  // Up to 100 log polls and five CLI calls, each a child process: 16 s alone, 88 s (and a failure
  // on vitest's default 60 s) beside two busy test workers.
  it("gives a stopped job's whole process group its own stop grace before SIGKILL", () => {
    // The shell dies of the SIGTERM at once; the program it started takes 4 s (more than the
    // default grace) to finish its graceful exit.
    const driver = join(dir, 'graceful.mjs');
    writeFileSync(
      driver,
      [
        "process.on('SIGTERM', () => setTimeout(() => { console.log('stopped gracefully'); process.exit(0); }, 4000));",
        "console.log('up');",
        'setInterval(() => {}, 1000);',
        '',
      ].join('\n'),
    );
    const entrypoint = `${process.execPath} ${driver}; echo never`;
    expect(
      clawray([
        'job',
        'submit',
        '--no-wait',
        '--submission-id',
        'grace-1',
        '--stop-grace-ms',
        '30000',
        '--',
        entrypoint,
      ]).code,
    ).toBe(0);
    expect(status('grace-1').stopGraceMs).toBe(30_000);
    // Started (its handler is installed) before the stop.
    const logsUp = () => clawray(['job', 'logs', 'grace-1']).stdout.includes('up');
    for (let i = 0; i < 100 && !logsUp(); i++) spawnSync('sleep', ['0.1']);
    const stop = clawray(['job', 'stop', 'grace-1']);
    expect(stop.stdout).toContain("job 'grace-1' STOPPED");
    expect(status('grace-1')).toMatchObject({ status: 'STOPPED', exitCode: 143 });
    expect(clawray(['job', 'logs', 'grace-1']).stdout).toBe('up\nstopped gracefully\n');
  }, 180_000);

  it('restarts a driver lost with its worker on the other worker (max_retries 1), leaving nothing of the old one', async () => {
    const marker = '3000.5151';
    const script = attemptScript('lost', marker);
    expect(
      clawray([
        'job',
        'submit',
        '--no-wait',
        '--submission-id',
        'lost-1',
        '--max-retries',
        '1',
        '--',
        `sh ${script}`,
      ]).code,
    ).toBe(0);
    const running = await eventually(() => {
      const s = status('lost-1');
      return s.status === 'RUNNING' && s.nodeId && processesWith(marker).length === 2 ? s : undefined;
    }, 15_000);
    const worker = tc.workers.find((w) => w.nodeId === running.nodeId)!;
    await worker.kill('SIGKILL');
    // Nobody can reach a dead node: the old driver dies by itself, with its supervisor's host
    // (which exits when its node agent goes) through the supervisor's watchdog.
    await eventually(() => processesWith(marker).length === 0, 5000);
    const done = await eventually(() => {
      const s = status('lost-1');
      return s.status === 'SUCCEEDED' ? s : undefined;
    }, 30_000);
    expect(done.attempt).toBe(2);
    expect(done.nodeId).not.toBe(running.nodeId);
    expect(readFileSync(join(dir, 'lost.attempts'), 'utf8')).toBe('1\n2\n');
    expect(clawray(['job', 'logs', 'lost-1']).stdout).toMatch(
      /^\[clawray: attempt 2; the previous one ended: the job's supervisor died: .*\]\nattempt 2 on its way\nattempt 2 done\n$/,
    );
    const supervisors = await supervisorsOf('lost-1');
    expect(supervisors).toHaveLength(2);
    expect(supervisors.every((a) => a.state === 'DEAD')).toBe(true);
  });

  it('fails a job whose driver is lost with its worker when max_retries is 0', async () => {
    await tc.startWorker({ cpus: 2 });
    const marker = '3000.6161';
    const script = attemptScript('final', marker);
    expect(
      clawray([
        'job',
        'submit',
        '--no-wait',
        '--submission-id',
        'final-1',
        '--max-retries',
        '0',
        '--',
        `sh ${script}`,
      ]).code,
    ).toBe(0);
    const running = await eventually(() => {
      const s = status('final-1');
      return s.status === 'RUNNING' && s.nodeId && processesWith(marker).length === 2 ? s : undefined;
    }, 15_000);
    await tc.workers.find((w) => w.nodeId === running.nodeId)!.kill('SIGKILL');
    const failed = await eventually(() => {
      const s = status('final-1');
      return s.status === 'FAILED' ? s : undefined;
    }, 15_000);
    expect(failed.message).toMatch(/^the job's supervisor died: /);
    expect(failed.attempt).toBe(1);
    expect(readFileSync(join(dir, 'final.attempts'), 'utf8')).toBe('1\n');
    await eventually(() => processesWith(marker).length === 0, 5000);
    const logs = clawray(['job', 'logs', 'final-1']);
    expect(logs.stderr).toContain("the job's logs are not available");
  });
});
