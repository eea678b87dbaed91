/**
 * The safetensors format (https://github.com/huggingface/safetensors): an 8-byte little-endian
 * header length, a JSON header `{name: {dtype, shape, data_offsets}, __metadata__?}` padded
 * with spaces to 8 bytes, then the raw little-endian tensor bytes. Float tensors come back
 * as Float32Array whatever their stored dtype, because every consumer here (tfjs, ONNX
 * Runtime feeds, the trainer) computes in fp32.
 */
import { closeSync, existsSync, fstatSync, openSync, readFileSync, statSync } from 'node:fs';
import { endianness } from 'node:os';
import { isAbsolute, join, normalize } from 'node:path';
import { writeFileAtomicWith } from '../../common/atomic-file.js';
import { readAt, writeAll } from '../../common/chunked-io.js';
import { ConfigError } from '../../common/errors.js';
import type { WeightMap } from './weight-names.js';

/** Dtypes this reader understands; only the float ones can be written. */
export type SafetensorsDtype = 'F64' | 'F32' | 'F16' | 'BF16' | 'I64' | 'I32' | 'I16' | 'I8' | 'U8' | 'BOOL';
export type WritableDtype = 'F32' | 'F16' | 'BF16';

export const DTYPE_BYTES: Readonly<Record<SafetensorsDtype, number>> = {
  F64: 8,
  F32: 4,
  F16: 2,
  BF16: 2,
  I64: 8,
  I32: 4,
  I16: 2,
  I8: 1,
  U8: 1,
  BOOL: 1,
};

export interface TensorInfo {
  dtype: SafetensorsDtype;
  shape: number[];
  /** Byte range inside the data section (after the header), end exclusive. */
  dataOffsets: [number, number];
}

export interface LoadedTensor {
  /** The dtype it was stored in; `data` is always converted to float32. */
  dtype: SafetensorsDtype;
  shape: number[];
  data: Float32Array;
}

export interface TensorToWrite {
  shape: number[];
  data: Float32Array;
}

export interface SafetensorsContents {
  tensors: Map<string, LoadedTensor>;
  metadata: Record<string, string>;
}

export interface WriteSafetensorsOptions {
  dtype?: WritableDtype;
  /** String-to-string only (the format's rule). Defaults to `{format: 'pt'}`, which transformers requires. */
  metadata?: Record<string, string>;
}

/** The Rust reference implementation refuses headers above 100 MB; so do we, before allocating. */
const MAX_HEADER_BYTES = 100_000_000;
const LITTLE_ENDIAN_HOST = endianness() === 'LE';

function fail(file: string, what: string, tensor?: string, cause?: unknown): never {
  const where = tensor === undefined ? file : `${file}: tensor '${tensor}'`;
  throw new ConfigError(`${where}: ${what}`, { cause, fields: { file, tensor } });
}

const numel = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);

// ---------------------------------------------------------------------------------------------
// Float conversions

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** float32 → bfloat16 bits, rounding to nearest, ties to even (what torch's `.to(bfloat16)` does). */
export function f32ToBf16Bits(x: number): number {
  f32[0] = x;
  const bits = u32[0];
  // A NaN whose payload sits only in the low 16 bits would otherwise truncate to infinity.
  if ((bits & 0x7fffffff) > 0x7f800000) return ((bits >>> 16) & 0x8000) | 0x7fc0;
  // Overflow past the largest bf16 carries into the exponent and lands on infinity, as it should.
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
}

export function bf16BitsToF32(h: number): number {
  u32[0] = (h & 0xffff) << 16;
  return f32[0];
}

/** float32 → IEEE half bits, round to nearest even, with subnormals, overflow to ±inf, quiet NaN. */
export function f32ToF16Bits(x: number): number {
  f32[0] = x;
  const bits = u32[0];
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  let mant = bits & 0x7fffff;
  if (exp === 0xff) return sign | (mant !== 0 ? 0x7e00 : 0x7c00);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // Below half the smallest subnormal (2^-25) everything rounds to zero, ties included.
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rem = mant & ((1 << shift) - 1);
    let res = mant >>> shift;
    if (rem > half || (rem === half && (res & 1) === 1)) res++;
    // A carry out of the mantissa yields 0x400, the smallest normal: the encoding stays right.
    return sign | res;
  }
  let res = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (res & 1) === 1)) res++;
  return sign | res;
}

