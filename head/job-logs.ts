/**
 * Finished jobs' logs in the cluster store. A supervisor hands the head its job's log (the
 * last MAX_STORED_LOG_BYTES of it) before it reports the final status and is then removed, so
 * `clawray job logs` of a finished job reads it here, after a head restart on Redis too.
 *
 * They live in the store's blob table, `packages`, as ≤ 1 MiB base64 chunks `joblog/ID/N`
 * under a `joblog/ID` record: a package hash never contains `/`, so the two cannot meet.
 * Offsets are those of the whole log, so a client that read the first part from the
 * supervisor goes on here where it stopped.
 */
import { MAX_STORED_LOG_BYTES } from '../common/job-names.js';
import { completeUtf8 } from '../common/utf8.js';
import type { ClusterStore, StoreOp } from './store/types.js';

export const STORED_LOG_CHUNK_BYTES = 1024 * 1024;
/** The most one read returns (the supervisor's reads use the same bound). */
export const MAX_LOG_READ_BYTES = 256 * 1024;

interface StoredLog {
  attempt: number;
  /** The whole log's size, and where the kept part starts in it. */
  sizeBytes: number;
  cutAtBytes: number;
  chunks: number;
  storedAtMs: number;
}

export interface LogRead {
  text: string;
  nextOffset: number;
  done: boolean;
  attempt: number;
}

const recordId = (submissionId: string) => `joblog/${submissionId}`;
const chunkId = (submissionId: string, i: number) => `joblog/${submissionId}/${i}`;

export class JobLogs {
  constructor(private readonly store: ClusterStore) {}

  /** Replaces the job's stored log, in one atomic write (a reader sees the old or the new). */
  async put(
    submissionId: string,
    log: { attempt: number; data: Buffer; cutAtBytes: number; sizeBytes: number },
  ): Promise<void> {
    const previous = await this.store.get<StoredLog>('packages', recordId(submissionId));
    const chunks = Math.ceil(log.data.length / STORED_LOG_CHUNK_BYTES);
    const ops: StoreOp[] = [];
    for (let i = 0; i < chunks; i++) {
      const part = log.data.subarray(i * STORED_LOG_CHUNK_BYTES, (i + 1) * STORED_LOG_CHUNK_BYTES);
      ops.push({
        op: 'put',
        table: 'packages',
        id: chunkId(submissionId, i),
        value: part.toString('base64'),
      });
    }
    for (let i = chunks; i < (previous?.chunks ?? 0); i++) {
      ops.push({ op: 'delete', table: 'packages', id: chunkId(submissionId, i) });
    }
    const record: StoredLog = {
      attempt: log.attempt,
      sizeBytes: log.sizeBytes,
      cutAtBytes: log.cutAtBytes,
      chunks,
      storedAtMs: Date.now(),
    };
    ops.push({ op: 'put', table: 'packages', id: recordId(submissionId), value: record });
    await this.store.apply(ops);
  }

  /** Up to MAX_LOG_READ_BYTES from `offset`; undefined when nothing is stored for the job. */
  async read(submissionId: string, offset: number): Promise<LogRead | undefined> {
    const log = await this.store.get<StoredLog>('packages', recordId(submissionId));
    if (!log) return undefined;
    let notice = '';
    let start = Math.min(Math.max(0, Math.floor(offset)), log.sizeBytes);
    if (start < log.cutAtBytes) {
      notice = `[clawray: the first ${log.cutAtBytes} bytes of this log were cut; the cluster keeps the last ${MAX_STORED_LOG_BYTES / (1024 * 1024)} MiB]\n`;
      start = log.cutAtBytes;
    }
    const length = Math.min(log.sizeBytes - start, MAX_LOG_READ_BYTES);
    const from = start - log.cutAtBytes;
    const parts: Buffer[] = [];
    for (let i = Math.floor(from / STORED_LOG_CHUNK_BYTES); i * STORED_LOG_CHUNK_BYTES < from + length; i++) {
      const data = await this.store.get<string>('packages', chunkId(submissionId, i));
      if (data === undefined) break; // replaced meanwhile: the next read sees the new log
      parts.push(Buffer.from(data, 'base64'));
    }
    const base = Math.floor(from / STORED_LOG_CHUNK_BYTES) * STORED_LOG_CHUNK_BYTES;
    const bytes = completeUtf8(
      Buffer.concat(parts).subarray(from - base, from - base + length),
      start + length < log.sizeBytes,
    );
    const nextOffset = start + bytes.length;
    return {
      text: notice + bytes.toString('utf8'),
      nextOffset,
      done: nextOffset >= log.sizeBytes,
      attempt: log.attempt,
    };
  }

  async delete(submissionId: string): Promise<void> {
    const log = await this.store.get<StoredLog>('packages', recordId(submissionId));
    if (!log) return;
    const ops: StoreOp[] = [{ op: 'delete', table: 'packages', id: recordId(submissionId) }];
    for (let i = 0; i < log.chunks; i++)
      ops.push({ op: 'delete', table: 'packages', id: chunkId(submissionId, i) });
    await this.store.apply(ops);
  }
}
