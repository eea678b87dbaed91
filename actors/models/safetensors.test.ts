import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import {
  bf16BitsToF32,
  f16BitsToF32,
  f32ToBf16Bits,
  f32ToF16Bits,
  loadTensors,
  loadWeights,
  planSafetensors,
  readSafetensors,
  SafetensorsReader,
  serializeSafetensors,
  type TensorToWrite,
  writeSafetensors,
  writeSafetensorsPlan,
} from './safetensors.js';

const root = mkdtempSync(join(tmpdir(), 'clawray-st-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let counter = 0;
/** A path in a fresh folder of its own. */
const tmp = (name = 'x.safetensors') => {
  const dir = join(root, String(counter++));
  mkdirSync(dir, { recursive: true });
  return join(dir, name);
};

function bitsOf(x: number): number {
  return new Uint32Array(new Float32Array([x]).buffer)[0];
}
function floatOfBits(bits: number): number {
  return new Float32Array(new Uint32Array([bits]).buffer)[0];
}

/** A file with any header and data, to build broken and hand-crafted files. */
function rawFile(header: unknown, data: Uint8Array = new Uint8Array(0), file = tmp()): string {
  const json = Buffer.from(typeof header === 'string' ? header : JSON.stringify(header), 'utf8');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.byteLength));
  writeFileSync(file, Buffer.concat([len, json, data]));
  return file;
}

function expectConfigError(fn: () => unknown, ...parts: (string | RegExp)[]): ConfigError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(ConfigError);
  for (const p of parts) expect((caught as Error).message).toMatch(p);
  return caught as ConfigError;
}

const sample = (): Map<string, TensorToWrite> =>
  new Map([
    ['b.weight', { shape: [2, 3], data: Float32Array.from([1, -2, 0.5, 3.25, -0, 1024]) }],
    ['a.bias', { shape: [3], data: Float32Array.from([0.1, 0.2, 0.3]) }],
    ['scalar', { shape: [], data: Float32Array.from([7]) }],
    ['empty', { shape: [0, 4], data: new Float32Array(0) }],
  ]);