let f16Table: Float32Array | undefined;

/** All 65,536 halves decoded once: a table lookup beats bit twiddling per element. */
function halfTable(): Float32Array {
  if (f16Table) return f16Table;
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exp = (h >>> 10) & 0x1f;
    const mant = h & 0x3ff;
    if (exp === 0) t[h] = sign * mant * 2 ** -24;
    else if (exp === 0x1f) t[h] = mant ? Number.NaN : sign * Number.POSITIVE_INFINITY;
    else t[h] = sign * (1 + mant / 1024) * 2 ** (exp - 15);
  }
  f16Table = t;
  return t;
}

export function f16BitsToF32(h: number): number {
  return halfTable()[h & 0xffff];
}

/** Decodes `bytes` (little-endian, any alignment) of `dtype` into float32. */
export function decodeToFloat32(bytes: Uint8Array, dtype: SafetensorsDtype): Float32Array {
  const n = bytes.byteLength / DTYPE_BYTES[dtype];
  const out = new Float32Array(n);
  // Copying into a fresh buffer gives typed-array views the alignment the file may not have.
  const aligned = bytes.byteOffset % 8 === 0 ? bytes : bytes.slice();
  const { buffer, byteOffset } = aligned;
  if (LITTLE_ENDIAN_HOST) {
    switch (dtype) {
      case 'F32':
        out.set(new Float32Array(buffer, byteOffset, n));
        return out;
      case 'F64':
        out.set(new Float64Array(buffer, byteOffset, n));
        return out;
      case 'BF16': {
        const src = new Uint16Array(buffer, byteOffset, n);
        const dst = new Uint32Array(out.buffer);
        for (let i = 0; i < n; i++) dst[i] = src[i] << 16;
        return out;
      }
      case 'F16': {
        const src = new Uint16Array(buffer, byteOffset, n);
        const table = halfTable();
        for (let i = 0; i < n; i++) out[i] = table[src[i]];
        return out;
      }
      case 'I32':
        out.set(new Int32Array(buffer, byteOffset, n));
        return out;
      case 'I16':
        out.set(new Int16Array(buffer, byteOffset, n));
        return out;
      case 'I8':
        out.set(new Int8Array(buffer, byteOffset, n));
        return out;
      case 'U8':
      case 'BOOL':
        out.set(new Uint8Array(buffer, byteOffset, n));
        return out;
      case 'I64': {
        const src = new BigInt64Array(buffer, byteOffset, n);
        for (let i = 0; i < n; i++) out[i] = Number(src[i]);
        return out;
      }
    }
  }
  const view = new DataView(buffer, byteOffset, bytes.byteLength);
  for (let i = 0; i < n; i++) {
    switch (dtype) {
      case 'F32':
        out[i] = view.getFloat32(i * 4, true);
        break;
      case 'F64':
        out[i] = view.getFloat64(i * 8, true);
        break;
      case 'BF16':
        out[i] = bf16BitsToF32(view.getUint16(i * 2, true));
        break;
      case 'F16':
        out[i] = f16BitsToF32(view.getUint16(i * 2, true));
        break;
      case 'I64':
        out[i] = Number(view.getBigInt64(i * 8, true));
        break;
      case 'I32':
        out[i] = view.getInt32(i * 4, true);
        break;
      case 'I16':
        out[i] = view.getInt16(i * 2, true);
        break;
      case 'I8':
        out[i] = view.getInt8(i);
        break;
      case 'U8':
      case 'BOOL':
        out[i] = view.getUint8(i);
        break;
    }
  }
  return out;
}

