/**
 * A cluster across addresses without Kubernetes: Redis, the head, two workers and a client each
 * in a network namespace of their own (one veth each on a bridge), talking over a private /24
 * the way pods do. Calls cross hosts; then one worker's cable is cut and the head must declare
 * that node dead, as it would a node that lost power, while the other worker stays alive.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { distEntry } from '../common/package-root.js';
import type { ClusterStatusView } from '../runtime/index.js';
import { NetnsLab, netnsUnavailable } from './helpers/netns.js';
import { eventually, fixture, type Proc, startProc } from './helpers/processes.js';

const unavailable = netnsUnavailable();
if (unavailable) console.warn(`skipping the network-namespace test: ${unavailable}`);

const NODE_TIMEOUT_MS = 3000;

describe.skipIf(unavailable !== undefined)('a cluster across network namespaces', () => {
  const home = mkdtempSync(join(tmpdir(), 'clawray-netns-'));
  const token = `netns-${Math.random().toString(36).slice(2)}`;
  const env = { CLAWRAY_HOME: home, CLAWRAY_TOKEN: token };
  let lab: NetnsLab | undefined;
  let redis: ChildProcess | undefined;
  const procs: Proc[] = [];
  let headAddress = '';
  const workerIds: Record<string, string> = {};

  /** Runs the clawray CLI (or node with `script`) on the client host and returns its stdout. */
  function onClient(args: string[], script?: string): string {
    const cmd = script ? [script, ...args] : [distEntry('cli/main'), ...args];
    const r = spawnSync(lab!.exec('client')[0], [...lab!.exec('client').slice(1), process.execPath, ...cmd], {
      env: { ...process.env, ...env, CLAWRAY_ADDRESS: headAddress },
      encoding: 'utf8',
      timeout: 60_000,
    });
    if (r.status !== 0) throw new Error(`${cmd.join(' ')} failed (${r.status}): ${r.stderr}`);
    return r.stdout;
  }

  // --all: the dead actor of the cut node is listed too.
  const status = (): ClusterStatusView => JSON.parse(onClient(['status', '--json', '--all']));

  beforeAll(async () => {
    lab = new NetnsLab(['redis', 'head', 'w1', 'w2', 'client']);
    const redisHost = lab.host('redis');
    const [cmd, ...prefix] = lab.exec('redis');
    redis = spawn(
      cmd,
      [
        ...prefix,
        'redis-server',
        '--bind',
        redisHost.ip,
        '--port',
        '6379',
        '--requirepass',
        token,
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        home,
      ],
      { stdio: 'ignore' },
    );
    const head = lab.host('head');
    const headProc = await startProc(
      [
        'head',
        'start',
        '--host',
        head.ip,
        '--store',
        `redis://default:${token}@${redisHost.ip}:6379/0`,
        '--node-timeout-ms',
        String(NODE_TIMEOUT_MS),
      ],
      env,
      /clawray head listening on (?<address>\S+)/,
      lab.exec('head'),
    );
    procs.push(headProc);
    headAddress = headProc.address;
    for (const name of ['w1', 'w2']) {
      const host = lab.host(name);
      const worker = await startProc(
        [
          'worker',
          'start',
          '--head',
          headAddress,
          '--host',
          host.ip,
          '--labels',
          `ns=${name}`,
          '--gpus',
          '1',
          '--cpus',
          '2',
          '--pool-size',
          '1',
        ],
        env,
        /clawray worker (?<nodeId>\S+) listening on (?<address>\S+)/,
        lab.exec(name),
      );
      procs.push(worker);
      workerIds[name] = worker.nodeId;
    }
  });

  afterAll(async () => {
    await Promise.all(procs.map((p) => p.kill('SIGKILL')));
    redis?.kill('SIGKILL');
    lab?.destroy();
    rmSync(home, { recursive: true, force: true });
  });

  it('the head is on its own address, on a Redis on another, and both workers joined from theirs', () => {
    expect(headAddress).toBe(`${lab!.host('head').ip}:6390`);
    const s = status();
    const byId = new Map(s.nodes.map((n) => [n.nodeId, n]));
    for (const name of ['w1', 'w2']) {
      const node = byId.get(workerIds[name])!;
      expect(node.state).toBe('ALIVE');
      expect(node.address.split(':')[0]).toBe(lab!.host(name).ip);
      expect(node.labels.ns).toBe(name);
    }
  });

  it('calls cross hosts: client to worker 2, and client to worker 1 to worker 2', () => {
    const out = JSON.parse(onClient([], fixture('netns-client.mjs')).trim().split('\n').pop()!);
    expect(out.direct).toBe(101);
    expect(out.viaWorker1).toBe(111);
    const where = (cls: string) => out.actors.find((a: { className: string }) => a.className === cls);
    expect(where('Counter').address.split(':')[0]).toBe(lab!.host('w2').ip);
    expect(where('Caller').address.split(':')[0]).toBe(lab!.host('w1').ip);
  });

  it('a worker whose link is cut is declared dead; the other stays alive', async () => {
    lab!.cut('w2');
    // Generous: the head declares it after NODE_TIMEOUT_MS without heartbeats.
    await eventually(
      () => status().nodes.find((n) => n.nodeId === workerIds.w2)?.state === 'DEAD',
      NODE_TIMEOUT_MS * 10,
      250,
    );
    const s = status();
    expect(s.nodes.find((n) => n.nodeId === workerIds.w1)?.state).toBe('ALIVE');
    // The actor on the lost node is gone with it (it had no restarts left).
    const counter = s.actors.find((a) => a.className === 'Counter');
    expect(counter?.state).toBe('DEAD');
  });
});
