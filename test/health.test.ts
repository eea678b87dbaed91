/**
 * The gRPC health service of heads and workers (what Kubernetes probes and the images'
 * HEALTHCHECK ask) and `clawray health`, against real processes.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../bench/redis-server.js';
import {
  checkHealth,
  HEAD_READINESS_SERVICE,
  LIVENESS_SERVICE,
  WORKER_READINESS_SERVICE,
} from '../common/health.js';
import { distEntry } from '../common/package-root.js';
import { eventually, fixture, type Proc, startProc, TestCluster } from './helpers/processes.js';

function health(args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, [distEntry('cli/main'), 'health', ...args], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { code: r.status, out: r.stdout.trim(), err: r.stderr.trim() };
}

describe('gRPC health of heads and workers', () => {
  const tc = new TestCluster();
  let worker: Proc | undefined;
  let headPort = 0;
  let workerAddress = '';

  afterAll(async () => {
    await worker?.kill('SIGKILL');
    await tc.teardown();
  });

  it('a worker is alive but not ready until it has registered with its head', async () => {
    headPort = await freePort();
    const workerPort = await freePort();
    workerAddress = `127.0.0.1:${workerPort}`;
    // The worker prints its start line only once registered, so wait for its log line instead.
    worker = await startProc(
      ['worker', 'start', '--head', `127.0.0.1:${headPort}`, '--port', String(workerPort), '--gpus', '0'],
      tc.env,
      /waiting for the head/,
    );
    expect(await checkHealth(workerAddress, LIVENESS_SERVICE)).toBe('SERVING');
    expect(await checkHealth(workerAddress, WORKER_READINESS_SERVICE)).toBe('NOT_SERVING');

    await tc.startHead({ port: headPort });
    await eventually(
      async () => (await checkHealth(workerAddress, WORKER_READINESS_SERVICE)) === 'SERVING',
      20_000,
    );
    expect(await checkHealth(tc.head!.address, HEAD_READINESS_SERVICE)).toBe('SERVING');
    expect(await checkHealth(tc.head!.address, 'no.such.Service')).toBe('SERVICE_UNKNOWN');
  });

  it('answers without the cluster token, which the RPCs still require', async () => {
    const r = health(['--address', tc.head!.address, '--service', HEAD_READINESS_SERVICE], {
      CLAWRAY_TOKEN: '',
      CLAWRAY_HOME: '/nonexistent',
    });
    expect(r).toMatchObject({ code: 0, out: 'SERVING' });
    const status = spawnSync(
      process.execPath,
      [distEntry('cli/main'), 'status', '--address', tc.head!.address, '--token', 'wrong'],
      { encoding: 'utf8', timeout: 20_000 },
    );
    expect(status.status).toBe(2);
    expect(status.stderr).toMatch(/wrong or missing cluster token/);
  });

  it('`clawray health` reads CLAWRAY_HEALTH_ADDRESS and exits 1 for a service that is not SERVING', () => {
    expect(health([], { CLAWRAY_HEALTH_ADDRESS: workerAddress })).toMatchObject({ code: 0, out: 'SERVING' });
    expect(health(['--service', 'no.such.Service'], { CLAWRAY_HEALTH_ADDRESS: workerAddress })).toMatchObject(
      {
        code: 1,
        out: 'SERVICE_UNKNOWN',
      },
    );
  });

  it('`clawray health` fails in one line when nothing listens', async () => {
    const r = health(['--address', `127.0.0.1:${await freePort()}`, '--timeout-ms', '1000']);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^clawray: no health answer from 127\.0\.0\.1:\d+ within 1000 ms/);
    expect(r.err.split('\n')).toHaveLength(1);
  });

  it('a draining worker turns not ready while its actors stop, then leaves', async () => {
    const cluster = await tc.connect();
    const actor = await cluster.createActor({ module: fixture('slow-dispose.mjs'), className: 'SlowToStop' });
    expect(await actor.call('ping')).toBe('pong');
    worker!.child.kill('SIGTERM');
    // The actor's graceful stop takes a while; meanwhile the worker is alive but not ready.
    await eventually(
      async () => (await checkHealth(workerAddress, WORKER_READINESS_SERVICE, 500)) === 'NOT_SERVING',
    );
    expect(await checkHealth(workerAddress, LIVENESS_SERVICE, 500)).toBe('SERVING');
    expect(await worker!.exited).toBe(0);
  });
});