describe('float conversions', () => {
  it('float32 → float16 rounds to nearest even, with subnormals, overflow, inf and nan', () => {
    const cases: [number, number][] = [
      [1, 0x3c00],
      [-2, 0xc000],
      [1 + 2 ** -11, 0x3c00], // tie → even (down)
      [1 + 3 * 2 ** -11, 0x3c02], // tie → even (up)
      [1 + 2 ** -11 + 2 ** -20, 0x3c01], // just above the tie
      [65504, 0x7bff], // largest half
      [65519, 0x7bff],
      [65520, 0x7c00], // tie between 65504 and 2^16 → even → infinity
      [1e6, 0x7c00],
      [Number.POSITIVE_INFINITY, 0x7c00],
      [Number.NEGATIVE_INFINITY, 0xfc00],
      [-0, 0x8000],
      [0, 0x0000],
      [2 ** -14, 0x0400], // smallest normal
      [2 ** -24, 0x0001], // smallest subnormal
      [2 ** -25, 0x0000], // tie between 0 and 2^-24 → even → 0
      [2 ** -25 * (1 + 2 ** -10), 0x0001], // just above that tie
      [1.5 * 2 ** -24, 0x0002], // tie between 1 and 2 subnormal steps → even
      [1023.5 * 2 ** -24, 0x0400], // tie between the largest subnormal and the smallest normal
      [-5 * 2 ** -24, 0x8005],
      [1e-40, 0x0000], // a float32 subnormal
      [2 ** -26, 0x0000],
    ];
    for (const [x, bits] of cases) expect([x, f32ToF16Bits(x)]).toEqual([x, bits]);
    expect(f32ToF16Bits(Number.NaN)).toBe(0x7e00);
    expect(Number.isNaN(f16BitsToF32(0x7e00))).toBe(true);
  });

  it('float16 → float32 is exact for every half', () => {
    expect(f16BitsToF32(0x3c00)).toBe(1);
    expect(f16BitsToF32(0x0001)).toBe(2 ** -24);
    expect(f16BitsToF32(0x03ff)).toBe(1023 * 2 ** -24);
    expect(f16BitsToF32(0x7bff)).toBe(65504);
    expect(f16BitsToF32(0xfc00)).toBe(Number.NEGATIVE_INFINITY);
    expect(Object.is(f16BitsToF32(0x8000), -0)).toBe(true);
    // Every finite half survives half → float → half.
    for (let h = 0; h < 65536; h++) {
      if ((h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0) continue;
      if (f32ToF16Bits(f16BitsToF32(h)) !== h)
        throw new Error(`half 0x${h.toString(16)} does not round-trip`);
    }
  });

  it('float32 → bfloat16 rounds to nearest even and keeps nan a nan', () => {
    const cases: [number, number][] = [
      [1, 0x3f80],
      [1 + 2 ** -8, 0x3f80], // tie → even (down)
      [1 + 3 * 2 ** -8, 0x3f82], // tie → even (up)
      [1 + 2 ** -8 + 2 ** -20, 0x3f81],
      [floatOfBits(0x7f7fffff), 0x7f80], // the largest float rounds up to infinity
      [Number.POSITIVE_INFINITY, 0x7f80],
      [Number.NEGATIVE_INFINITY, 0xff80],
      [-0, 0x8000],
      [2 ** -133, 0x0001], // a float32 subnormal that bf16 holds exactly
      [2 ** -140, 0x0000], // too small: rounds to zero
      [-3.140625, 0xc049],
    ];
    for (const [x, bits] of cases) expect([x, f32ToBf16Bits(x)]).toEqual([x, bits]);
    expect(f32ToBf16Bits(Number.NaN)).toBe(0x7fc0);
    // A NaN with only low payload bits must not truncate to infinity.
    expect(f32ToBf16Bits(floatOfBits(0x7f800001))).toBe(0x7fc0);
    expect(f32ToBf16Bits(floatOfBits(0xff800001))).toBe(0xffc0);
    expect(bf16BitsToF32(0x3f80)).toBe(1);
    expect(bitsOf(bf16BitsToF32(0xc049))).toBe(0xc0490000);
  });
});

describe('safetensors files', () => {
  it('round-trips F32 exactly, with metadata, scalars and empty tensors', () => {
    const file = tmp();
    writeSafetensors(file, sample(), { dtype: 'F32', metadata: { format: 'pt', note: 'hi' } });
    const { tensors, metadata } = readSafetensors(file);
    expect(metadata).toEqual({ format: 'pt', note: 'hi' });
    expect([...tensors.keys()].sort()).toEqual(['a.bias', 'b.weight', 'empty', 'scalar']);
    for (const [name, t] of sample()) {
      const got = tensors.get(name)!;
      expect(got.dtype).toBe('F32');
      expect(got.shape).toEqual(t.shape);
      expect(got.data).toEqual(t.data);
    }
    expect(Object.is(tensors.get('b.weight')!.data[4], -0)).toBe(true);
  });

  it("defaults the metadata to {format: 'pt'}, which transformers requires", () => {
    const file = tmp();
    writeSafetensors(file, sample());
    expect(readSafetensors(file).metadata).toEqual({ format: 'pt' });
  });

  it.each(['F16', 'BF16'] as const)('round-trips %s with rounding to nearest even', (dtype) => {
    const values = [
      1,
      -2,
      0.5,
      1 + 2 ** -11,
      1 + 3 * 2 ** -8,
      65520,
      2 ** -24,
      0.1,
      Number.NaN,
      -Infinity,
      1e-40,
    ];
    const conv = dtype === 'F16' ? f32ToF16Bits : f32ToBf16Bits;
    const back = dtype === 'F16' ? f16BitsToF32 : bf16BitsToF32;
    const file = tmp();
    writeSafetensors(file, new Map([['v', { shape: [values.length], data: Float32Array.from(values) }]]), {
      dtype,
    });
    const raw = readFileSync(file);
    const t = readSafetensors(file).tensors.get('v')!;
    expect(t.dtype).toBe(dtype);
    expect(raw.byteLength).toBe(8 + Number(raw.readBigUInt64LE(0)) + values.length * 2);
    values.forEach((v, i) => {
      const expected = back(conv(v));
      if (Number.isNaN(v)) expect(Number.isNaN(t.data[i])).toBe(true);
      else expect(t.data[i]).toBe(expected);
    });
    // Exactly representable values come back unchanged.
    expect([t.data[0], t.data[1], t.data[2]]).toEqual([1, -2, 0.5]);
  });

  it('pads the header with spaces so the data starts 8-byte aligned', () => {
    for (const name of ['a', 'ab', 'abc', 'abcd', 'abcde', 'abcdef', 'abcdefg', 'abcdefgh']) {
      const buf = serializeSafetensors(new Map([[name, { shape: [1], data: Float32Array.from([1]) }]]), {
        metadata: {},
      });
      const n = Number(buf.readBigUInt64LE(0));
      expect((8 + n) % 8).toBe(0);
      const header = buf.toString('utf8', 8, 8 + n);
      expect(header).toMatch(/^\{.*\} *$/);
      expect(header.length - header.trimEnd().length).toBeLessThan(8);
      expect(JSON.parse(header)[name]).toEqual({ dtype: 'F32', shape: [1], data_offsets: [0, 4] });
    }
  });

  it('writes tensors in name order with contiguous offsets, byte-identical for equal input', () => {
    const a = serializeSafetensors(sample(), { dtype: 'BF16' });
    const b = serializeSafetensors(new Map([...sample()].reverse()), { dtype: 'BF16' });
    expect(a.equals(b)).toBe(true);
    const n = Number(a.readBigUInt64LE(0));
    const header = JSON.parse(a.toString('utf8', 8, 8 + n));
    expect(Object.keys(header)).toEqual(['__metadata__', 'a.bias', 'b.weight', 'empty', 'scalar']);
    expect(header['a.bias'].data_offsets).toEqual([0, 6]);
    expect(header['b.weight'].data_offsets).toEqual([6, 18]);
    expect(header.empty.data_offsets).toEqual([18, 18]);
    expect(header.scalar.data_offsets).toEqual([18, 20]);
  });

  it('writes a file tensor by tensor, byte-identical to the serialized buffer', () => {
    // Streamed: no buffer of the whole file (a 0.6B model's optimizer state is over Node's 4 GiB).
    for (const dtype of ['F32', 'F16', 'BF16'] as const) {
      const file = tmp();
      writeSafetensors(file, sample(), { dtype });
      expect(readFileSync(file).equals(serializeSafetensors(sample(), { dtype }))).toBe(true);
    }
  });

  it("streams a file over Node's 4 GiB Buffer limit (a 0.6B model's optimizer state)", () => {
    // Two 2.1 GB tensors into /dev/null, which never reads their (untouched, zero) pages.
    const n = 2 ** 29 + 16;
    const tensors = new Map([
      ['exp_avg.w', { shape: [n], data: new Float32Array(n) }],
      ['exp_avg_sq.w', { shape: [n], data: new Float32Array(n) }],
    ]);
    const plan = planSafetensors(tensors);
    expect(plan.bytes).toBeGreaterThan(2 ** 32);
    expect(() => serializeSafetensors(tensors)).toThrow(RangeError);
    const fd = openSync('/dev/null', 'w');
    try {
      expect(() => writeSafetensorsPlan(fd, plan)).not.toThrow();
    } finally {
      closeSync(fd);
    }
  });

  it('writes atomically: no temp file is left and an existing file is replaced', () => {
    const file = tmp('model.safetensors');
    writeFileSync(file, 'old');
    writeSafetensors(file, sample());
    expect(readdirSync(join(file, '..'))).toEqual(['model.safetensors']);
    expect(readSafetensors(file).tensors.size).toBe(4);
  });

  it('refuses a shape that does not match the data, naming the file', () => {
    const file = tmp();
    expectConfigError(
      () => writeSafetensors(file, new Map([['w', { shape: [3], data: new Float32Array(2) }]])),
      file,
      /'w'/,
    );
    expectConfigError(
      () => serializeSafetensors(new Map([['w', { shape: [2, 2], data: new Float32Array(3) }]])),
      /'w'/,
      /\[2,2\]/,
    );
  });

  it('reads tensor by tensor through SafetensorsReader', () => {
    const file = tmp();
    writeSafetensors(file, sample(), { dtype: 'F16' });
    const reader = SafetensorsReader.open(file);
    try {
      expect(reader.names.sort()).toEqual(['a.bias', 'b.weight', 'empty', 'scalar']);
      expect(reader.info('b.weight')).toMatchObject({ dtype: 'F16', shape: [2, 3] });
      const whole = readSafetensors(file).tensors;
      for (const name of reader.names) expect(reader.read(name)).toEqual(whole.get(name));
      expectConfigError(() => reader.read('nope'), file, /'nope'/);
    } finally {
      reader.close();
    }
  });

  it('reads unaligned tensors and the integer dtypes (I64, I32, I16, I8, U8, BOOL, F64)', () => {
    const parts: [string, string, number[], Uint8Array][] = [];
    const h16 = new Uint8Array(6);
    new DataView(h16.buffer).setUint16(0, 0x3c00, true);
    new DataView(h16.buffer).setUint16(2, 0xc000, true);
    new DataView(h16.buffer).setUint16(4, 0x3800, true);
    parts.push(['half', 'F16', [3], h16]);
    const f32 = new Uint8Array(8);
    new DataView(f32.buffer).setFloat32(0, 1.5, true);
    new DataView(f32.buffer).setFloat32(4, -3, true);
    parts.push(['f32_unaligned', 'F32', [2], f32]);
    const i64 = new Uint8Array(16);
    new DataView(i64.buffer).setBigInt64(0, -5n, true);
    new DataView(i64.buffer).setBigInt64(8, 151643n, true);
    parts.push(['ids', 'I64', [2], i64]);
    const i32 = new Uint8Array(4);
    new DataView(i32.buffer).setInt32(0, -123456, true);
    parts.push(['i32', 'I32', [1], i32]);
    const i16 = new Uint8Array(2);
    new DataView(i16.buffer).setInt16(0, -300, true);
    parts.push(['i16', 'I16', [1], i16]);
    parts.push(['i8', 'I8', [2], Uint8Array.from([0xff, 0x05])]);
    parts.push(['u8', 'U8', [2], Uint8Array.from([0xff, 0x05])]);
    parts.push(['mask', 'BOOL', [3], Uint8Array.from([1, 0, 1])]);
    const f64 = new Uint8Array(8);
    new DataView(f64.buffer).setFloat64(0, 0.25, true);
    parts.push(['f64', 'F64', [1], f64]);
    const header: Record<string, unknown> = {};
    let offset = 0;
    for (const [name, dtype, shape, bytes] of parts) {
      header[name] = { dtype, shape, data_offsets: [offset, offset + bytes.byteLength] };
      offset += bytes.byteLength;
    }
    const file = rawFile(header, Buffer.concat(parts.map((p) => p[3])));
    const { tensors } = readSafetensors(file);
    expect([...tensors.get('half')!.data]).toEqual([1, -2, 0.5]);
    expect([...tensors.get('f32_unaligned')!.data]).toEqual([1.5, -3]);
    expect([...tensors.get('ids')!.data]).toEqual([-5, 151643]);
    expect(tensors.get('ids')!.dtype).toBe('I64');
    expect([...tensors.get('i32')!.data]).toEqual([-123456]);
    expect([...tensors.get('i16')!.data]).toEqual([-300]);
    expect([...tensors.get('i8')!.data]).toEqual([-1, 5]);
    expect([...tensors.get('u8')!.data]).toEqual([255, 5]);
    expect([...tensors.get('mask')!.data]).toEqual([1, 0, 1]);
    expect([...tensors.get('f64')!.data]).toEqual([0.25]);
    // The per-tensor reader sees the same values.
    const reader = SafetensorsReader.open(file);
    expect([...reader.read('f32_unaligned').data]).toEqual([1.5, -3]);
    reader.close();
  });
});

describe('broken safetensors files name the file and the tensor', () => {
  const ok = { w: { dtype: 'F32', shape: [2], data_offsets: [0, 8] } };

  it('a file shorter than the length prefix', () => {
    const file = tmp();
    writeFileSync(file, Buffer.from([1, 2, 3]));
    expectConfigError(() => readSafetensors(file), file, /truncated/);
    expectConfigError(() => SafetensorsReader.open(file), file, /truncated/);
  });

  it('a header longer than the file', () => {
    const file = tmp();
    const buf = Buffer.alloc(16);
    buf.writeBigUInt64LE(1000n);
    writeFileSync(file, buf);
    expectConfigError(() => readSafetensors(file), file, /truncated/, /1000/);
    expectConfigError(() => SafetensorsReader.open(file), file, /truncated/);
  });

  it('a header that is not JSON, or not an object', () => {
    const bad = rawFile('{"w": {"dtype": "F32",', new Uint8Array(8));
    expectConfigError(() => readSafetensors(bad), bad, /not valid JSON/);
    const arr = rawFile('[1, 2]');
    expectConfigError(() => readSafetensors(arr), arr, /not a JSON object/);
  });

  it('data cut short (offsets past the end)', () => {
    const file = rawFile(ok, new Uint8Array(4));
    expectConfigError(() => readSafetensors(file), file, /tensor 'w'/, /past the end/, /truncated/);
    expectConfigError(() => SafetensorsReader.open(file), file, /tensor 'w'/);
  });

  it('overlapping tensors', () => {
    const file = rawFile(
      {
        a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] },
        b: { dtype: 'F32', shape: [2], data_offsets: [4, 12] },
      },
      new Uint8Array(12),
    );
    expectConfigError(() => readSafetensors(file), file, /tensor 'b'/, /overlap tensor 'a'/);
  });

  it('offsets that do not fit the dtype and shape, or end before they begin', () => {
    const size = rawFile({ w: { dtype: 'F32', shape: [3], data_offsets: [0, 8] } }, new Uint8Array(8));
    expectConfigError(() => readSafetensors(size), size, /tensor 'w'/, /needs 12/);
    const backwards = rawFile({ w: { dtype: 'F32', shape: [0], data_offsets: [8, 0] } }, new Uint8Array(8));
    expectConfigError(() => readSafetensors(backwards), backwards, /tensor 'w'/, /end before/);
  });

  it('an unsupported dtype', () => {
    const file = rawFile({ w: { dtype: 'F8_E4M3', shape: [2], data_offsets: [0, 2] } }, new Uint8Array(2));
    expectConfigError(() => readSafetensors(file), file, /tensor 'w'/, /unsupported dtype "F8_E4M3"/);
  });

  it('a bad shape or metadata that is not strings', () => {
    const shape = rawFile({ w: { dtype: 'F32', shape: [-1], data_offsets: [0, 4] } }, new Uint8Array(4));
    expectConfigError(() => readSafetensors(shape), shape, /tensor 'w'/, /shape/);
    const meta = rawFile({ __metadata__: { n: 1 }, ...ok }, new Uint8Array(8));
    expectConfigError(() => readSafetensors(meta), meta, /__metadata__\.n must be a string/);
  });

  it('a missing file', () => {
    const file = join(root, 'nope.safetensors');
    expectConfigError(() => readSafetensors(file), file, /cannot read/);
  });
});

