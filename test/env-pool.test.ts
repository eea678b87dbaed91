import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EnvPool, Lease } from '../actors/envs/index.js';
import { buildTaskSuite } from '../actors/envs/toolcall/tasks.js';
import { ActorError } from '../common/errors.js';
import type { ActorHandle, Cluster } from '../runtime/index.js';
import { fixture, TestCluster, within } from './helpers/processes.js';

describe('EnvPool as an actor', () => {
  const tc = new TestCluster();
  let cluster: Cluster;
  let pool: ActorHandle<EnvPool>;
  const task = buildTaskSuite().find((t) => t.kind === 'lookup_calc')!;

  beforeAll(async () => {
    await tc.startHead();
    await tc.startWorker({ poolSize: 2 });
    cluster = await tc.connect();
    pool = await cluster.createActor<EnvPool>({
      module: 'clawray/envs',
      className: 'EnvPool',
      args: [{ track: 'toolcall', parallel: 1, leaseTtlMs: 1_500, allocateTimeoutMs: 20_000 }],
    });
  });
  afterAll(() => tc.teardown());

  it('plays an oracle episode through the actor', async () => {
    expect(await pool.remote.ready()).toMatchObject({ track: 'toolcall', parallel: 1 });
    expect(await pool.remote.taskIds('heldout')).toEqual(
      buildTaskSuite()
        .filter((t) => t.split === 'heldout')
        .map((t) => t.id),
    );
    const lease = (await pool.remote.allocate('episode')) as Lease;
    const obs = await pool.remote.reset(lease.leaseId, task.id);
    expect(obs.text).toBe(task.question);
    let last: Awaited<ReturnType<EnvPool['step']>> | undefined;
    for (const action of task.oracle) last = await pool.remote.step(lease.leaseId, action);
    expect(last).toMatchObject({ done: true, reward: 1 });
    await pool.remote.release(lease.leaseId);
  });

  it('frees the environment of a caller that died holding it', async () => {
    const holder = await cluster.createActor({
      module: fixture('lease-holder.mjs'),
      className: 'LeaseHolder',
    });
    const held = (await holder.call('hold', pool, 'holder')) as Lease;
    expect((await pool.remote.stats()).leased).toBe(1);
    await cluster.killActor(holder, { noRestart: true });
    // parallel is 1: this waits until the dead holder's lease expires.
    const started = Date.now();
    const mine = (await within(
      15_000,
      'allocate after the holder died',
      pool.remote.allocate('survivor'),
    )) as Lease;
    expect(mine.slot).toBe(held.slot);
    expect(Date.now() - started).toBeLessThan(10_000);
    const err = await pool.remote.heartbeat(held.leaseId).catch((e) => e);
    expect(err).toBeInstanceOf(ActorError);
    expect(err.remoteName).toBe('LeaseNotFoundError');
    expect((await pool.remote.stats()).expiredLeases).toBe(1);
    await pool.remote.release(mine.leaseId);
  });
});