/** Encodes float32 values as little-endian bytes of `dtype`. */
export function encodeFromFloat32(data: Float32Array, dtype: WritableDtype): Uint8Array {
  const n = data.length;
  const out = new Uint8Array(n * DTYPE_BYTES[dtype]);
  const view = new DataView(out.buffer);
  if (dtype === 'F32') {
    if (LITTLE_ENDIAN_HOST) out.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    else for (let i = 0; i < n; i++) view.setFloat32(i * 4, data[i], true);
  } else {
    const conv = dtype === 'BF16' ? f32ToBf16Bits : f32ToF16Bits;
    for (let i = 0; i < n; i++) view.setUint16(i * 2, conv(data[i]), true);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Header

export interface SafetensorsHeader {
  /** Bytes before the data section: 8 + the header length. */
  dataStart: number;
  tensors: Map<string, TensorInfo>;
  metadata: Record<string, string>;
}

/** Parses and validates the header against the size of the data section that follows it. */
export function parseHeader(
  json: string,
  dataStart: number,
  dataLength: number,
  file: string,
): SafetensorsHeader {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (err) {
    fail(file, `the safetensors header is not valid JSON (${(err as Error).message})`, undefined, err);
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw))
    fail(file, 'the safetensors header is not a JSON object');
  const tensors = new Map<string, TensorInfo>();
  let metadata: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (!value || typeof value !== 'object' || Array.isArray(value)) {
        fail(file, '__metadata__ must be an object of strings');
      }
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        if (typeof v !== 'string') fail(file, `__metadata__.${k} must be a string, got ${JSON.stringify(v)}`);
      }
      metadata = value as Record<string, string>;
      continue;
    }
    if (!value || typeof value !== 'object') fail(file, 'header entry is not an object', name);
    const { dtype, shape, data_offsets } = value as {
      dtype?: unknown;
      shape?: unknown;
      data_offsets?: unknown;
    };
    if (typeof dtype !== 'string' || !Object.hasOwn(DTYPE_BYTES, dtype)) {
      fail(
        file,
        `unsupported dtype ${JSON.stringify(dtype)} (supported: ${Object.keys(DTYPE_BYTES).join(', ')})`,
        name,
      );
    }
    if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      fail(file, `shape must be an array of whole numbers ≥ 0, got ${JSON.stringify(shape)}`, name);
    }
    if (
      !Array.isArray(data_offsets) ||
      data_offsets.length !== 2 ||
      !data_offsets.every((o) => Number.isSafeInteger(o) && o >= 0)
    ) {
      fail(file, `data_offsets must be [begin, end], got ${JSON.stringify(data_offsets)}`, name);
    }
    const [begin, end] = data_offsets as [number, number];
    if (end < begin) fail(file, `data_offsets [${begin}, ${end}] end before they begin`, name);
    if (end > dataLength) {
      fail(
        file,
        `data_offsets [${begin}, ${end}] run past the end of the data (${dataLength} bytes): the file is truncated or corrupt`,
        name,
      );
    }
    const expected = numel(shape as number[]) * DTYPE_BYTES[dtype as SafetensorsDtype];
    if (end - begin !== expected) {
      fail(
        file,
        `data_offsets [${begin}, ${end}] hold ${end - begin} bytes but ${dtype} ${JSON.stringify(shape)} needs ${expected}`,
        name,
      );
    }
    tensors.set(name, {
      dtype: dtype as SafetensorsDtype,
      shape: shape as number[],
      dataOffsets: [begin, end],
    });
  }
  const byStart = [...tensors].filter(([, t]) => t.dataOffsets[1] > t.dataOffsets[0]);
  byStart.sort((a, b) => a[1].dataOffsets[0] - b[1].dataOffsets[0]);
  for (let i = 1; i < byStart.length; i++) {
    const [prevName, prev] = byStart[i - 1];
    const [name, cur] = byStart[i];
    if (cur.dataOffsets[0] < prev.dataOffsets[1]) {
      fail(
        file,
        `data_offsets [${cur.dataOffsets.join(', ')}] overlap tensor '${prevName}' [${prev.dataOffsets.join(', ')}]`,
        name,
      );
    }
  }
  return { dataStart, tensors, metadata };
}

function headerLength(prefix: Uint8Array, fileSize: number, file: string): number {
  if (fileSize < 8) fail(file, `truncated: ${fileSize} bytes, shorter than the 8-byte header length`);
  const n = new DataView(prefix.buffer, prefix.byteOffset, 8).getBigUint64(0, true);
  if (n > BigInt(MAX_HEADER_BYTES))
    fail(file, `header length ${n} is over the ${MAX_HEADER_BYTES}-byte limit (not a safetensors file?)`);
  if (Number(n) > fileSize - 8) {
    fail(file, `truncated: the header says ${n} bytes but only ${fileSize - 8} follow the length`);
  }
  return Number(n);
}

