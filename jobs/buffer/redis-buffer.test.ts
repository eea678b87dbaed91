import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { bufferKeys } from '../../common/redis-keys.js';
import { makeRecord, runBufferContract } from './buffer.contract.js';
import { LEGACY_JSON_FIELD, PAYLOAD_FIELD, RECORD_FIELD, TRAJECTORY_FIELD } from './record-codec.js';
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
  it('writes exactly the keys common/redis-keys.ts names', async () => {
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
    expect(keys.sort()).toEqual([k.dead, k.ids, k.payloads, k.stats, k.stream, k.trained].sort());
    expect(Object.values(await raw.hgetall(k.ids))).toEqual([id]);
    // The entry names the trajectory and its payload; the dead letter carries the record inline.
    const [[, fields]] = await raw.xrange(k.stream, '-', '+');
    expect(fields[0]).toBe(TRAJECTORY_FIELD);
    expect(fields[2]).toBe(PAYLOAD_FIELD);
    expect(await raw.hlen(k.payloads)).toBe(1);
    expect(await raw.hexists(k.payloads, fields[3])).toBe(1);
    const [[, deadFields]] = await raw.xrangeBuffer(k.dead, '-', '+');
    expect(deadFields[deadFields.length - 2].toString()).toBe(RECORD_FIELD);
  });

  it('stores records of any size, and appends nothing for a bad record in a later chunk', async () => {
    const name = uniqueName();
    const b = new RedisTrajectoryBuffer(url, { cluster, name });
    const records = [1, 2000, 300, 1, 20_000].map((tokens) =>
      makeRecord({
        tokenIds: Array.from({ length: tokens }, (_, i) => i),
        logprobs: Array.from({ length: tokens }, (_, i) => -i / 7),
      }),
    );
    await b.append(records);
    const got = await b.read({ group: 'g', consumer: 'c', count: 10 });
    expect(got.map((e) => e.record)).toEqual(records);
    expect(await raw.hlen(bufferKeys(cluster, name).payloads)).toBe(records.length);
    // More records than one MULTI takes, the last one bad: nothing of the batch is stored.
    const many = Array.from({ length: 600 }, () => makeRecord());
    many.push({ ...makeRecord(), turn: -1 });
    await expect(b.append(many)).rejects.toThrow(/turn/);
    expect(await b.length()).toBe(records.length);
    await b.destroy();
  });

  it('refuses ioredis keyPrefix, which would move only some of its keys', () => {
    expect(() => new RedisTrajectoryBuffer(url, { cluster, redis: { keyPrefix: 'p:' } })).toThrow(
      /redis\.keyPrefix/,
    );
  });

  it('destroy deletes every key of the buffer', async () => {
    const name = uniqueName();
    const b = new RedisTrajectoryBuffer(url, { cluster, name, maxDeliveries: 1 });
    await b.append([makeRecord(), makeRecord()]);
    await b.read({ group: 'g', consumer: 'c' });
    await new Promise((r) => setTimeout(r, 20));
    await b.claimStale({ group: 'g', consumer: 'c2', idleMs: 10 });
    await b.markTrained(['t']);
    expect(await raw.keys(`clawray:${cluster}:buffer:${name}:*`)).toHaveLength(6);
    await b.destroy();
    expect(await raw.keys(`clawray:${cluster}:buffer:${name}:*`)).toEqual([]);
  });

  it('keeps one payload per stored entry: duplicates and trimmed entries leave none behind', async () => {
    const name = uniqueName();
    const k = bufferKeys(cluster, name);
    const b = new RedisTrajectoryBuffer(url, { cluster, name, maxLen: 10 });
    const records = Array.from({ length: 25 }, () => makeRecord());
    await b.append(records.slice(0, 15));
    await b.append([records[14], ...records.slice(15), records[20]]);
    expect(await b.length()).toBe(10);
    expect(await raw.hlen(k.payloads)).toBe(10);
    const got = await b.read({ group: 'g', consumer: 'c', count: 100 });
    expect(got.map((e) => e.record)).toEqual(records.slice(15));
    expect((await b.stats()).duplicates).toBe(2);
    await b.destroy();
  });

  it('a handle whose buffer was destroyed through another sees an empty buffer', async () => {
    const name = uniqueName();
    const a = new RedisTrajectoryBuffer(url, { cluster, name });
    const b = new RedisTrajectoryBuffer(url, { cluster, name });
    await a.append([makeRecord()]);
    expect(await a.read({ group: 'g', consumer: 'c' })).toHaveLength(1);
    await b.destroy();
    expect(await a.read({ group: 'g', consumer: 'c' })).toEqual([]);
    expect(await a.pending('g')).toEqual([]);
    expect(await a.readPending({ group: 'g', consumer: 'c' })).toEqual([]);
    const [id] = await a.append([makeRecord()]);
    expect((await a.read({ group: 'g', consumer: 'c' })).map((e) => e.entryId)).toEqual([id]);
    await a.destroy();
  });

  it('reads entries written in the legacy JSON format next to compact ones', async () => {
    const name = uniqueName();
    const k = bufferKeys(cluster, name);
    const old = makeRecord({ hint: 'from before', extra: { track: 'swe' } });
    const oldId = await raw.xadd(k.stream, '*', LEGACY_JSON_FIELD, JSON.stringify(old));
    const b = new RedisTrajectoryBuffer(url, { cluster, name, maxDeliveries: 2 });
    const fresh = makeRecord();
    const [freshId] = await b.append([fresh]);
    const got = await b.read({ group: 'g', consumer: 'c', count: 10 });
    expect(got.map((e) => [e.entryId, e.record])).toEqual([
      [oldId, old],
      [freshId, fresh],
    ]);
    const again = await b.read({ group: 'h', consumer: 'c', count: 10 });
    expect((await b.readPending({ group: 'h', consumer: 'c' })).map((e) => e.record)).toEqual([old, fresh]);
    await b.ack('h', [again[1].entryId]);
    // The old entry now dead-letters (delivered twice, maxDeliveries 2) and keeps its format there.
    expect(await b.readPending({ group: 'h', consumer: 'c' })).toEqual([]);
    expect((await b.deadLetters()).map((d) => d.record)).toEqual([old]);
    await b.destroy();
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
