/**
 * The behaviour every TrajectoryBuffer must share; each implementation's test file runs it.
 * `make` returns a new buffer on a name no other call has used (so the Redis ones never meet).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import {
  type BufferOptions,
  RECORD_SCHEMA_VERSION,
  type TrajectoryBuffer,
  type TrajectoryRecord,
} from './types.js';

let counter = 0;

export function makeRecord(overrides: Partial<TrajectoryRecord> = {}): TrajectoryRecord {
  const n = counter++;
  return {
    schemaVersion: RECORD_SCHEMA_VERSION,
    trajectoryId: `traj-${n}`,
    sessionId: 'session-1',
    turn: n,
    messages: [
      { role: 'system', content: 'You are a helpful agent.' },
      { role: 'user', content: `question ${n}` },
    ],
    promptTokenIds: [1, 2, 3, n],
    tokenIds: [10, 11, 12],
    logprobs: [-0.1, -0.25, -1.5],
    nextState: { role: 'user', content: 'thanks' },
    votes: [1, 1, -1],
    score: 1,
    hint: null,
    weightVersion: 7,
    createdAtMs: 1_700_000_000_000 + n,
    responseText: 'an answer',
    sampling: { temperature: 0.6, topP: 0.95, topK: 20, seed: n },
    group: { id: `group-${n}`, size: 1, index: 0 },
    episode: { id: `episode-${n}`, turns: 1, finalMessages: null },
    task: null,
    requestId: `chatcmpl-${n}`,
    judgement: { reward: 1, step: null, feedback: null, atLeastOne: false },
    teacher: null,
    ...overrides,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function runBufferContract(
  name: string,
  make: (options?: BufferOptions) => Promise<TrajectoryBuffer>,
): void {
  describe(`${name} trajectory buffer contract`, () => {
    const opened: TrajectoryBuffer[] = [];
    const dir = mkdtempSync(join(tmpdir(), 'clawray-buffer-'));

    async function fresh(options?: BufferOptions): Promise<TrajectoryBuffer> {
      const b = await make(options);
      opened.push(b);
      return b;
    }

    afterEach(async () => {
      await Promise.all(opened.splice(0).map((b) => b.close()));
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('appends, reads and acks; ids increase as <ms>-<seq>', async () => {
      const b = await fresh();
      const records = [makeRecord(), makeRecord(), makeRecord()];
      const ids = await b.append(records);
      expect(ids).toHaveLength(3);
      for (const id of ids) expect(id).toMatch(/^\d+-\d+$/);
      expect(await b.length()).toBe(3);
      const got = await b.read({ group: 'g', consumer: 'c1', count: 10 });
      expect(got.map((e) => e.entryId)).toEqual(ids);
      expect(got.map((e) => e.record)).toEqual(records);
      expect(got.every((e) => e.deliveries === 1)).toBe(true);
      expect((await b.pending('g')).map((p) => p.entryId)).toEqual(ids);
      expect(await b.ack('g', ids.slice(0, 2))).toBe(2);
      expect(await b.ack('g', ids.slice(0, 2))).toBe(0);
      const pend = await b.pending('g');
      expect(pend).toHaveLength(1);
      expect(pend[0]).toMatchObject({ entryId: ids[2], consumer: 'c1', deliveries: 1 });
      expect(await b.read({ group: 'g', consumer: 'c1', count: 10 })).toEqual([]);
    });

    it('splits entries between two consumers of one group; two groups each see everything', async () => {
      const b = await fresh();
      const ids = await b.append(Array.from({ length: 10 }, () => makeRecord()));
      const a = await b.read({ group: 'g1', consumer: 'a', count: 4 });
      const c = await b.read({ group: 'g1', consumer: 'c', count: 100 });
      expect(a).toHaveLength(4);
      expect(c).toHaveLength(6);
      expect([...a, ...c].map((e) => e.entryId)).toEqual(ids);
      const other = await b.read({ group: 'g2', consumer: 'x', count: 100 });
      expect(other.map((e) => e.entryId)).toEqual(ids);
    });

    it('a blocking read wakes on append and times out empty', async () => {
      const b = await fresh();
      const t0 = Date.now();
      expect(await b.read({ group: 'g', consumer: 'c', blockMs: 100 })).toEqual([]);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(90);
      const waiting = b.read({ group: 'g', consumer: 'c', count: 5, blockMs: 10_000 });
      await sleep(50);
      const t1 = Date.now();
      const [id] = await b.append([makeRecord()]);
      const got = await waiting;
      expect(Date.now() - t1).toBeLessThan(2000);
      expect(got.map((e) => e.entryId)).toEqual([id]);
    });

    it('does not append a trajectoryId twice and returns the existing entry id', async () => {
      const b = await fresh();
      const r = makeRecord();
      const [first] = await b.append([r]);
      const again = await b.append([{ ...r, score: -1 }, makeRecord(), r]);
      expect(again[0]).toBe(first);
      expect(again[2]).toBe(first);
      expect(again[1]).not.toBe(first);
      expect(await b.length()).toBe(2);
      const got = await b.read({ group: 'g', consumer: 'c', count: 10 });
      expect(got[0].record.score).toBe(1);
    });

    it('re-delivers exactly the unacked entries of a dead consumer via claimStale', async () => {
      const b = await fresh();
      const ids = await b.append(Array.from({ length: 5 }, () => makeRecord()));
      const batch = await b.read({ group: 'g', consumer: 'dies', count: 5 });
      expect(batch).toHaveLength(5);
      await b.ack('g', [batch[0].entryId, batch[1].entryId]);
      // Not yet idle long enough: nothing claimed.
      expect(await b.claimStale({ group: 'g', consumer: 'rescuer', idleMs: 10_000 })).toEqual([]);
      await sleep(80);
      const claimed = await b.claimStale({ group: 'g', consumer: 'rescuer', idleMs: 50 });
      expect(claimed.map((e) => e.entryId)).toEqual(ids.slice(2));
      expect(claimed.every((e) => e.deliveries === 2)).toBe(true);
      expect(claimed.map((e) => e.record.trajectoryId)).toEqual(
        batch.slice(2).map((e) => e.record.trajectoryId),
      );
      expect((await b.pending('g')).every((p) => p.consumer === 'rescuer')).toBe(true);
      expect(
        await b.ack(
          'g',
          claimed.map((e) => e.entryId),
        ),
      ).toBe(3);
      expect(await b.pending('g')).toEqual([]);
      expect(await b.deadLetters()).toEqual([]);
    });

    it('moves an entry delivered more than maxDeliveries times to the dead letters', async () => {
      const b = await fresh({ maxDeliveries: 2 });
      const [id, okId] = await b.append([makeRecord(), makeRecord()]);
      const first = await b.read({ group: 'g', consumer: 'c1', count: 2 });
      expect(first).toHaveLength(2);
      await b.ack('g', [okId]);
      await sleep(30);
      const second = await b.claimStale({ group: 'g', consumer: 'c2', idleMs: 20 });
      expect(second.map((e) => [e.entryId, e.deliveries])).toEqual([[id, 2]]);
      await sleep(30);
      expect(await b.claimStale({ group: 'g', consumer: 'c3', idleMs: 20 })).toEqual([]);
      expect(await b.pending('g')).toEqual([]);
      const dead = await b.deadLetters();
      expect(dead).toHaveLength(1);
      expect(dead[0]).toMatchObject({ entryId: id, group: 'g', deliveries: 2 });
      expect(dead[0].record).toEqual(first[0].record);
      expect(await b.length()).toBe(2);
    });

    it('gives a restarted consumer back what it was delivered and had not acked (readPending)', async () => {
      const b = await fresh();
      const ids = await b.append(Array.from({ length: 6 }, () => makeRecord()));
      const first = await b.read({ group: 'g', consumer: 'driver', count: 4 });
      await b.read({ group: 'g', consumer: 'other', count: 1 });
      await b.ack('g', [first[0].entryId]);
      // The driver restarts under the same consumer name: no idle time to wait for.
      const again = await b.readPending({ group: 'g', consumer: 'driver' });
      expect(again.map((e) => e.entryId)).toEqual(ids.slice(1, 4));
      expect(again.map((e) => e.record)).toEqual(first.slice(1).map((e) => e.record));
      expect(again.every((e) => e.deliveries === 2)).toBe(true);
      // Oldest first, at most `count`; the other consumer's entry stays where it was.
      const one = await b.readPending({ group: 'g', consumer: 'driver', count: 1 });
      expect(one.map((e) => [e.entryId, e.deliveries])).toEqual([[ids[1], 3]]);
      const pend = await b.pending('g');
      expect(pend.map((p) => [p.entryId, p.consumer, p.deliveries])).toEqual([
        [ids[1], 'driver', 3],
        [ids[2], 'driver', 2],
        [ids[3], 'driver', 2],
        [ids[4], 'other', 1],
      ]);
      // New entries still come only through read.
      expect((await b.read({ group: 'g', consumer: 'driver', count: 10 })).map((e) => e.entryId)).toEqual([
        ids[5],
      ]);
      await b.ack(
        'g',
        again.map((e) => e.entryId),
      );
      expect((await b.readPending({ group: 'g', consumer: 'driver' })).map((e) => e.entryId)).toEqual([
        ids[5],
      ]);
      expect(await b.readPending({ group: 'g', consumer: 'nobody' })).toEqual([]);
      expect(await b.readPending({ group: 'fresh-group', consumer: 'driver' })).toEqual([]);
    });

    it('readPending moves an entry already delivered maxDeliveries times to the dead letters', async () => {
      const b = await fresh({ maxDeliveries: 2 });
      const [id] = await b.append([makeRecord()]);
      const [delivered] = await b.read({ group: 'g', consumer: 'driver' });
      expect((await b.readPending({ group: 'g', consumer: 'driver' })).map((e) => e.deliveries)).toEqual([2]);
      expect(await b.readPending({ group: 'g', consumer: 'driver' })).toEqual([]);
      expect(await b.pending('g')).toEqual([]);
      const dead = await b.deadLetters();
      expect(dead).toHaveLength(1);
      expect(dead[0]).toMatchObject({ entryId: id, group: 'g', deliveries: 2 });
      expect(dead[0].record).toEqual(delivered.record);
      expect((await b.stats()).groups.g).toEqual({ acked: 0, pending: 0, deadLetters: 1, unread: 0 });
    });

    it('stats counts appended, duplicates, acked / pending / dead / unread per group, trained', async () => {
      const b = await fresh({ maxDeliveries: 1 });
      expect(await b.stats()).toEqual({
        appended: 0,
        duplicates: 0,
        length: 0,
        trained: 0,
        deadLetters: 0,
        groups: {},
      });
      const records = Array.from({ length: 4 }, () => makeRecord());
      await b.append(records);
      await b.append([records[0]]);
      const got = await b.read({ group: 'train', consumer: 'c', count: 3 });
      await b.ack('train', [got[0].entryId, got[1].entryId]);
      await b.ack('train', [got[0].entryId]); // already acked: not counted twice
      await b.read({ group: 'judge', consumer: 'c', count: 1 });
      await sleep(30);
      await b.claimStale({ group: 'judge', consumer: 'c2', idleMs: 10 }); // maxDeliveries 1: dead
      await b.markTrained([records[0].trajectoryId, records[1].trajectoryId]);
      expect(await b.stats()).toEqual({
        appended: 4,
        duplicates: 1,
        length: 4,
        trained: 2,
        deadLetters: 1,
        groups: {
          judge: { acked: 0, pending: 0, deadLetters: 1, unread: 3 },
          train: { acked: 2, pending: 1, deadLetters: 0, unread: 1 },
        },
      });
    });

    it('destroy deletes the buffer for good and closes it', async () => {
      const name = `destroyed-${Date.now().toString(36)}-${counter++}`;
      const b = await fresh({ name, maxDeliveries: 1 });
      const records = [makeRecord(), makeRecord()];
      await b.append(records);
      await b.read({ group: 'g', consumer: 'c', count: 1 });
      await sleep(30);
      await b.claimStale({ group: 'g', consumer: 'c2', idleMs: 10 });
      await b.markTrained([records[0].trajectoryId]);
      await b.destroy();
      await expect(b.length()).rejects.toThrow(/closed/);
      const again = await fresh({ name });
      expect(await again.stats()).toEqual({
        appended: 0,
        duplicates: 0,
        length: 0,
        trained: 0,
        deadLetters: 0,
        groups: {},
      });
      expect(await again.deadLetters()).toEqual([]);
      expect(await again.wasTrained(records[0].trajectoryId)).toBe(false);
      // The trajectory ids are forgotten too: the same record appends as a new entry.
      expect(await again.append([records[1]])).toHaveLength(1);
      expect((await again.read({ group: 'g', consumer: 'c', count: 10 })).map((e) => e.record)).toEqual([
        records[1],
      ]);
    });

    it('markTrained / wasTrained guard against training a redelivered entry twice', async () => {
      const b = await fresh();
      expect(await b.wasTrained('t-x')).toBe(false);
      expect(await b.markTrained(['t-x', 't-y'])).toBe(2);
      expect(await b.markTrained(['t-x', 't-z'])).toBe(1);
      expect(await b.wasTrained('t-x')).toBe(true);
      expect(await b.wasTrained('t-z')).toBe(true);
      expect(await b.wasTrained('t-w')).toBe(false);
    });

    it('round-trips records through JSONL export and import into a fresh buffer', async () => {
      const b = await fresh();
      const records = [
        makeRecord({
          hint: 'check the path first',
          score: null,
          nextState: null,
          extra: { track: 'terminal' },
        }),
        ...Array.from({ length: 2500 }, () => makeRecord()),
      ];
      await b.append(records);
      const file = join(dir, `${name}-export.jsonl`);
      expect(await b.exportJsonl(file)).toBe(records.length);
      const c = await fresh();
      const ids = await c.importJsonl(file);
      expect(ids).toHaveLength(records.length);
      const got = await c.read({ group: 'g', consumer: 'c', count: 10_000 });
      expect(got.map((e) => e.record)).toEqual(records);
      // Importing again appends nothing: the trajectory ids are already there.
      expect(await c.importJsonl(file)).toEqual(ids);
      expect(await c.length()).toBe(records.length);
    });

    it('rejects an invalid JSONL line naming the file, line and field', async () => {
      const b = await fresh();
      const file = join(dir, `${name}-bad.jsonl`);
      const bad = { ...makeRecord(), tokenIds: [1, 'x', 3] };
      writeFileSync(file, `${JSON.stringify(makeRecord())}\n${JSON.stringify(bad)}\n`);
      await expect(b.importJsonl(file)).rejects.toThrow(/bad\.jsonl:2.*tokenIds\.1/);
    });

    it('trims to about maxLen, keeping at least the newest maxLen entries', async () => {
      const b = await fresh({ maxLen: 50 });
      const all: string[] = [];
      for (let i = 0; i < 10; i++)
        all.push(...(await b.append(Array.from({ length: 50 }, () => makeRecord()))));
      const len = await b.length();
      expect(len).toBeGreaterThanOrEqual(50);
      expect(len).toBeLessThan(500);
      const got = await b.read({ group: 'g', consumer: 'c', count: 1000 });
      expect(got.map((e) => e.entryId)).toEqual(all.slice(all.length - len));
    });

    it('rejects an invalid record with an error naming the field', async () => {
      const b = await fresh();
      await expect(b.append([{ ...makeRecord(), turn: -1 }])).rejects.toThrow(ConfigError);
      await expect(b.append([{ ...makeRecord(), turn: -1 }])).rejects.toThrow(/turn/);
      const { sessionId: _drop, ...noSession } = makeRecord();
      await expect(b.append([noSession as TrajectoryRecord])).rejects.toThrow(/sessionId/);
      await expect(b.append([{ ...makeRecord(), logprobs: [-1] }])).rejects.toThrow(/logprobs/);
      await expect(
        b.append([{ ...makeRecord(), nextState: { content: 'no role' } } as never]),
      ).rejects.toThrow(/nextState\.role/);
      // A bad record in a batch appends nothing.
      await expect(b.append([makeRecord(), { ...makeRecord(), votes: ['yes'] } as never])).rejects.toThrow(
        /votes\.0/,
      );
      expect(await b.length()).toBe(0);
    });
  });
}
