import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { distEntry } from '../common/package-root.js';
import { eventually, fixture, pidAlive, TestCluster } from './helpers/processes.js';

function clawray(args: string[], env: NodeJS.ProcessEnv = {}) {
  const result = spawnSync(process.execPath, [distEntry('cli/main'), ...args], {
    encoding: 'utf8',
    env: { ...process.env, CLAWRAY_ADDRESS: '', CLAWRAY_TOKEN: '', ...env },
    timeout: 30_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('clawray CLI against a running cluster', () => {
  const tc = new TestCluster();
  beforeAll(async () => {
    await tc.startHead();
    await tc.startWorker({ gpus: 2, labels: { pool: 'gpu' } });
    const cluster = await tc.connect();
    await cluster.createActor({
      module: fixture('counter.mjs'),
      className: 'Counter',
      options: { numGpus: 0.5 },
    });
    await cluster.createPlacementGroup({ bundles: [{ numGpus: 1 }], strategy: 'PACK', name: 'trainers' });
  });
  afterAll(() => tc.teardown());

  it('status --json shows nodes with total and available resources, actors and groups', () => {
    const { code, stdout } = clawray(['status', '--json', '--address', tc.head!.address], tc.env);
    expect(code).toBe(0);
    const status = JSON.parse(stdout);
    expect(status.nodes).toHaveLength(1);
    expect(status.nodes[0].total.GPU).toBe(2);
    expect(status.nodes[0].available.GPU).toBe(0.5);
    expect(status.nodes[0].labels.pool).toBe('gpu');
    expect(status.actors[0].state).toBe('ALIVE');
    expect(status.placementGroups[0].name).toBe('trainers');
  });

  it('status prints a readable table, finding the head through CLAWRAY_ADDRESS', () => {
    const { code, stdout } = clawray(['status'], { ...tc.env, CLAWRAY_ADDRESS: tc.head!.address });
    expect(code).toBe(0);
    expect(stdout).toContain('ALIVE');
    expect(stdout).toContain('GPU 0.5/2');
    expect(stdout).toContain('actors: 1 ALIVE');
    expect(stdout).toContain('trainers');
  });

  it('actors list shows state, node and GPU ids, as text and --json', () => {
    const json = clawray(['actors', 'list', '--json', '--address', tc.head!.address], tc.env);
    expect(json.code).toBe(0);
    const [actor] = JSON.parse(json.stdout);
    expect(actor.className).toBe('Counter');
    expect(actor.gpuIds).toHaveLength(1);
    const text = clawray(['actors', 'list', '--address', tc.head!.address], tc.env);
    expect(text.stdout).toMatch(/Counter\s+ALIVE\s+node_\w+\s+\d\(0\.5\)/);
  });

  it('says what is wrong, without a stack trace, and exits 2 for user mistakes', () => {
    const empty = mkdtempSync(join(tmpdir(), 'clawray-empty-'));
    try {
      const noAddress = clawray(['status'], { CLAWRAY_HOME: empty });
      expect(noAddress.code).toBe(2);
      expect(noAddress.stderr).toContain('no cluster address');
      expect(noAddress.stderr).not.toMatch(/\n\s+at /);
      const badToken = clawray(['status', '--address', tc.head!.address, '--token', 'nope'], {
        CLAWRAY_HOME: empty,
      });
      expect(badToken.code).toBe(2);
      expect(badToken.stderr).toContain('wrong or missing cluster token');
      const badFlag = clawray(['worker', 'start', '--head', tc.head!.address, '--gpus', 'many'], tc.env);
      expect(badFlag.code).toBe(2);
      expect(badFlag.stderr).toContain("--gpus expects a whole number ≥ 0, got 'many'");
      const badEnv = clawray(['worker', 'start', '--head', tc.head!.address], {
        ...tc.env,
        CLAWRAY_GPUS: 'lots',
      });
      expect(badEnv.code).toBe(2);
      expect(badEnv.stderr).toContain("CLAWRAY_GPUS expects a whole number ≥ 0, got 'lots'");
      const workerBadToken = clawray(
        ['worker', 'start', '--head', tc.head!.address, '--token', 'nope', '--gpus', '0'],
        {
          CLAWRAY_HOME: empty,
        },
      );
      expect(workerBadToken.code).toBe(2);
      expect(workerBadToken.stderr).toContain('wrong or missing cluster token');
      const badStore = clawray(['head', 'start', '--port', '0', '--store', 'postgres://x'], {
        CLAWRAY_HOME: empty,
      });
      expect(badStore.code).toBe(2);
      expect(badStore.stderr).toContain('--store expects memory');
      expect(badStore.stderr).not.toMatch(/\n\s+at /);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe('clawray start --local', () => {
  let child: ChildProcess | undefined;
  const home = mkdtempSync(join(tmpdir(), 'clawray-local-'));
  afterAll(() => {
    child?.kill('SIGKILL');
    rmSync(home, { recursive: true, force: true });
  });

  it('runs a head and N worker processes in the foreground, found by local commands, and stops on SIGTERM', async () => {
    child = spawn(
      process.execPath,
      [distEntry('cli/main'), 'start', '--local', '--workers', '2', '--gpus-per-worker', '1', '--port', '0'],
      {
        env: {
          ...process.env,
          CLAWRAY_HOME: home,
          CLAWRAY_ADDRESS: '',
          CLAWRAY_TOKEN: '',
          CLAWRAY_LOG_LEVEL: 'warn',
        },
      },
    );
    const exited = new Promise<number | null>((resolve) => child!.once('exit', resolve));
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: child!.stdout! }).on('line', (line) => {
        if (line.startsWith('clawray local cluster')) resolve();
      });
      child!.once('exit', () => reject(new Error('start --local exited early')));
    });
    const { code, stdout } = clawray(['status', '--json'], { CLAWRAY_HOME: home });
    expect(code).toBe(0);
    const status = JSON.parse(stdout);
    expect(status.nodes).toHaveLength(2);
    expect(status.nodes.map((n: { total: { GPU: number } }) => n.total.GPU)).toEqual([1, 1]);
    const workerPids = spawnSync('pgrep', ['-P', String(child.pid)], { encoding: 'utf8' })
      .stdout.split('\n')
      .filter(Boolean)
      .map(Number);
    expect(workerPids).toHaveLength(2);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    await eventually(() => workerPids.every((pid) => !pidAlive(pid)));
  });
});
