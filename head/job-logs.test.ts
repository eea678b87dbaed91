import { describe, expect, it } from 'vitest';
import { JobLogs, MAX_LOG_READ_BYTES, STORED_LOG_CHUNK_BYTES } from './job-logs.js';
import { MemoryStore } from './store/memory-store.js';

/** Reads the whole stored log from `offset` the way a client does, read after read. */
async function openStore(): Promise<MemoryStore> {
  const store = new MemoryStore();
  await store.open();
  return store;
}

async function readAll(logs: JobLogs, id: string, offset = 0): Promise<{ text: string; reads: number }> {
  let text = '';
  let reads = 0;
  for (;;) {
    const chunk = (await logs.read(id, offset))!;
    reads++;
    text += chunk.text;
    offset = chunk.nextOffset;
    if (chunk.done) return { text, reads };
  }
}

describe('JobLogs (finished jobs’ logs in the cluster store)', () => {
  it('serves a log stored whole, from any offset, with the attempt that wrote it', async () => {
    const logs = new JobLogs(await openStore());
    expect(await logs.read('j1', 0)).toBeUndefined();
    await logs.put('j1', { attempt: 2, data: Buffer.from('hello\nworld\n'), cutAtBytes: 0, sizeBytes: 12 });
    expect(await logs.read('j1', 0)).toEqual({
      text: 'hello\nworld\n',
      nextOffset: 12,
      done: true,
      attempt: 2,
    });
    expect(await logs.read('j1', 6)).toMatchObject({ text: 'world\n', nextOffset: 12, done: true });
    expect(await logs.read('j1', 99)).toMatchObject({ text: '', nextOffset: 12, done: true });
  });

  it('reads across chunk boundaries without splitting a character, offsets of the whole log', async () => {
    const logs = new JobLogs(await openStore());
    // Multi-byte characters straddle both the store's chunks and the reads.
    const text = 'ab€'.repeat(Math.ceil((2.5 * STORED_LOG_CHUNK_BYTES) / 5));
    const data = Buffer.from(text);
    const cutAtBytes = 1000;
    await logs.put('j2', { attempt: 1, data, cutAtBytes, sizeBytes: cutAtBytes + data.length });
    const { text: read, reads } = await readAll(logs, 'j2', cutAtBytes);
    expect(read).toBe(text);
    expect(reads).toBeGreaterThan(data.length / MAX_LOG_READ_BYTES);
  });

  it('says where a cut log starts when read from before the cut', async () => {
    const logs = new JobLogs(await openStore());
    await logs.put('j3', { attempt: 1, data: Buffer.from('tail\n'), cutAtBytes: 500, sizeBytes: 505 });
    expect((await logs.read('j3', 0))!.text).toBe(
      '[clawray: the first 500 bytes of this log were cut; the cluster keeps the last 8 MiB]\ntail\n',
    );
    expect((await logs.read('j3', 502))!.text).toBe('il\n');
  });

  it('replaces a stored log (a shorter one drops the old chunks) and deletes it', async () => {
    const store = await openStore();
    const logs = new JobLogs(store);
    const big = Buffer.alloc(2 * STORED_LOG_CHUNK_BYTES + 10, 'x');
    await logs.put('j4', { attempt: 1, data: big, cutAtBytes: 0, sizeBytes: big.length });
    await logs.put('j4', { attempt: 2, data: Buffer.from('new\n'), cutAtBytes: 0, sizeBytes: 4 });
    expect(await logs.read('j4', 0)).toMatchObject({ text: 'new\n', attempt: 2 });
    expect((await store.list('packages')).length).toBe(2);
    await logs.delete('j4');
    expect(await logs.read('j4', 0)).toBeUndefined();
    expect(await store.list('packages')).toEqual([]);
  });
});
