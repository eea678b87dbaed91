import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { bufferKeys, jobStreamName } from '../../common/redis-keys.js';
import { makeRecord } from './buffer.contract.js';
import { MemoryTrajectoryBuffer } from './memory-buffer.js';
import { openJobBuffer } from './open-job-buffer.js';
import { RedisTrajectoryBuffer } from './redis-buffer.js';

const url = inject('redisUrl');
const cluster = `test-jobbuf-${randomBytes(6).toString('hex')}`;

afterAll(async () => {
  const raw = new Redis(url);
  const keys = await raw.keys(`clawray:${cluster}:*`);
  if (keys.length > 0) await raw.del(...keys);
  await raw.quit();
});

describe('openJobBuffer', () => {
  it('opens an in-memory buffer without a Redis URL', async () => {
    const b = openJobBuffer({ cluster, name: jobStreamName('job-1', 'rollouts') });
    expect(b).toBeInstanceOf(MemoryTrajectoryBuffer);
    expect(b.kind).toBe('memory');
    await b.append([makeRecord()]);
    expect(await b.length()).toBe(1);
    await b.destroy();
  });

  it('opens the Redis buffer of the job stream when given a URL, shared by every handle', async () => {
    const name = jobStreamName(`job-${randomBytes(4).toString('hex')}`, 'judged');
    const a = openJobBuffer({ redisUrl: url, cluster, name, maxDeliveries: 5 });
    expect(a).toBeInstanceOf(RedisTrajectoryBuffer);
    expect((a as RedisTrajectoryBuffer).keys).toEqual(bufferKeys(cluster, name));
    const [id] = await a.append([makeRecord()]);
    await a.close();
    // A restarted driver opens the same stream and finds its entries.
    const b = openJobBuffer({ redisUrl: url, cluster, name });
    expect((await b.read({ group: 'train', consumer: 'driver' })).map((e) => e.entryId)).toEqual([id]);
    await b.destroy();
  });

  it('refuses a malformed URL (password hidden), name, cluster or option, naming it', () => {
    expect(() => openJobBuffer({ redisUrl: 'http://u:secret@h:6379', cluster, name: 'x' })).toThrow(
      /redisUrl must start with redis:\/\/ or rediss:\/\/, got "http:\/\/u:\*\*\*@h:6379"/,
    );
    expect(() => openJobBuffer({ redisUrl: 'http://u:secret@h', cluster, name: 'x' })).not.toThrow(/secret/);
    expect(() => openJobBuffer({ cluster, name: 'a:b' })).toThrow(/invalid buffer name/);
    expect(() => openJobBuffer({ cluster: 'a b', name: 'x', redisUrl: url })).toThrow(/invalid cluster name/);
    expect(() => openJobBuffer({ cluster, name: 'x', maxDeliveries: 0 })).toThrow(/maxDeliveries/);
    expect(() => openJobBuffer({ cluster, name: 'x', redis: { db: 1 } })).toThrow(ConfigError);
  });
});