describe('model directory weights', () => {
  const write = (dir: string, name: string, tensors: [string, number[]][], dtype: 'F32' | 'BF16' = 'F32') =>
    writeSafetensors(
      join(dir, name),
      new Map(
        tensors.map(([n, shape]) => {
          const size = shape.reduce((a, b) => a * b, 1);
          return [n, { shape, data: Float32Array.from({ length: size }, (_, i) => i + n.length) }];
        }),
      ),
      { dtype },
    );
  const index = (dir: string, weightMap: Record<string, string>) =>
    writeFileSync(
      join(dir, 'model.safetensors.index.json'),
      JSON.stringify({ metadata: { total_size: 0 }, weight_map: weightMap }),
    );

  it('loads a single model.safetensors', () => {
    const dir = join(tmp(), '..');
    write(dir, 'model.safetensors', [
      ['a', [2]],
      ['b', [1, 3]],
    ]);
    const w = loadWeights(dir);
    expect([...w.keys()].sort()).toEqual(['a', 'b']);
    expect([...w.get('a')!]).toEqual([1, 2]);
  });

  it('loads a sharded checkpoint through model.safetensors.index.json, with mixed dtypes', () => {
    const dir = join(tmp(), '..');
    write(dir, 'model-00001-of-00002.safetensors', [
      ['a', [2]],
      ['b', [3]],
    ]);
    write(dir, 'model-00002-of-00002.safetensors', [['c', [2, 2]]], 'BF16');
    index(dir, {
      a: 'model-00001-of-00002.safetensors',
      b: 'model-00001-of-00002.safetensors',
      c: 'model-00002-of-00002.safetensors',
    });
    const tensors = loadTensors(dir);
    expect([...tensors.keys()].sort()).toEqual(['a', 'b', 'c']);
    expect(tensors.get('c')).toMatchObject({ dtype: 'BF16', shape: [2, 2] });
    expect(tensors.get('c')!.file).toBe(join(dir, 'model-00002-of-00002.safetensors'));
    expect([...loadWeights(dir).get('c')!]).toEqual([1, 2, 3, 4]);
  });

  it('reports a shard that is missing, a tensor a shard lacks, and a shard outside the folder', () => {
    const dir = join(tmp(), '..');
    write(dir, 'shard-1.safetensors', [['a', [2]]]);
    index(dir, { a: 'shard-1.safetensors', b: 'shard-2.safetensors' });
    const indexFile = join(dir, 'model.safetensors.index.json');
    expectConfigError(() => loadWeights(dir), indexFile, /shard-2\.safetensors/, /does not exist/);
    index(dir, { a: 'shard-1.safetensors', z: 'shard-1.safetensors' });
    expectConfigError(() => loadWeights(dir), join(dir, 'shard-1.safetensors'), /tensor 'z'/);
    index(dir, { a: '../elsewhere.safetensors' });
    expectConfigError(() => loadWeights(dir), indexFile, /outside the model directory/);
    writeFileSync(indexFile, '{"metadata": {}}');
    expectConfigError(() => loadWeights(dir), indexFile, /weight_map/);
  });

  it('reports a directory without weights, naming model.safetensors', () => {
    const dir = join(tmp(), '..');
    expectConfigError(() => loadWeights(dir), join(dir, 'model.safetensors'), /missing/);
  });
});
