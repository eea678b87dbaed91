import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort, startRedisServer } from '../../bench/redis-server.js';
import { AuthError, UnavailableError } from '../../common/errors.js';
import { clusterPrefix, tableKey } from '../../common/redis-keys.js';
import { RedisStore, redactUrl } from './redis-store.js';
import { runStoreContract } from './store.contract.js';

const url = inject('redisUrl');
const clusters = new Set<string>();

function uniqueCluster(): string {
  const name = `test-${randomBytes(6).toString('hex')}`;
  clusters.add(name);
  return name;
}

function withAuth(user: string, password: string): string {
  const parsed = new URL(url);
  parsed.username = user;
  parsed.password = password;
  return parsed.toString();
}

let raw: Redis;

beforeAll(async () => {
  raw = new Redis(url, { lazyConnect: true });
  await raw.connect();
});

afterAll(async () => {
  for (const cluster of clusters) {
    const keys = await raw.keys(`${clusterPrefix(cluster)}*`);
    if (keys.length > 0) await raw.del(...keys);
  }
  await raw.call('ACL', 'DELUSER', 'clawray_test');
  await raw.quit();
});

runStoreContract('redis', async () => new RedisStore(url, { cluster: uniqueCluster() }));

describe('RedisStore', () => {
  it('writes exactly the keys common/redis-keys.ts names, as JSON text', async () => {
    const cluster = uniqueCluster();
    const store = new RedisStore(url, { cluster });
    await store.open();
    await store.put('actors', 'a1', { state: 'ALIVE' });
    await store.apply([{ op: 'put', table: 'placementGroups', id: 'pg1', value: [1] }]);
    await store.close();
    const keys = await raw.keys(`${clusterPrefix(cluster)}*`);
    expect(keys.sort()).toEqual([tableKey(cluster, 'actors'), tableKey(cluster, 'placementGroups')].sort());
    expect(keys).toContain(`clawray:${cluster}:table:actors`);
    expect(await raw.hgetall(tableKey(cluster, 'actors'))).toEqual({ a1: '{"state":"ALIVE"}' });
    expect(store.kind).toBe('redis');
  });

  it('keeps its data for a new store on the same URL and cluster (a restarted head)', async () => {
    const cluster = uniqueCluster();
    const first = new RedisStore(url, { cluster });
    await first.open();
    await first.put('nodes', 'n1', { gpus: 2 });
    await first.put('jobs', 'j1', { status: 'RUNNING' });
    await first.close();
    const second = new RedisStore(url, { cluster });
    await second.open();
    expect(await second.get('nodes', 'n1')).toEqual({ gpus: 2 });
    expect(await second.list('jobs')).toEqual([{ status: 'RUNNING' }]);
    await second.close();
  });

  it('connects as an ACL user given in the URL', async () => {
    await raw.call('ACL', 'SETUSER', 'clawray_test', 'reset', 'on', '>secret', '~clawray:*', '+@all');
    const store = new RedisStore(withAuth('clawray_test', 'secret'), { cluster: uniqueCluster() });
    await store.open();
    await store.put('nodes', 'n1', { ok: true });
    expect(await store.get('nodes', 'n1')).toEqual({ ok: true });
    await store.close();
  });

  it('fails open with an AuthError naming the user, not the password', async () => {
    await raw.call('ACL', 'SETUSER', 'clawray_test', 'reset', 'on', '>secret', '~clawray:*', '+@all');
    const store = new RedisStore(withAuth('clawray_test', 'hunter2'), { cluster: uniqueCluster() });
    const started = Date.now();
    const err = await store.open().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AuthError);
    const message = (err as Error).message;
    expect(message).toContain('"clawray_test"');
    expect(message).toContain('WRONGPASS');
    expect(message).not.toContain('hunter2');
    // An auth failure is final: no waiting out the connect timeout.
    expect(Date.now() - started).toBeLessThan(2000);
    await store.close();
  });

  it('maps a key pattern the ACL user may not touch to an AuthError', async () => {
    await raw.call('ACL', 'SETUSER', 'clawray_test', 'reset', 'on', '>secret', '~other:*', '+@all');
    const store = new RedisStore(withAuth('clawray_test', 'secret'), { cluster: uniqueCluster() });
    await store.open();
    await expect(store.put('nodes', 'n1', {})).rejects.toThrow(AuthError);
    await store.close();
  });

  it('fails open quickly with an UnavailableError when nothing listens', async () => {
    const port = await freePort();
    const store = new RedisStore(`redis://admin:s3cret@127.0.0.1:${port}/2`, { connectTimeoutMs: 300 });
    const started = Date.now();
    const err = await store.open().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UnavailableError);
    expect((err as Error).message).toContain(`redis://admin:***@127.0.0.1:${port}/2`);
    expect((err as Error).message).toContain('ECONNREFUSED');
    expect((err as Error).message).not.toContain('s3cret');
    expect(Date.now() - started).toBeLessThan(3000);
    await store.close();
  });

  it('holds a write made during a short outage until Redis is back', async () => {
    const first = await startRedisServer();
    const store = new RedisStore(first.url, { cluster: uniqueCluster() });
    await store.open();
    await first.stop();
    const write = store.put('nodes', 'n1', { during: 'outage' });
    await new Promise((r) => setTimeout(r, 300));
    const second = await startRedisServer(['--port', String(first.port)]);
    try {
      await write;
      expect(await store.get('nodes', 'n1')).toEqual({ during: 'outage' });
    } finally {
      await store.close();
      await second.stop();
    }
  });

  it('closes cleanly when never opened', async () => {
    await new RedisStore(url).close();
  });
});

describe('RedisStore TLS', () => {
  // A bare TCP server shows what the client sends first: a TLS ClientHello or a RESP command.
  let server: Server;
  let port: number;
  let onFirstBytes: (chunk: Buffer) => void = () => {};

  beforeAll(async () => {
    server = createServer((socket) => {
      socket.once('data', (chunk: Buffer) => {
        onFirstBytes(chunk);
        socket.destroy();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });

  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  async function firstByteFor(scheme: string): Promise<number> {
    const firstBytes = new Promise<Buffer>((resolve) => {
      onFirstBytes = resolve;
    });
    const store = new RedisStore(`${scheme}://127.0.0.1:${port}`, { connectTimeoutMs: 300 });
    await expect(store.open()).rejects.toThrow(UnavailableError);
    await store.close();
    return (await firstBytes)[0];
  }

  it('speaks TLS for rediss:// (whatever its case) and plain RESP for redis://', async () => {
    const TLS_HANDSHAKE = 0x16;
    expect(await firstByteFor('rediss')).toBe(TLS_HANDSHAKE);
    expect(await firstByteFor('REDISS')).toBe(TLS_HANDSHAKE);
    expect(await firstByteFor('redis')).toBe('*'.charCodeAt(0));
  });
});

describe('redactUrl', () => {
  it('hides passwords in the user part and the query', () => {
    expect(redactUrl('redis://u:p%40ss@h:6379/1')).toBe('redis://u:***@h:6379/1');
    expect(redactUrl('rediss://:only@h')).toBe('rediss://:***@h');
    expect(redactUrl('redis://h:1?password=x&db=2')).toBe('redis://h:1?password=***&db=2');
    expect(redactUrl('redis://h:1')).toBe('redis://h:1');
    expect(redactUrl('redis:/u:pw@h')).toBe('redis:/u:***@h');
    expect(redactUrl('not a url u:pw@h')).toBe('not a url u:***@h');
  });
});
