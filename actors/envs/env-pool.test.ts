import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import {
  EnvPool,
  type EnvPoolOptions,
  LeaseBusyError,
  LeaseNotFoundError,
  PoolExhaustedError,
} from './env-pool.js';
import { buildTaskSuite } from './toolcall/tasks.js';

const arithmetic = buildTaskSuite().filter((t) => t.kind === 'arithmetic');
const pools: EnvPool[] = [];

function pool(options: Partial<EnvPoolOptions> = {}, registry = new Registry()): EnvPool {
  const p = new EnvPool({ track: 'toolcall', parallel: 2, ...options }, registry);
  pools.push(p);
  return p;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p[Symbol.asyncDispose]()));
});

describe('EnvPool', () => {
  it('runs an episode on a lease: reset, step, evaluate, release', async () => {
    const registry = new Registry();
    const p = pool({}, registry);
    expect(await p.ready()).toEqual({ track: 'toolcall', tasks: buildTaskSuite().length, parallel: 2 });
    const task = arithmetic[0];
    const lease = await p.allocate('r1');
    expect(lease.slot).toBe(0);
    const obs = await p.reset(lease.leaseId, task.id);
    expect(obs.text).toBe(task.question);
    const first = await p.step(lease.leaseId, task.oracle[0]);
    expect(first.done).toBe(false);
    expect((await p.evaluate(lease.leaseId)).reward).toBe(-1);
    const last = await p.step(lease.leaseId, task.oracle[1]);
    expect(last).toMatchObject({ done: true, reward: 1 });
    expect((await p.evaluate(lease.leaseId)).reward).toBe(1);
    await p.release(lease.leaseId);
    expect(await p.stats()).toMatchObject({ leased: 0, free: 2 });
    await expect(p.step(lease.leaseId, task.oracle[0])).rejects.toBeInstanceOf(LeaseNotFoundError);
    const text = await registry.metrics();
    expect(text).toMatch(/clawray_env_steps_total\{track="toolcall"\} 2/);
    expect(text).toMatch(/clawray_env_episodes_total\{track="toolcall",result="success"\} 1/);
    expect(text).toMatch(/clawray_env_leases\{track="toolcall",state="free"\} 2/);
  });

  it('answers a retried allocate with the same lease', async () => {
    const p = pool();
    const a = await p.allocate('same');
    const b = await p.allocate('same');
    expect(b.leaseId).toBe(a.leaseId);
    const c = await p.allocate('other');
    expect(c.leaseId).not.toBe(a.leaseId);
    expect(await p.stats()).toMatchObject({ leased: 2, free: 0 });
  });

  it('makes allocate wait for a free environment, and gives up after allocateTimeoutMs', async () => {
    const p = pool({ parallel: 1, allocateTimeoutMs: 300 });
    const held = await p.allocate('a');
    const waiting = p.allocate('b');
    const retried = p.allocate('b');
    await sleep(50);
    expect((await p.stats()).waiting).toBe(1);
    await p.release(held.leaseId);
    const [got, again] = await Promise.all([waiting, retried]);
    expect(got.leaseId).toBe(again.leaseId);
    expect(got.slot).toBe(0);
    const started = Date.now();
    const err = await p.allocate('c').catch((e) => e);
    expect(err).toBeInstanceOf(PoolExhaustedError);
    expect(err.retryable).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
  });

  it('expires a lease nobody renews and lends its environment to the next caller', async () => {
    const registry = new Registry();
    const p = pool({ parallel: 1, leaseTtlMs: 200, allocateTimeoutMs: 5_000 }, registry);
    const dead = await p.allocate('dead-caller');
    await p.reset(dead.leaseId, arithmetic[0].id);
    const next = await p.allocate('live-caller');
    expect(next.slot).toBe(0);
    expect(next.leaseId).not.toBe(dead.leaseId);
    await expect(p.heartbeat(dead.leaseId)).rejects.toBeInstanceOf(LeaseNotFoundError);
    expect((await p.stats()).expiredLeases).toBe(1);
    expect(await registry.metrics()).toMatch(/clawray_env_lease_expirations_total\{track="toolcall"\} 1/);
  });

  it('keeps a lease alive while its caller heartbeats', async () => {
    const p = pool({ parallel: 1, leaseTtlMs: 200 });
    const lease = await p.allocate();
    for (let i = 0; i < 6; i++) {
      await sleep(80);
      const renewed = await p.heartbeat(lease.leaseId);
      expect(renewed.expiresAtMs).toBeGreaterThan(Date.now());
    }
    expect((await p.stats()).expiredLeases).toBe(0);
  });

  it('refuses a second call on a lease while the first runs', async () => {
    const p = pool();
    const lease = await p.allocate();
    const task = arithmetic[1];
    const resetting = p.reset(lease.leaseId, task.id);
    await expect(p.reset(lease.leaseId, task.id)).rejects.toBeInstanceOf(LeaseBusyError);
    await resetting;
  });

  it('rejects bad options naming the field, and reports a bad task source from ready()', async () => {
    expect(() => new EnvPool({ track: 'chess' as never })).toThrow(/track/);
    expect(() => new EnvPool({ track: 'toolcall', parallel: 0 })).toThrow(ConfigError);
    expect(() => new EnvPool({ track: 'toolcall', parallel: 0 })).toThrow(/parallel/);
    const p = pool({ tasks: '/nonexistent/tasks.jsonl' });
    await expect(p.ready()).rejects.toThrow(/nonexistent\/tasks.jsonl/);
  });
});
