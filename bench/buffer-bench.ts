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
import { encodeRecord, RECORD_FIELD } from '../jobs/buffer/record-codec.js';
import { BATCH, CONCURRENT_BATCHES, measureInChild, RECORDS, record } from './buffer-measure.js';
import { startRedisServer } from './redis-server.js';

const log = (line: string) => process.stderr.write(`${line}\n`);
const round = (x: number) => Math.round(x);

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
  const mem = await measureInChild('memory');
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
    const red = await measureInChild('redis', server.url);
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
