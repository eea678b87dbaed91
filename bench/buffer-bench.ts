/**
 * `npm run bench -- buffer`: trajectory buffer appends/s and reads+acks/s for the in-memory and
 * Redis Streams implementations (batches of realistic records: ~200 response token ids with
 * logprobs), against a `redis-benchmark` XADD baseline measured on the same temporary
 * redis-server in the same run.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { MemoryTrajectoryBuffer } from '../jobs/buffer/memory-buffer.js';
import { RedisTrajectoryBuffer } from '../jobs/buffer/redis-buffer.js';
import type { TrajectoryBuffer, TrajectoryRecord } from '../jobs/buffer/types.js';
import { startRedisServer } from './redis-server.js';

const log = (line: string) => process.stderr.write(`${line}\n`);
const round = (x: number) => Math.round(x);

const RECORDS = 20_000;
const BATCH = 100;
const CONCURRENT_BATCHES = 4;

function record(i: number, run: string): TrajectoryRecord {
  return {
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
  };
}

async function measure(
  buffer: TrajectoryBuffer,
  run: string,
): Promise<{ appendsPerSec: number; readAcksPerSec: number }> {
  const records = Array.from({ length: RECORDS }, (_, i) => record(i, run));
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
  const appendsPerSec = RECORDS / ((performance.now() - t0) / 1000);
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
  if (done !== RECORDS) throw new Error(`read ${done} of ${RECORDS} records`);
  const readAcksPerSec = RECORDS / ((performance.now() - t0) / 1000);
  return { appendsPerSec: round(appendsPerSec), readAcksPerSec: round(readAcksPerSec) };
}

async function redisBenchmarkXadd(port: number): Promise<number> {
  const { stdout } = await promisify(execFile)('redis-benchmark', [
    '-p',
    String(port),
    '-n',
    '50000',
    '-q',
    'XADD',
    'bench',
    '*',
    'f',
    'v',
  ]);
  // "XADD bench * f v: 123456.79 requests per second, p50=0.2 msec"
  const m = /([\d.]+) requests per second/.exec(stdout);
  if (!m) throw new Error(`cannot parse redis-benchmark output: ${stdout}`);
  return Number(m[1]);
}

export async function runBufferBench(): Promise<Record<string, unknown>> {
  log(`memory buffer: ${RECORDS} records, batches of ${BATCH}`);
  const memory = new MemoryTrajectoryBuffer();
  const mem = await measure(memory, 'mem');
  await memory.close();
  const server = await startRedisServer();
  try {
    log('redis-benchmark XADD baseline');
    const baseline = await redisBenchmarkXadd(server.port);
    log(`redis buffer: ${RECORDS} records, batches of ${BATCH}`);
    const redis = new RedisTrajectoryBuffer(`redis://127.0.0.1:${server.port}`, { name: 'bench' });
    const red = await measure(redis, 'redis');
    await redis.close();
    return {
      bench: 'buffer',
      records: RECORDS,
      batch: BATCH,
      tokensPerRecord: 200,
      memoryAppendsPerSec: mem.appendsPerSec,
      memoryReadAcksPerSec: mem.readAcksPerSec,
      redisAppendsPerSec: red.appendsPerSec,
      redisReadAcksPerSec: red.readAcksPerSec,
      redisBenchmarkXaddPerSec: round(baseline),
      redisAppendVsRedisBenchmark: Math.round((red.appendsPerSec / baseline) * 100) / 100,
    };
  } finally {
    await server.stop();
  }
}
