/**
 * `npm run bench -- buffer`: trajectory buffer appends/s and reads+acks/s for the in-memory and
 * Redis Streams implementations (batches of realistic records: ~200 response token ids with
 * logprobs), against a `redis-benchmark` XADD baseline measured on the same temporary
 * redis-server in the same run.
 *
 * The baseline is made as strong as the buffer's own load, not weaker: each XADD carries a
 * payload as large as one encoded record, and as many appends are in flight (clients ×
 * pipeline depth) as the buffer has (concurrent batches × batch size). It runs before and after
 * the buffer and the better of the two runs counts. The buffer pays for more per record than a
 * bare XADD: validation, encoding, the idempotency lookup and the trajectoryId → entry id hash.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { MemoryTrajectoryBuffer } from '../jobs/buffer/memory-buffer.js';
import { encodeRecord, RECORD_FIELD } from '../jobs/buffer/record-codec.js';
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

/** Most records a run appends; the warm-up run appends a tenth, so the JIT has compiled the path. */
async function measure(
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

interface XaddBaseline {
  command: string;
  payloadBytes: number;
  clients: number;
  pipeline: number;
  requests: number;
  perSec: number;
}

/** `redis-benchmark` XADD of a `payloadBytes` value; the rate from its CSV line. */
async function redisBenchmarkXadd(
  port: number,
  payloadBytes: number,
  clients: number,
  pipeline: number,
): Promise<XaddBaseline> {
  const requests = 100_000;
  const key = 'bench:redis-benchmark';
  const { stdout } = await promisify(execFile)(
    'redis-benchmark',
    [
      ...['-p', String(port), '-n', String(requests), '-c', String(clients), '-P', String(pipeline)],
      '--csv',
      ...['XADD', key, '*', RECORD_FIELD, 'x'.repeat(payloadBytes)],
    ],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  // "XADD bench:redis-benchmark * m xxx…","151285.92","0.408",…
  const m = /"XADD[^"]*","([\d.]+)"/.exec(stdout);
  if (!m) throw new Error(`cannot parse redis-benchmark output: ${stdout.slice(0, 200)}`);
  await promisify(execFile)('redis-cli', ['-p', String(port), 'DEL', key]);
  return {
    command: `XADD ${key} * ${RECORD_FIELD} <${payloadBytes} bytes>`,
    payloadBytes,
    clients,
    pipeline,
    requests,
    perSec: round(Number(m[1])),
  };
}

export async function runBufferBench(): Promise<Record<string, unknown>> {
  log(`memory buffer: ${RECORDS} records, batches of ${BATCH}`);
  const warmMemory = new MemoryTrajectoryBuffer({ name: 'warm-up' });
  await measure(warmMemory, 'mem-warm', RECORDS / 10);
  await warmMemory.destroy();
  const memory = new MemoryTrajectoryBuffer();
  const mem = await measure(memory, 'mem');
  await memory.close();
  const sample = record(0, 'redis');
  const payloadBytes = encodeRecord(sample).bytes.length;
  const server = await startRedisServer();
  try {
    // As many appends in flight as the buffer bench has: CONCURRENT_BATCHES × BATCH.
    const baseline = () => redisBenchmarkXadd(server.port, payloadBytes, CONCURRENT_BATCHES, BATCH);
    log(
      `redis-benchmark XADD baseline: ${payloadBytes}-byte payload, ${CONCURRENT_BATCHES} clients x pipeline ${BATCH}`,
    );
    const before = await baseline();
    log(`redis buffer: ${RECORDS} records, batches of ${BATCH}`);
    const warmRedis = new RedisTrajectoryBuffer(server.url, { name: 'warm-up' });
    await measure(warmRedis, 'redis-warm', RECORDS / 10);
    await warmRedis.destroy();
    const redis = new RedisTrajectoryBuffer(server.url, { name: 'bench' });
    const red = await measure(redis, 'redis');
    await redis.destroy();
    const after = await baseline();
    const best = before.perSec >= after.perSec ? before : after;
    log('redis-benchmark XADD, unpipelined (its defaults: 50 clients, pipeline 1), for reference');
    const unpipelined = await redisBenchmarkXadd(server.port, payloadBytes, 50, 1);
    return {
      bench: 'buffer',
      records: RECORDS,
      batch: BATCH,
      concurrentBatches: CONCURRENT_BATCHES,
      tokensPerRecord: sample.tokenIds.length,
      recordBytes: payloadBytes,
      recordJsonBytes: JSON.stringify(sample).length,
      memoryAppendsPerSec: mem.appendsPerSec,
      memoryReadAcksPerSec: mem.readAcksPerSec,
      redisAppendsPerSec: red.appendsPerSec,
      redisReadAcksPerSec: red.readAcksPerSec,
      redisBenchmark: { ...best, runs: [before.perSec, after.perSec] },
      redisBenchmarkXaddPerSec: best.perSec,
      redisAppendVsRedisBenchmark: Math.round((red.appendsPerSec / best.perSec) * 100) / 100,
      redisBenchmarkUnpipelinedXaddPerSec: unpipelined.perSec,
    };
  } finally {
    await server.stop();
  }
}
