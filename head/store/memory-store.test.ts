import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { MemoryStore } from './memory-store.js';
import { runStoreContract } from './store.contract.js';

runStoreContract('memory', async () => new MemoryStore());

describe('MemoryStore', () => {
  it('has kind memory and the default cluster name', () => {
    const store = new MemoryStore();
    expect(store.kind).toBe('memory');
    expect(store.cluster).toBe('default');
  });

  it('rejects a malformed cluster name', () => {
    expect(() => new MemoryStore({ cluster: 'a:b' })).toThrow(ConfigError);
  });
});