// ---------------------------------------------------------------------------------------------
// Reading

/** Files above this are read tensor by tensor: Node cannot read more than 2 GiB at once. */
const ONE_READ_LIMIT = 2 ** 30;

/** Reads a whole safetensors file (with one read when it is small) and converts every tensor to float32. */
export function readSafetensors(file: string): SafetensorsContents {
  let buf: Buffer;
  try {
    if (statSync(file).size > ONE_READ_LIMIT) return readEachTensor(file);
    buf = readFileSync(file);
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    fail(file, `cannot read (${(err as Error).message})`, undefined, err);
  }
  const n = headerLength(buf, buf.byteLength, file);
  const dataStart = 8 + n;
  const header = parseHeader(buf.toString('utf8', 8, dataStart), dataStart, buf.byteLength - dataStart, file);
  const tensors = new Map<string, LoadedTensor>();
  for (const [name, info] of header.tensors) {
    const [begin, end] = info.dataOffsets;
    const bytes = new Uint8Array(buf.buffer, buf.byteOffset + dataStart + begin, end - begin);
    tensors.set(name, {
      dtype: info.dtype,
      shape: [...info.shape],
      data: decodeToFloat32(bytes, info.dtype),
    });
  }
  return { tensors, metadata: header.metadata };
}

function readEachTensor(file: string): SafetensorsContents {
  const reader = SafetensorsReader.open(file);
  try {
    return { tensors: new Map(reader.names.map((n) => [n, reader.read(n)])), metadata: reader.metadata };
  } finally {
    reader.close();
  }
}

/**
 * Reads tensors one at a time through a file descriptor, so a checkpoint larger than memory
 * (or than Node's Buffer limit) can be converted tensor by tensor. Close it when done.
 */
export class SafetensorsReader {
  readonly file: string;
  readonly header: SafetensorsHeader;
  private fd: number | null;

  private constructor(file: string, fd: number, header: SafetensorsHeader) {
    this.file = file;
    this.fd = fd;
    this.header = header;
  }

