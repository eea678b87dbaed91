/**
 * The behaviour every ClusterStore backend must share; each backend's test file runs it.
 * `make` returns a new, unopened store on a cluster name no other call has used.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ClusterStore } from './types.js';

export function runStoreContract(name: string, make: () => Promise<ClusterStore>): void {
  describe(`${name} store contract`, () => {
    const opened: ClusterStore[] = [];

    async function fresh(): Promise<ClusterStore> {
      const store = await make();
      opened.push(store);
      await store.open();
      return store;
    }

    afterEach(async () => {
      await Promise.all(opened.splice(0).map((s) => s.close()));
    });

    it('round-trips a record and gives undefined for a missing one', async () => {
      const store = await fresh();
      const node = { id: 'n1', resources: { CPU: 4, GPU: 0.5 }, labels: ['a'], alive: true, parent: null };
      await store.put('nodes', 'n1', node);
      expect(await store.get('nodes', 'n1')).toEqual(node);
      expect(await store.get('nodes', 'n2')).toBeUndefined();
      expect(await store.get('actors', 'n1')).toBeUndefined();
    });

    it('stores plain JSON values, not just objects', async () => {
      const store = await fresh();
      await store.put('jobs', 's', 'text');
      await store.put('jobs', 'z', 0);
      await store.put('jobs', 'n', null);
      expect(await store.get('jobs', 's')).toBe('text');
      expect(await store.get('jobs', 'z')).toBe(0);
      expect(await store.get('jobs', 'n')).toBeNull();
    });

    it('overwrites a record on a second put', async () => {
      const store = await fresh();
      await store.put('actors', 'a1', { state: 'PENDING', restarts: 0 });
      await store.put('actors', 'a1', { state: 'ALIVE' });
      expect(await store.get('actors', 'a1')).toEqual({ state: 'ALIVE' });
      expect(await store.list('actors')).toHaveLength(1);
    });

    it('reports whether delete removed something', async () => {
      const store = await fresh();
      await store.put('jobs', 'j1', { status: 'RUNNING' });
      expect(await store.delete('jobs', 'j1')).toBe(true);
      expect(await store.delete('jobs', 'j1')).toBe(false);
      expect(await store.delete('jobs', 'never')).toBe(false);
      expect(await store.get('jobs', 'j1')).toBeUndefined();
    });

    it('lists each table on its own', async () => {
      const store = await fresh();
      expect(await store.list('nodes')).toEqual([]);
      await store.put('nodes', 'n1', { id: 'n1' });
      await store.put('nodes', 'n2', { id: 'n2' });
      await store.put('actors', 'n1', { id: 'actor' });
      const nodes = await store.list<{ id: string }>('nodes');
      expect(nodes.map((n) => n.id).sort()).toEqual(['n1', 'n2']);
      expect(await store.list('actors')).toEqual([{ id: 'actor' }]);
      expect(await store.list('placementGroups')).toEqual([]);
    });

    it('applies puts and deletes across tables together, in order', async () => {
      const store = await fresh();
      await store.put('placementGroups', 'pg1', { state: 'CREATED' });
      await store.apply([
        { op: 'put', table: 'actors', id: 'a1', value: { pg: 'pg1' } },
        { op: 'delete', table: 'placementGroups', id: 'pg1' },
        { op: 'put', table: 'jobs', id: 'j1', value: 1 },
        { op: 'put', table: 'jobs', id: 'j1', value: 2 },
        { op: 'delete', table: 'nodes', id: 'absent' },
      ]);
      expect(await store.get('actors', 'a1')).toEqual({ pg: 'pg1' });
      expect(await store.get('placementGroups', 'pg1')).toBeUndefined();
      expect(await store.get('jobs', 'j1')).toBe(2);
      await store.apply([]);
    });

    it('applies nothing when one op of a batch is invalid', async () => {
      const store = await fresh();
      await store.put('nodes', 'n1', { v: 1 });
      const bad = [
        { op: 'put', table: 'nodes', id: 'n1', value: { v: 2 } },
        { op: 'delete', table: 'actors', id: 'x' },
        { op: 'put', table: 'jobs', id: 'j1', value: () => 0 },
      ] as const;
      await expect(store.apply([...bad])).rejects.toThrow(/not a JSON value/);
      await expect(
        store.apply([{ op: 'put', table: 'bogus' as 'nodes', id: 'x', value: 1 }]),
      ).rejects.toThrow(/unknown store table/);
      expect(await store.get('nodes', 'n1')).toEqual({ v: 1 });
      expect(await store.get('jobs', 'j1')).toBeUndefined();
    });

    it('keeps a JSON copy: later mutation does not change the stored value', async () => {
      const store = await fresh();
      const value = { list: [1, 2], nested: { x: 1 }, gone: undefined as unknown, when: new Date(0) };
      await store.put('actors', 'a1', value);
      value.list.push(3);
      value.nested.x = 99;
      const stored = { list: [1, 2], nested: { x: 1 }, when: '1970-01-01T00:00:00.000Z' };
      const first = await store.get<typeof stored>('actors', 'a1');
      expect(first).toStrictEqual(stored);
      first!.list.push(4);
      expect(await store.get('actors', 'a1')).toStrictEqual(stored);
    });

    it('rejects values and ids it cannot store', async () => {
      const store = await fresh();
      await expect(store.put('nodes', 'n1', undefined)).rejects.toThrow(/not a JSON value/);
      await expect(store.put('nodes', 'n1', { big: 1n })).rejects.toThrow(/as JSON/);
      await expect(store.put('nodes', '', {})).rejects.toThrow(/non-empty string/);
      expect(await store.list('nodes')).toEqual([]);
    });

    it('opens and closes idempotently, refusing use while closed', async () => {
      const store = await make();
      await expect(store.get('nodes', 'n1')).rejects.toThrow(/open/);
      await store.close();
      await Promise.all([store.open(), store.open()]);
      await store.open();
      await store.put('nodes', 'n1', { ok: true });
      await store.close();
      await store.close();
      await expect(store.put('nodes', 'n2', {})).rejects.toThrow(/close/);
      await store.open();
      expect(await store.get('nodes', 'n1')).toEqual({ ok: true });
      await store.close();
    });

    it('keeps clusters apart', async () => {
      const a = await fresh();
      const b = await fresh();
      await a.put('nodes', 'n1', { owner: 'a' });
      await a.apply([{ op: 'put', table: 'jobs', id: 'j1', value: 'a' }]);
      expect(await b.get('nodes', 'n1')).toBeUndefined();
      expect(await b.list('nodes')).toEqual([]);
      expect(await b.list('jobs')).toEqual([]);
      expect(await b.delete('nodes', 'n1')).toBe(false);
      await b.put('nodes', 'n1', { owner: 'b' });
      expect(await a.get('nodes', 'n1')).toEqual({ owner: 'a' });
    });
  });
}
