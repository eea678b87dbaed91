/**
 * A cluster that runs for weeks stays flat (issue 17): the head keeps at most
 * `CLAWRAY_MAX_DEAD_ACTORS` dead actors and `CLAWRAY_MAX_FINISHED_JOBS` finished jobs (Ray's
 * `RAY_maximum_gcs_destroyed_actor_cached_count`), dropping the oldest first, and drops them
 * from the Redis store too. Asserted on record counts, never on timings or memory.
 */
import { execFile } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ActorDiedError } from '../common/errors.js';
import { distEntry } from '../common/package-root.js';
import { tableKey } from '../common/redis-keys.js';
import type { Cluster } from '../runtime/index.js';
import { eventually, fixture, startProc, TestCluster } from './helpers/processes.js';

const module = fixture('counter.mjs');
/**
 * Full create/call/kill cycles on real processes (each actor is a process: about 4/s on a
 * loaded 2-core machine, so the default keeps the test short; CLAWRAY_BOUNDED_REAL=1000 runs
 * the 1,000), plus actors created and killed while they wait for resources.
 */
const REAL = Number(process.env.CLAWRAY_BOUNDED_REAL ?? 120);
const PENDING = 1000;
const BATCH = 100;
const MAX_DEAD = 100;
const MAX_JOBS = 2;
const CONCURRENCY = 8;

function clawray(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [distEntry('cli/main'), ...args],
      { env: { ...process.env, ...env }, timeout: 60_000, encoding: 'utf8' },
      (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('bounded records', () => {
  const tc = new TestCluster();
  const clusterName = `bounded${Date.now()}`;
  let redis: Redis;
  let cluster: Cluster;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    const url = inject('redisUrl');
    tc.head = await startProc(
      ['head', 'start', '--port', '0', '--store', url, '--cluster-name', clusterName],
      { ...tc.env, CLAWRAY_MAX_DEAD_ACTORS: String(MAX_DEAD), CLAWRAY_MAX_FINISHED_JOBS: String(MAX_JOBS) },
      /clawray head listening on (?<address>\S+)/,
    );
    await tc.startWorker({ cpus: 16, poolSize: 4, resources: { slot: 1 } });
    cluster = await tc.connect();
    redis = new Redis(url, { maxRetriesPerRequest: 1 });
    env = { ...tc.env, CLAWRAY_ADDRESS: tc.head.address };
  });
  afterAll(async () => {
    redis?.disconnect();
    await tc.teardown();
  });

  it(`keeps at most ${MAX_DEAD} dead actors after ${REAL + PENDING} are created and killed`, async () => {
    // Full cycles on real processes: create, call, kill.
    let next = 0;
    let calls = 0;
    const lane = async () => {
      while (next < REAL) {
        const i = next++;
        const counter = await cluster.createActor({ module, className: 'Counter', args: [i] });
        expect(await counter.call('inc', 1)).toBe(i + 1);
        calls++;
        await cluster.killActor(counter);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, lane));
    expect(calls).toBe(REAL);

    // Many more through the same head path without a process each: created while the one
    // `slot` is held (so they wait for it), then killed.
    const slot = { resources: { slot: 1 } };
    const holder = await cluster.createActor({ module, className: 'Counter', options: slot });
    for (let done = 0; done < PENDING; done += BATCH) {
      const created = Array.from({ length: BATCH }, () =>
        cluster.createActor({ module, className: 'Counter', options: slot }).catch((e: unknown) => e),
      );
      const waiting = await eventually(async () => {
        const list = await cluster.listActors({ state: 'PENDING_CREATION' });
        return list.length === BATCH && list;
      });
      await Promise.all(waiting.map((a) => cluster.killActor(a.actorId)));
      for (const outcome of await Promise.all(created)) expect(outcome).toBeInstanceOf(ActorDiedError);
    }
    await cluster.killActor(holder);

    const total = REAL + PENDING + 1;
    const status = await cluster.status();
    expect(status.actors.filter((a) => a.state !== 'DEAD')).toEqual([]);
    expect(status.actors.filter((a) => a.state === 'DEAD')).toHaveLength(MAX_DEAD);
    expect(status.droppedDeadActors).toBe(total - MAX_DEAD);
    // The newest are the ones kept.
    expect(status.actors.some((a) => a.actorId === holder.actorId)).toBe(true);
    // The store holds no more than the head does.
    expect(await redis.hlen(tableKey(clusterName, 'actors'))).toBe(MAX_DEAD);
  }, 600_000);

  it(`keeps at most ${MAX_JOBS} finished jobs and their logs, oldest dropped first`, async () => {
    const ids = ['bounded-1', 'bounded-2', 'bounded-3', 'bounded-4'];
    for (const id of ids) {
      const r = await clawray(['job', 'submit', '--submission-id', id, '--', `echo ran ${id}`], env);
      expect(r.code, r.stderr).toBe(0);
    }
    // The last job's record goes once its actors are released, just after its final status.
    const kept = await eventually(async () => {
      const list = await clawray(['job', 'list', '--json'], env);
      const ids = (JSON.parse(list.stdout) as Array<{ submissionId: string }>).map((j) => j.submissionId);
      return ids.length === MAX_JOBS && ids;
    }, 60_000);
    expect(kept).toEqual(['bounded-3', 'bounded-4']);
    expect(await redis.hkeys(tableKey(clusterName, 'jobs'))).toEqual(
      expect.arrayContaining(['bounded-3', 'bounded-4']),
    );
    expect(await redis.hlen(tableKey(clusterName, 'jobs'))).toBe(MAX_JOBS);
    const logs = (await redis.hkeys(tableKey(clusterName, 'packages'))).filter((k) =>
      k.startsWith('joblog/'),
    );
    expect(logs.filter((k) => k.split('/').length === 2).sort()).toEqual([
      'joblog/bounded-3',
      'joblog/bounded-4',
    ]);
    const dropped = await clawray(['job', 'logs', 'bounded-1'], env);
    expect(dropped.code).not.toBe(0);
    expect((await clawray(['job', 'logs', 'bounded-4'], env)).stdout).toContain('ran bounded-4');
    // About ten CLI processes one after another, each a Node start: slow on a loaded machine.
  }, 300_000);
});
