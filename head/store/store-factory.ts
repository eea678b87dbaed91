/** Turns the `--store` flag into a store: `memory` (the embedded default) or a Redis URL. */
import { ConfigError } from '../../common/errors.js';
import { MemoryStore } from './memory-store.js';
import { RedisStore, type RedisStoreOptions, redactUrl } from './redis-store.js';
import type { ClusterStore } from './types.js';

export function createStore(spec: string, options: RedisStoreOptions = {}): ClusterStore {
  const trimmed = spec.trim();
  if (trimmed === 'memory') return new MemoryStore(options);
  if (/^rediss?:\/\//i.test(trimmed)) return new RedisStore(trimmed, options);
  throw new ConfigError(
    `invalid store ${JSON.stringify(redactUrl(spec))}: --store expects memory, redis://… or rediss://…`,
    { fields: { store: redactUrl(spec) } },
  );
}
