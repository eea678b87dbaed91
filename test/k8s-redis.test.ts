/**
 * The Redis that k8s/base deploys, run from the rendered manifests: its redis.conf and
 * start-redis.sh out of the ConfigMap, the password out of the Secret. Only what ties it to the
 * pod is moved (the data, config and ACL paths into a temporary folder, a free loopback port
 * instead of 0.0.0.0:6379). Then the cluster store and the trajectory buffer contracts run
 * against it as the `clawray` ACL user, so the ACL is shown to allow everything clawray does.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../bench/redis-server.js';
import { RedisStore } from '../head/index.js';
// The store contract is test support (it imports vitest), so head/index.ts cannot export it.
// biome-ignore lint/style/noRestrictedImports: test-only hook, run here against the k8s Redis
import { runStoreContract } from '../head/store/store.contract.js';
import { runBufferContract } from '../jobs/buffer/buffer.contract.js';
import { RedisTrajectoryBuffer } from '../jobs/buffer/redis-buffer.js';
import { find, K8sTree, kubectlVersion } from './helpers/kustomize.js';
import { eventually } from './helpers/processes.js';

const kubectl = kubectlVersion();
if (!kubectl) throw new Error('kubectl is needed to render k8s/ (.ci/run installs it)');

const PASSWORD = `pw-${Math.random().toString(36).slice(2)}`;
const dir = mkdtempSync(join(tmpdir(), 'clawray-k8s-redis-'));
let redis: ChildProcess | undefined;
let exited: Promise<number | null> | undefined;
let url = '';
let port = 0;
let unique = 0;

/** Replaces `from` (which must be there) by `to`, so a change of the manifest fails loudly. */
function move(text: string, from: string, to: string): string {
  if (!text.includes(from)) throw new Error(`expected ${JSON.stringify(from)} in:\n${text}`);
  return text.split(from).join(to);
}

beforeAll(async () => {
  const tree = new K8sTree({ token: 't', redisPassword: PASSWORD, storeUrl: 'redis://unused' });
  const objects = tree.render('base');
  tree.close();
  const set = find(objects, 'StatefulSet', 'clawray-redis');
  const container = set.spec.template.spec.containers[0];
  const configMapName: string = set.spec.template.spec.volumes.find(
    (v: { name: string }) => v.name === 'config',
  ).configMap.name;
  const config = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === configMapName)!;
  const secret = find(objects, 'Secret', 'clawray-secrets');
  const passwordRef = container.env.find((e: { name: string }) => e.name === 'REDIS_PASSWORD').valueFrom
    .secretKeyRef;
  expect(passwordRef.name).toBe('clawray-secrets');
  const password = Buffer.from(secret.data[passwordRef.key], 'base64').toString();
  expect(password).toBe(PASSWORD);

  port = await freePort();
  for (const sub of ['data', 'etc', 'run']) mkdirSync(join(dir, sub));
  let conf: string = config.data['redis.conf'];
  conf = move(conf, 'bind 0.0.0.0', 'bind 127.0.0.1');
  conf = move(conf, 'port 6379', `port ${port}`);
  conf = move(conf, 'dir /data', `dir ${join(dir, 'data')}`);
  conf = move(conf, 'aclfile /run/redis/users.acl', `aclfile ${join(dir, 'run', 'users.acl')}`);
  writeFileSync(join(dir, 'etc', 'redis.conf'), conf);
  let script: string = config.data['start-redis.sh'];
  script = move(script, '/run/redis/users.acl', join(dir, 'run', 'users.acl'));
  script = move(script, '/etc/redis/redis.conf', join(dir, 'etc', 'redis.conf'));
  writeFileSync(join(dir, 'etc', 'start-redis.sh'), script);
  // The container's command, `sh /etc/redis/start-redis.sh`, with the pod's environment.
  expect(container.command).toEqual(['sh', '/etc/redis/start-redis.sh']);
  const child = spawn('sh', [join(dir, 'etc', 'start-redis.sh')], {
    env: { PATH: process.env.PATH, REDIS_PASSWORD: password },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  redis = child;
  exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  const output: string[] = [];
  child.stdout?.on('data', (b: Buffer) => output.push(b.toString()));
  child.stderr?.on('data', (b: Buffer) => output.push(b.toString()));
  url = `redis://clawray:${encodeURIComponent(password)}@127.0.0.1:${port}/0`;
  await eventually(() => output.join('').includes('Ready to accept connections'), 15_000).catch((err) => {
    throw new Error(`redis from the manifest did not start: ${err}\n${output.join('')}`);
  });
});

afterAll(async () => {
  redis?.kill('SIGTERM');
  await exited;
  rmSync(dir, { recursive: true, force: true });
});

describe('the Redis of k8s/base', () => {
  it('stores nothing for the default user and keeps the clawray user to clawray:* keys', async () => {
    const anonymous = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
    anonymous.on('error', () => {});
    await anonymous.connect().catch(() => {});
    await expect(anonymous.set('clawray:x', '1')).rejects.toThrow(/NOAUTH|WRONGPASS|NOPERM/);
    anonymous.disconnect();

    const user = new Redis(url, { maxRetriesPerRequest: 0 });
    try {
      expect(await user.set('clawray:k8s-test:probe', '1')).toBe('OK');
      await expect(user.set('elsewhere', '1')).rejects.toThrow(/NOPERM/);
      await expect(user.flushall()).rejects.toThrow(/NOPERM/);
      await expect(user.call('CONFIG', 'GET', 'dir')).rejects.toThrow(/NOPERM/);
      // The readiness probe's command: PING as the clawray user.
      expect(await user.ping()).toBe('PONG');
      const persistence = await user.info('persistence');
      expect(persistence).toMatch(/aof_enabled:1/);
      await user.del('clawray:k8s-test:probe');
    } finally {
      user.disconnect();
    }
  });

  it('writes the append-only file into its data volume', async () => {
    await eventually(() => existsSync(join(dir, 'data', 'appendonlydir')));
    expect(readdirSync(join(dir, 'data', 'appendonlydir')).some((f) => f.endsWith('.aof'))).toBe(true);
  });
});

runStoreContract('k8s-base-redis-acl', async () => new RedisStore(url, { cluster: `k8s${unique++}` }));

runBufferContract(
  'k8s-base-redis-acl',
  async (options) => new RedisTrajectoryBuffer(url, { cluster: 'k8s', name: `buf${unique++}`, ...options }),
);

describe('shutdown', () => {
  it('redis-server is the process the script became, and SIGTERM stops it cleanly', async () => {
    redis!.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});