  static open(file: string): SafetensorsReader {
    let fd: number;
    try {
      fd = openSync(file, 'r');
    } catch (err) {
      fail(file, `cannot open (${(err as Error).message})`, undefined, err);
    }
    try {
      // fstat through the fd (not the path) so a file replaced meanwhile cannot mislead us.
      const size = fstatSync(fd).size;
      const prefix = new Uint8Array(8);
      readFully(fd, prefix, 0, file);
      const n = headerLength(prefix, size, file);
      const headerBytes = new Uint8Array(n);
      readFully(fd, headerBytes, 8, file);
      const header = parseHeader(Buffer.from(headerBytes).toString('utf8'), 8 + n, size - 8 - n, file);
      return new SafetensorsReader(file, fd, header);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
  }

  get names(): string[] {
    return [...this.header.tensors.keys()];
  }

  get metadata(): Record<string, string> {
    return this.header.metadata;
  }

  info(name: string): TensorInfo | undefined {
    return this.header.tensors.get(name);
  }

  read(name: string): LoadedTensor {
    if (this.fd === null) throw new Error(`${this.file}: reader is closed`);
    const info = this.header.tensors.get(name);
    if (!info) fail(this.file, 'no such tensor in the file', name);
    const [begin, end] = info.dataOffsets;
    const bytes = new Uint8Array(end - begin);
    readFully(this.fd, bytes, this.header.dataStart + begin, this.file, name);
    return { dtype: info.dtype, shape: [...info.shape], data: decodeToFloat32(bytes, info.dtype) };
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}

function readFully(fd: number, into: Uint8Array, position: number, file: string, tensor?: string): void {
  const n = readAt(fd, into, position);
  if (n < into.byteLength) fail(file, `truncated: ended after ${position + n} bytes while reading`, tensor);
}

// ---------------------------------------------------------------------------------------------
// Writing

/**
 * A file about to be written: the header (length prefix and padded JSON) and the tensors in
 * file order. Planning validates everything, so a bad input fails before anything is written.
 */
export interface SafetensorsPlan {
  header: Buffer;
  dtype: WritableDtype;
  tensors: Float32Array[];
  /** Bytes of the whole file. */
  bytes: number;
}

/** Plans a file of these tensors (sorted by name, so equal inputs give identical bytes). */
export function planSafetensors(
  tensors: ReadonlyMap<string, TensorToWrite>,
  options: WriteSafetensorsOptions = {},
): SafetensorsPlan {
  const dtype = options.dtype ?? 'F32';
  if (!['F32', 'F16', 'BF16'].includes(dtype)) {
    throw new ConfigError(`cannot write safetensors dtype '${dtype}' (F32, F16 or BF16)`);
  }
  const metadata = options.metadata ?? { format: 'pt' };
  for (const [k, v] of Object.entries(metadata)) {
    if (typeof v !== 'string') throw new ConfigError(`safetensors metadata '${k}' must be a string`);
  }
  const names = [...tensors.keys()].sort();
  const header: Record<string, unknown> = {};
  if (Object.keys(metadata).length > 0) header.__metadata__ = metadata;
  const data: Float32Array[] = [];
  let offset = 0;
  for (const name of names) {
    if (name === '__metadata__') throw new ConfigError("a tensor cannot be named '__metadata__'");
    const t = tensors.get(name)!;
    if (!t.shape.every((d) => Number.isSafeInteger(d) && d >= 0) || numel(t.shape) !== t.data.length) {
      throw new ConfigError(
        `tensor '${name}': shape ${JSON.stringify(t.shape)} does not match its ${t.data.length} values`,
      );
    }
    const bytes = t.data.length * DTYPE_BYTES[dtype];
    header[name] = { dtype, shape: t.shape, data_offsets: [offset, offset + bytes] };
    data.push(t.data);
    offset += bytes;
  }
  let json = JSON.stringify(header);
  const jsonBytes = Buffer.byteLength(json, 'utf8');
  // Readers map the data section with typed-array views; 8-byte alignment keeps F64/I64 valid.
  json += ' '.repeat((8 - ((8 + jsonBytes) % 8)) % 8);
  const headerJson = Buffer.from(json, 'utf8');
  const headerBuf = Buffer.allocUnsafe(8 + headerJson.byteLength);
  headerBuf.writeBigUInt64LE(BigInt(headerJson.byteLength), 0);
  headerJson.copy(headerBuf, 8);
  return { header: headerBuf, dtype, tensors: data, bytes: headerBuf.byteLength + offset };
}

/** A tensor's bytes in the file: a view of it where float32 is stored as is, else encoded. */
function fileBytes(data: Float32Array, dtype: WritableDtype): Uint8Array {
  if (dtype === 'F32' && LITTLE_ENDIAN_HOST)
    return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return encodeFromFloat32(data, dtype);
}

/** Serializes tensors into one buffer (for files well under Node's Buffer limit). */
export function serializeSafetensors(
  tensors: ReadonlyMap<string, TensorToWrite>,
  options: WriteSafetensorsOptions = {},
): Buffer {
  const plan = planSafetensors(tensors, options);
  const out = Buffer.allocUnsafe(plan.bytes);
  out.set(plan.header, 0);
  let pos = plan.header.byteLength;
  for (const t of plan.tensors) {
    const bytes = fileBytes(t, plan.dtype);
    out.set(bytes, pos);
    pos += bytes.byteLength;
  }
  return out;
}

/**
 * Writes a planned file tensor by tensor: no buffer of the whole file exists (Node's Buffer
 * limit is 4 GiB, a checkpoint's optimizer state of a 0.6B model is 4.8 GB), and at most one
 * tensor is encoded at a time.
 */
export function writeSafetensorsPlan(fd: number, plan: SafetensorsPlan): void {
  writeAll(fd, plan.header);
  for (const t of plan.tensors) writeAll(fd, fileBytes(t, plan.dtype));
}

export function writeSafetensors(
  file: string,
  tensors: ReadonlyMap<string, TensorToWrite>,
  options: WriteSafetensorsOptions = {},
): void {
  let plan: SafetensorsPlan;
  try {
    plan = planSafetensors(tensors, options);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    throw new ConfigError(`${file}: ${err.message}`, { cause: err, fields: { file } });
  }
  writeFileAtomicWith(file, (fd) => writeSafetensorsPlan(fd, plan));
}

// ---------------------------------------------------------------------------------------------
// Model directories

export const SAFETENSORS_FILE = 'model.safetensors';
export const SAFETENSORS_INDEX_FILE = 'model.safetensors.index.json';

export interface SourcedTensor extends LoadedTensor {
  /** The file the tensor was read from (for error messages). */
  file: string;
}

/** Which files hold a directory's weights: the sharded index if present, else the single file. */
export function weightFiles(dir: string): { index: string | null; files: string[] } {
  const indexFile = join(dir, SAFETENSORS_INDEX_FILE);
  if (existsSync(indexFile)) {
    const map = readIndex(indexFile);
    return { index: indexFile, files: [...new Set(map.values())].map((f) => join(dir, f)) };
  }
  const single = join(dir, SAFETENSORS_FILE);
  if (existsSync(single)) return { index: null, files: [single] };
  throw new ConfigError(
    `${single}: missing: a model directory needs its weights in ${SAFETENSORS_FILE} (or shards listed in ${SAFETENSORS_INDEX_FILE})`,
    { fields: { file: single } },
  );
}

/** `weight_map` of a sharded checkpoint's index: tensor name → shard file name. */
export function readIndex(indexFile: string): Map<string, string> {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(indexFile, 'utf8'));
  } catch (err) {
    fail(indexFile, `cannot read the shard index (${(err as Error).message})`, undefined, err);
  }
  const weightMap = (raw as { weight_map?: unknown } | null)?.weight_map;
  if (!weightMap || typeof weightMap !== 'object' || Array.isArray(weightMap)) {
    fail(indexFile, 'weight_map is missing or not an object of tensor name → shard file');
  }
  const out = new Map<string, string>();
  for (const [name, shard] of Object.entries(weightMap as Record<string, unknown>)) {
    if (typeof shard !== 'string' || shard === '')
      fail(indexFile, `weight_map entry is not a file name`, name);
    // Shards must sit beside the index: a name that climbs out of the folder is not a checkpoint.
    if (isAbsolute(shard) || normalize(shard).startsWith('..')) {
      fail(indexFile, `shard '${shard}' is outside the model directory`, name);
    }
    out.set(name, shard);
  }
  return out;
}

