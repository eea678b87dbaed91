/**
 * How a trajectory record is stored in Redis. The record itself is `encodeRecord`'s bytes: one
 * msgpack map whose three long arrays are raw little-endian bytes (uint32 token ids, float64
 * logprobs), about half the bytes of JSON text and several times faster to write and read,
 * logprobs bit-exact. A stream entry names where its record is:
 *
 *   `t`, `p`  (main stream) the trajectoryId and the record's field in the buffer's payloads
 *             hash (why the bytes live there: see redis-buffer.ts)
 *   `m`       the encoded record inline (dead-letter entries)
 *   `record`  the record as JSON text inline (legacy: entries written before; read only)
 *
 * Validation happens here, once, in the same pass that fills the byte arrays.
 */
import { endianness } from 'node:os';
import { Unpackr } from 'msgpackr';
import { ConfigError } from '../../common/errors.js';
import { MsgpackWriter, packr } from './msgpack-writer.js';
import { upgradeRecord } from './record-upgrade.js';
import {
  parseRecordRest,
  parseTrajectoryRecord,
  RECORD_SCHEMA_VERSION,
  recordMismatch,
  type TrajectoryRecord,
} from './types.js';

export const TRAJECTORY_FIELD = 't';
export const PAYLOAD_FIELD = 'p';
export const RECORD_FIELD = 'm';
export const LEGACY_JSON_FIELD = 'record';

const BIG_ENDIAN = endianness() === 'BE';

const unpackr = new Unpackr({ useRecords: false });

export interface EncodedRecord {
  trajectoryId: string;
  bytes: Buffer;
}

/**
 * Validates and encodes records; throws ConfigError naming the first bad field (the same
 * message `parseTrajectoryRecord` gives). The encodings are views of one buffer per call, and
 * the arrays are written straight into it: no allocation per record.
 */
export function encodeRecords(values: readonly unknown[]): EncodedRecord[] {
  const out = new MsgpackWriter(values.length * 4096);
  const ranges: [trajectoryId: string, start: number, end: number][] = [];
  for (const value of values) {
    const start = out.pos;
    const trajectoryId = writeRecord(out, value);
    ranges.push([trajectoryId, start, out.pos]);
  }
  return ranges.map(([trajectoryId, start, end]) => ({ trajectoryId, bytes: out.buf.subarray(start, end) }));
}

export function encodeRecord(value: unknown): EncodedRecord {
  return encodeRecords([value])[0];
}

// Keys of the three arrays, as msgpack fixstr bytes.
const KEY_PROMPT = Buffer.from(packr.pack('promptTokenIds'));
const KEY_TOKENS = Buffer.from(packr.pack('tokenIds'));
const KEY_LOGPROBS = Buffer.from(packr.pack('logprobs'));

/**
 * Validates one record and appends it as a msgpack map: the checked rest of the record (as the
 * schema outputs it), then the three arrays as `bin` values. Returns its trajectoryId; throws
 * as `encodeRecords` does.
 */
export function writeRecord(out: MsgpackWriter, given: unknown): string {
  const value = upgradeRecord(given);
  const v = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const { promptTokenIds, tokenIds, logprobs } = v;
  if (!Array.isArray(promptTokenIds) || !Array.isArray(tokenIds) || !Array.isArray(logprobs)) {
    return fail(value);
  }
  const rest = parseRecordRest(v);
  if (rest === undefined || recordMismatch({ ...rest, tokenIds, logprobs }) !== undefined) return fail(value);
  const keys = Object.keys(rest) as (keyof typeof rest)[];
  out.mapHeader(keys.length + 3);
  for (const key of keys) {
    out.value(key);
    out.value(rest[key]);
  }
  if (!out.uint32Bin(KEY_PROMPT, promptTokenIds)) return fail(value, 'promptTokenIds');
  if (!out.uint32Bin(KEY_TOKENS, tokenIds)) return fail(value, 'tokenIds');
  if (!out.float64Bin(KEY_LOGPROBS, logprobs)) return fail(value);
  return rest.trajectoryId;
}

/**
 * Decodes an entry's record field (either format). Stored records were validated on append; one
 * an older clawray stored (record schema 1) is upgraded and validated here, or refused by field.
 */
export function decodeRecord(field: string, value: Buffer): TrajectoryRecord {
  if (field === RECORD_FIELD) {
    const r = unpackr.unpack(value) as Record<string, unknown>;
    r.promptTokenIds = uint32s(r.promptTokenIds, 'promptTokenIds');
    r.tokenIds = uint32s(r.tokenIds, 'tokenIds');
    r.logprobs = float64s(r.logprobs);
    return current(r);
  }
  if (field === LEGACY_JSON_FIELD)
    return current(JSON.parse(value.toString('utf8')) as Record<string, unknown>);
  throw new ConfigError(`stream entry field ${JSON.stringify(field)} is not a trajectory record`, {
    fields: { field },
  });
}

function current(r: Record<string, unknown>): TrajectoryRecord {
  return r.schemaVersion === RECORD_SCHEMA_VERSION ? (r as TrajectoryRecord) : parseTrajectoryRecord(r);
}

/** Where an entry's record is: a field of the payloads hash, or inline in the entry. */
export type EntryRecord = { payloadKey: string } | { field: string; value: Buffer };

/** Reads a stream entry's flat [name, value, …] field list (any of the formats above). */
export function entryRecord(fields: readonly Buffer[]): EntryRecord {
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const name = fields[i].toString('latin1');
    if (name === PAYLOAD_FIELD) return { payloadKey: fields[i + 1].toString() };
    if (name === RECORD_FIELD || name === LEGACY_JSON_FIELD) return { field: name, value: fields[i + 1] };
  }
  throw new ConfigError('stream entry without a record field');
}

/** Reports why the record is invalid: the schema's message, or the token-id range the bytes impose. */
function fail(value: unknown, tokenField?: string): never {
  parseTrajectoryRecord(value); // throws for everything the schema refuses
  const tid = (value as { trajectoryId?: unknown }).trajectoryId;
  throw new ConfigError(
    `invalid trajectory record ${JSON.stringify(tid)}: ${tokenField ?? 'tokenIds'}: token ids must be below 2^32`,
    { fields: { field: tokenField ?? 'tokenIds', trajectoryId: typeof tid === 'string' ? tid : undefined } },
  );
}

/** Copies the bytes out (the view may be unaligned and shares the reply buffer), then to numbers. */
function aligned(bytes: unknown, width: number, field: string): ArrayBuffer {
  if (!(bytes instanceof Uint8Array) || bytes.byteLength % width !== 0) {
    throw new ConfigError(`stream entry: ${field} is not a ${width * 8}-bit array`, { fields: { field } });
  }
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  if (BIG_ENDIAN) {
    const b = Buffer.from(copy.buffer);
    if (width === 8) b.swap64();
    else b.swap32();
  }
  return copy.buffer;
}

function uint32s(bytes: unknown, field: string): number[] {
  const view = new Uint32Array(aligned(bytes, 4, field));
  const out = new Array<number>(view.length);
  for (let i = 0; i < view.length; i++) out[i] = view[i];
  return out;
}

function float64s(bytes: unknown): number[] {
  const view = new Float64Array(aligned(bytes, 8, 'logprobs'));
  const out = new Array<number>(view.length);
  for (let i = 0; i < view.length; i++) out[i] = view[i];
  return out;
}
