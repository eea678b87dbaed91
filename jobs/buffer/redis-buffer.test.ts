import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { makeRecord, runBufferContract } from './buffer.contract.js';
import { bufferKeys } from './keys.js';
import { RedisTrajectoryBuffer } from './redis-buffer.js';

const url = inject('redisUrl');
const cluster = `test-buffer-${randomBytes(6).toString('hex')}`;
let raw: Redis;

beforeAll(async () => {
  raw = new Redis(url);
});

afterAll(async () => {
  const keys = await raw.keys(`clawray:${cluster}:*`);
  if (keys.length > 0) await raw.del(...keys);
  await raw.quit();
});

const uniqueName = () => `buf-${randomBytes(6).toString('hex')}`;

runBufferContract(
  'redis',
  async (options) => new RedisTrajectoryBuffer(url, { cluster, name: uniqueName(), ...options }),
);

describe('RedisTrajectoryBuffer', () => {
  it('writes exactly the keys keys.ts names', async () => {
    const name = uniqueName();
    const b = new RedisTrajectoryBuffer(url, { cluster, name, maxDeliveries: 1 });
    const k = bufferKeys(cluster, name);
    expect(k.stream).toBe(`clawray:${cluster}:buffer:${name}:stream`);
    const [id] = await b.append([makeRecord()]);
    await b.read({ group: 'g', consumer: 'c' });
    await new Promise((r) => setTimeout(r, 20));
    await b.claimStale({ group: 'g', consumer: 'c2', idleMs: 10 });
    await b.markTrained(['t']);
    await b.close();
    const keys = await raw.keys(`clawray:${cluster}:buffer:${name}:*`);
    expect(keys.sort()).toEqual([k.dead, k.ids, k.stream, k.trained].sort());
    expect(Object.values(await raw.hgetall(k.ids))).toEqual([id]);
  });

  it('shares state between two buffers on the same keys (two processes)', async () => {
    const name = uniqueName();
    const a = new RedisTrajectoryBuffer(url, { cluster, name });
    const b = new RedisTrajectoryBuffer(url, { cluster, name });
    const r = makeRecord();
    const [id] = await a.append([r]);
    expect(await b.append([r])).toEqual([id]);
    const got = await b.read({ group: 'g', consumer: 'c' });
    expect(got.map((e) => e.entryId)).toEqual([id]);
    expect(await a.read({ group: 'g', consumer: 'd' })).toEqual([]);
    await a.close();
    await b.close();
  });

  it('ends a blocking read when closed', async () => {
    const b = new RedisTrajectoryBuffer(url, { cluster, name: uniqueName() });
    const waiting = b.read({ group: 'g', consumer: 'c', blockMs: 10_000 }).catch((err: Error) => err);
    await new Promise((r) => setTimeout(r, 50));
    const t0 = Date.now();
    await b.close();
    await waiting;
    expect(Date.now() - t0).toBeLessThan(2000);
  });
});