/** Every tensor of a model directory with its dtype, shape and source file. */
export function loadTensors(dir: string): Map<string, SourcedTensor> {
  const out = new Map<string, SourcedTensor>();
  const indexFile = join(dir, SAFETENSORS_INDEX_FILE);
  if (!existsSync(indexFile)) {
    const file = weightFiles(dir).files[0];
    readAllInto(file, null, out);
    return out;
  }
  const weightMap = readIndex(indexFile);
  const byShard = new Map<string, string[]>();
  for (const [name, shard] of weightMap) {
    const list = byShard.get(shard) ?? [];
    list.push(name);
    byShard.set(shard, list);
  }
  for (const [shard, names] of byShard) {
    const file = join(dir, shard);
    if (!existsSync(file))
      fail(indexFile, `shard '${shard}' listed in weight_map does not exist (${file})`, names[0]);
    readAllInto(file, new Set(names), out);
    for (const name of names) {
      if (!out.has(name))
        fail(file, `listed in ${SAFETENSORS_INDEX_FILE} for this shard but not in it`, name);
    }
  }
  return out;
}

function readAllInto(file: string, only: Set<string> | null, out: Map<string, SourcedTensor>): void {
  const reader = SafetensorsReader.open(file);
  try {
    for (const name of reader.names) {
      if (only && !only.has(name)) continue;
      if (out.has(name)) fail(file, `also present in ${out.get(name)!.file}`, name);
      out.set(name, { ...reader.read(name), file });
    }
  } finally {
    reader.close();
  }
}

/** A model directory's weights (single file or sharded) as float32 arrays by tensor name. */
export function loadWeights(dir: string): WeightMap {
  const out: WeightMap = new Map();
  for (const [name, t] of loadTensors(dir)) out.set(name, t.data);
  return out;
}
