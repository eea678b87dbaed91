import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { MemoryStore } from './memory-store.js';
import { RedisStore } from './redis-store.js';
import { createStore } from './store-factory.js';

describe('createStore', () => {
  it('makes a memory store for "memory"', () => {
    const store = createStore('memory', { cluster: 'c1' });
    expect(store).toBeInstanceOf(MemoryStore);
    expect(store.kind).toBe('memory');
    expect((store as MemoryStore).cluster).toBe('c1');
  });

  it('makes a Redis store for redis:// and rediss:// URLs without connecting', async () => {
    for (const url of ['redis://127.0.0.1:1', 'rediss://user:pw@redis.example:6380/2', 'REDIS://h']) {
      const store = createStore(url);
      expect(store).toBeInstanceOf(RedisStore);
      expect(store.kind).toBe('redis');
      await store.close();
    }
  });

  it('names the bad value and the accepted forms', () => {
    for (const spec of ['', 'Memory', 'redis', 'postgres://h/db', 'http://redis:6379']) {
      expect(() => createStore(spec)).toThrow(ConfigError);
    }
    expect(() => createStore('mem')).toThrow(
      'invalid store "mem": --store expects memory, redis://… or rediss://…',
    );
  });

  it('does not echo a password from a mistyped URL', () => {
    expect(() => createStore('redis:/u:hunter2@h')).toThrow(/^(?!.*hunter2)/s);
    expect(() => createStore('edis://u:hunter2@h')).toThrow('edis://u:***@h');
  });

  it('rejects a malformed cluster name for either backend', () => {
    expect(() => createStore('memory', { cluster: 'a b' })).toThrow(ConfigError);
    expect(() => createStore('redis://h', { cluster: 'x*' })).toThrow(ConfigError);
  });
});
