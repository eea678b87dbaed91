/**
 * The HSET that puts a batch of records into the buffer's payloads hash (see redis-buffer.ts),
 * built as the bytes Redis reads (RESP) with every record encoded straight into its place.
 *
 * Given Buffer arguments, ioredis writes a command piece by piece (a header string per
 * argument, a copy of every piece into one buffer, another copy into the MULTI around it); with
 * the encoding's own buffer that made four large allocations and three copies of a batch, and
 * the allocations alone made V8 collect its young generation every few batches ("external
 * memory pressure"). Here a batch is encoded once into the command that is sent, in a buffer
 * the caller hands back for the next batch once the command's reply came (a fresh 300 KB
 * buffer per batch still cost a full mark-compact every ~40 batches, ~15% of the append time).
 */
import { Command } from 'ioredis';
import { MsgpackWriter } from './msgpack-writer.js';
import { writeRecord } from './record-codec.js';

/** An ioredis command whose bytes are already encoded; ioredis only queues and writes it. */
export class EncodedCommand extends Command {
  constructor(
    name: string,
    private readonly bytes: Buffer,
  ) {
    super(name);
  }

  override toWritable(): Buffer {
    return this.bytes;
  }
}

export interface PayloadsHset {
  command: EncodedCommand;
  /** The records' trajectoryIds, in order. */
  trajectoryIds: string[];
  /** The whole buffer the command's bytes are in: reusable for another batch once it was sent. */
  buffer: Buffer;
}

/** Bytes a record took in the last batch: sizes the next batch's buffer, so it rarely grows. */
let recordBytesEstimate = 4096;

/**
 * `HSET key <fieldPrefix>0 <record 0> <fieldPrefix>1 <record 1> …`, each record validated and
 * encoded as `writeRecord` does; throws like it for the first bad record. Written into `reuse`
 * (a previous result's `buffer`) when given one that is large enough for the estimate.
 */
export function payloadsHset(
  key: string,
  fieldPrefix: string,
  records: readonly unknown[],
  reuse?: Buffer,
): PayloadsHset {
  const estimate = 64 + key.length + records.length * recordBytesEstimate;
  const out = new MsgpackWriter(
    estimate,
    reuse !== undefined && reuse.length >= estimate ? reuse : undefined,
  );
  const start = out.pos;
  writeHeader(out, 0x2a, 2 + 2 * records.length); // '*': an array of that many bulk strings
  writeBulkString(out, 'HSET');
  writeBulkString(out, key);
  const trajectoryIds = new Array<string>(records.length);
  // A record's length is known only once it is written, and RESP has no padding: its header is
  // written for a guess of how many digits it takes (the previous record's count), and the
  // record is moved in the rare case the guess was wrong.
  let digits = 4;
  for (let i = 0; i < records.length; i++) {
    writeBulkString(out, fieldPrefix + i);
    out.reserve(3 + digits);
    const headerAt = out.pos;
    const recordAt = headerAt + 1 + digits + 2;
    out.pos = recordAt;
    trajectoryIds[i] = writeRecord(out, records[i]);
    const length = out.pos - recordAt;
    const need = decimalDigits(length);
    if (need !== digits) {
      out.reserve(need - digits);
      out.buf.copyWithin(recordAt + need - digits, recordAt, out.pos);
      out.pos += need - digits;
      digits = need;
    }
    writeHeader(out, 0x24, length, headerAt); // '$': a bulk string of `length` bytes
    writeCrlf(out);
  }
  recordBytesEstimate = Math.ceil((out.pos - start) / Math.max(1, records.length)) + 64;
  return {
    command: new EncodedCommand('hset', out.buf.subarray(start, out.pos)),
    trajectoryIds,
    buffer: out.buf,
  };
}

function writeBulkString(out: MsgpackWriter, s: string): void {
  const length = Buffer.byteLength(s);
  writeHeader(out, 0x24, length);
  out.reserve(length + 2);
  out.pos += out.buf.write(s, out.pos, length, 'utf8');
  writeCrlf(out);
}

/** `<type><n>\r\n`, at `at` (space already reserved and skipped) or appended at the end. */
function writeHeader(out: MsgpackWriter, type: number, n: number, at?: number): void {
  const digits = decimalDigits(n);
  if (at === undefined) out.reserve(3 + digits);
  const p = at ?? out.pos;
  const b = out.buf;
  b[p] = type;
  for (let i = p + digits, x = n; i > p; i--, x = Math.floor(x / 10)) b[i] = 0x30 + (x % 10);
  b[p + digits + 1] = 0x0d;
  b[p + digits + 2] = 0x0a;
  if (at === undefined) out.pos = p + digits + 3;
}

function writeCrlf(out: MsgpackWriter): void {
  out.reserve(2);
  out.buf[out.pos++] = 0x0d;
  out.buf[out.pos++] = 0x0a;
}

function decimalDigits(n: number): number {
  let digits = 1;
  for (let x = n; x >= 10; x = Math.floor(x / 10)) digits++;
  return digits;
}
