/**
 * One implementation's measurement for `npm run bench -- buffer`, run in a process of its own
 * (`node buffer-measure.js memory|redis [URL]`, result as one JSON line on stdout): each buffer
 * starts from a fresh heap, so neither pays for the garbage the other left (the 20,000 records
 * the in-memory run keeps made the Redis run's collections, and its appends, half as fast).
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { MemoryTrajectoryBuffer } from '../jobs/buffer/memory-buffer.js';
import { RedisTrajectoryBuffer } from '../jobs/buffer/redis-buffer.js';
import { RECORD_SCHEMA_VERSION, type TrajectoryBuffer, type TrajectoryRecord } from '../jobs/buffer/types.js';

const round = (x: number) => Math.round(x);

export const RECORDS = 20_000;
export const BATCH = 100;
export const CONCURRENT_BATCHES = 4;

export function record(i: number, run: string): TrajectoryRecord {
  return {
    schemaVersion: RECORD_SCHEMA_VERSION,
    trajectoryId: `${run}-${i}`,
    sessionId: `session-${i % 64}`,
    turn: i % 16,
    messages: [
      { role: 'system', content: 'You are a terminal agent. Use the tools to finish the task.' },
      { role: 'user', content: `Task ${i}: list the files under /tmp and count them.` },
    ],
    promptTokenIds: Array.from({ length: 64 }, (_, j) => (i * 31 + j * 7) % 151_000),
    tokenIds: Array.from({ length: 200 }, (_, j) => (i * 13 + j * 17) % 151_000),
    logprobs: Array.from({ length: 200 }, (_, j) => -((i + j) % 97) / 37),
    nextState: { role: 'tool', content: 'a.txt\nb.txt\n2' },
    votes: [1, 1, -1],
    score: 1,
    hint: null,
    weightVersion: 3,
    createdAtMs: Date.now(),
    responseText: 'ls /tmp | wc -l',
    sampling: { temperature: 0.6, topP: 0.95, topK: 20, seed: i },
    group: { id: `${run}-g${i >> 2}`, size: 4, index: i % 4 },
    episode: { id: `${run}-e${i}`, turns: 1, finalMessages: null },
    task: { id: `task-${i % 512}`, reference: { reward: 1, testsPassed: 2, testsTotal: 2 } },
    requestId: null,
    judgement: null,
    teacher: null,
  };
}

/** Most records a run appends; the warm-up run appends a tenth, so the JIT has compiled the path. */
export async function measure(
  buffer: TrajectoryBuffer,
  run: string,
  count = RECORDS,
): Promise<{ appendsPerSec: number; readAcksPerSec: number }> {
  const records = Array.from({ length: count }, (_, i) => record(i, run));
  let t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENT_BATCHES }, async () => {
      while (next < records.length) {
        const start = next;
        next += BATCH;
        await buffer.append(records.slice(start, start + BATCH));
      }
    }),
  );
  const appendsPerSec = count / ((performance.now() - t0) / 1000);
  t0 = performance.now();
  let done = 0;
  await Promise.all(
    Array.from({ length: CONCURRENT_BATCHES }, async (_, c) => {
      for (;;) {
        const got = await buffer.read({ group: 'trainer', consumer: `c${c}`, count: BATCH });
        if (got.length === 0) return;
        await buffer.ack(
          'trainer',
          got.map((e) => e.entryId),
        );
        done += got.length;
      }
    }),
  );
  if (done !== count) throw new Error(`read ${done} of ${count} records`);
  const readAcksPerSec = count / ((performance.now() - t0) / 1000);
  return { appendsPerSec: round(appendsPerSec), readAcksPerSec: round(readAcksPerSec) };
}

export interface Measured {
  appendsPerSec: number;
  readAcksPerSec: number;
}

export type BufferKind = 'memory' | 'redis';

/** Runs the measurement of `kind` in a child process (see the header). */
export async function measureInChild(kind: BufferKind, url = ''): Promise<Measured> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [fileURLToPath(import.meta.url), kind, url],
    {
      maxBuffer: 1024 * 1024,
    },
  );
  return JSON.parse(stdout.trim().split('\n').pop() ?? '') as Measured;
}

async function child(kind: BufferKind, url: string): Promise<Measured> {
  const open = (name: string): TrajectoryBuffer =>
    kind === 'memory' ? new MemoryTrajectoryBuffer({ name }) : new RedisTrajectoryBuffer(url, { name });
  // The warm-up appends a tenth as many records, so the JIT has compiled the path.
  const warm = open('warm-up');
  await measure(warm, `${kind}-warm`, RECORDS / 10);
  await warm.destroy();
  // The better of two runs, as for the redis-benchmark baseline: one run is ~0.2 s, short
  // enough for a collection of the bench's own 100 MB of input records to land in it or not.
  const runs: Measured[] = [];
  for (const run of ['bench-1', 'bench-2']) {
    const buffer = open(run);
    runs.push(await measure(buffer, `${kind}-${run}`));
    await buffer.destroy();
  }
  return {
    appendsPerSec: Math.max(...runs.map((r) => r.appendsPerSec)),
    readAcksPerSec: Math.max(...runs.map((r) => r.readAcksPerSec)),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const kind = process.argv[2] as BufferKind;
  process.stdout.write(`${JSON.stringify(await child(kind, process.argv[3] ?? ''))}\n`);
}
