/**
 * The reduce-scatter's inner loop: `dst[i] += src[i]` over fp32. A plain JS loop runs at about
 * 1.5 GB/s on this class of machine (every element goes through a float64 and back), which made
 * the sum the largest cost of an all-reduce once the socket reads stopped copying. A 60-byte
 * WebAssembly SIMD kernel (f32x4.add) does the same arithmetic 4 lanes at a time: about 6 GB/s
 * including copying the destination slice into wasm memory and back.
 *
 * The results are bit-identical to the JS loop: a float32 sum computed in float64 and rounded
 * to float32 is the correctly rounded float32 sum, which is what f32x4.add computes.
 *
 * The kernel owns two regions of its own memory, `acc` and `src`, each `capacityBytes` long.
 * The caller receives the incoming bytes straight into `src` (the socket's read buffer), then
 * calls `addInto`.
 */

export interface ReduceKernel {
  /** Where incoming sub-chunks are received; `addInto` reads from its start. */
  readonly src: Uint8Array;
  /** dst[at + i] += src[i] for i < count. */
  addInto(dst: Float32Array, at: number, count: number): void;
  /** dst[at + i] = (dst[at + i] + src[i]) / n: the last reduce-scatter step of a mean. */
  addDivideInto(dst: Float32Array, at: number, count: number, n: number): void;
  /**
   * out[i] = (…((inputs[0][i] + inputs[1][i]) + inputs[2][i]) …) / divideBy for i < count: the
   * shared-memory all-reduce's sum of every rank's slice, in rank order (divideBy 1 for a sum).
   */
  sumInto(out: Float32Array, inputs: readonly Float32Array[], count: number, divideBy: number): void;
  /** 'wasm-simd' or 'js': which loop runs (reported by the bench). */
  readonly kind: 'wasm-simd' | 'js';
}

const leb = (n: number): number[] => {
  const out: number[] = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n) byte |= 0x80;
    out.push(byte);
  } while (n);
  return out;
};
const section = (id: number, bytes: number[]): number[] => [id, ...leb(bytes.length), ...bytes];
const name = (s: string): number[] => [...leb(s.length), ...Array.from(s, (c) => c.charCodeAt(0))];

/**
 * (module (import "k" "m" (memory 1))
 *   (func (export "add") (param $a i32) (param $b i32) (param $n i32) (local $o i32)
 *     (block (loop
 *       (br_if 1 (i32.ge_u (local.get $o) (local.get $n)))
 *       (v128.store (i32.add $a $o) (f32x4.add (v128.load (i32.add $a $o)) (v128.load (i32.add $b $o))))
 *       (local.set $o (i32.add (local.get $o) (i32.const 16)))
 *       (br 0)))))
 * $n is a multiple of 16 (the caller handles the tail in JS).
 */
function kernelModule(): Uint8Array {
  // biome-ignore format: one instruction per line
  const body = [
    0x01, 0x01, 0x7f, // one i32 local ($o, index 3)
    0x02, 0x40, 0x03, 0x40, // block, loop
    0x20, 0x03, 0x20, 0x02, 0x4f, 0x0d, 0x01, // br_if 1 ($o >= $n)
    0x20, 0x00, 0x20, 0x03, 0x6a, // store address $a + $o
    0x20, 0x00, 0x20, 0x03, 0x6a, 0xfd, 0x00, 0x04, 0x00, // v128.load ($a + $o)
    0x20, 0x01, 0x20, 0x03, 0x6a, 0xfd, 0x00, 0x04, 0x00, // v128.load ($b + $o)
    0xfd, 0xe4, 0x01, // f32x4.add
    0xfd, 0x0b, 0x04, 0x00, // v128.store
    0x20, 0x03, 0x41, 0x10, 0x6a, 0x21, 0x03, // $o += 16
    0x0c, 0x00, 0x0b, 0x0b, 0x0b, // br 0, end loop, end block, end func
  ];
  // biome-ignore format: one section per line
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, [1, 0x60, 3, 0x7f, 0x7f, 0x7f, 0]), // type (i32 i32 i32) -> ()
    ...section(2, [1, ...name('k'), ...name('m'), 0x02, 0x00, 0x01]), // import memory, min 1 page
    ...section(3, [1, 0]),
    ...section(7, [1, ...name('add'), 0x00, 0]),
    ...section(10, [1, ...leb(body.length), ...body]),
  ]);
}

/** The few WebAssembly JS API pieces used here (the project's TS libs do not declare them). */
interface Wasm {
  Module: new (bytes: Uint8Array) => object;
  Memory: new (descriptor: { initial: number }) => { buffer: ArrayBuffer };
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
}
const wasm = (globalThis as unknown as { WebAssembly?: Wasm }).WebAssembly;

let compiled: object | null | undefined;

function compiledKernel(): object | null {
  if (compiled === undefined) {
    try {
      if (!wasm) throw new Error('no WebAssembly');
      compiled = new wasm.Module(kernelModule());
    } catch {
      compiled = null; // no SIMD in this runtime: the JS loop
    }
  }
  return compiled;
}

/** dst[at + i] += src[i] (a plain top-level loop, so V8 keeps it monomorphic). */
function jsAddInto(dst: Float32Array, at: number, src: Float32Array, from: number, count: number): void {
  for (let i = from; i < count; i++) dst[at + i] = dst[at + i]! + src[i]!;
}

function jsAddDivideInto(dst: Float32Array, at: number, src: Float32Array, count: number, n: number): void {
  for (let i = 0; i < count; i++) dst[at + i] = (dst[at + i]! + src[i]!) / n;
}

function jsSumInto(
  out: Float32Array,
  inputs: readonly Float32Array[],
  from: number,
  count: number,
  divideBy: number,
): void {
  for (let i = from; i < count; i++) {
    let sum = inputs[0]![i]!;
    for (let p = 1; p < inputs.length; p++) sum = Math.fround(sum + inputs[p]![i]!);
    out[i] = divideBy === 1 ? sum : sum / divideBy;
  }
}

function divideInPlace(values: Float32Array, n: number): void {
  for (let i = 0; i < values.length; i++) values[i] = values[i]! / n;
}

const PAGE_BYTES = 65536;
const BLOCK_FLOATS = 64 * 1024;

export function reduceKernel(capacityBytes: number, options: { forceJs?: boolean } = {}): ReduceKernel {
  const capacity = Math.max(16, Math.ceil(capacityBytes / 16) * 16);
  const module = options.forceJs ? null : compiledKernel();
  if (!module) {
    const src = new Float32Array(capacity / 4);
    return {
      src: new Uint8Array(src.buffer),
      kind: 'js',
      addInto: (dst, at, count) => jsAddInto(dst, at, src, 0, count),
      addDivideInto: (dst, at, count, n) => jsAddDivideInto(dst, at, src, count, n),
      sumInto: (out, inputs, count, divideBy) => jsSumInto(out, inputs, 0, count, divideBy),
    };
  }
  // Memory: [acc: BLOCK_FLOATS floats][src: capacity bytes]. The destination goes through `acc`
  // a block at a time so that block stays in cache between its copy in, the add and the copy
  // out (measured: 256 KiB blocks ~6 GB/s, 1 MiB ~4.3 GB/s over a 64 MiB destination).
  const accBytes = BLOCK_FLOATS * 4;
  const memory = new wasm!.Memory({ initial: Math.ceil((accBytes + capacity) / PAGE_BYTES) + 1 });
  const add = new wasm!.Instance(module, { k: { m: memory } }).exports.add as (
    a: number,
    b: number,
    n: number,
  ) => void;
  // Never grown, so these views stay attached.
  const acc = new Float32Array(memory.buffer, 0, BLOCK_FLOATS);
  const src = new Float32Array(memory.buffer, accBytes, capacity / 4);
  return {
    src: new Uint8Array(memory.buffer, accBytes, capacity),
    kind: 'wasm-simd',
    addInto(dst, at, count) {
      const simd = count & ~3;
      for (let off = 0; off < simd; off += BLOCK_FLOATS) {
        const floats = Math.min(BLOCK_FLOATS, simd - off);
        const slice = dst.subarray(at + off, at + off + floats);
        acc.set(slice);
        add(0, accBytes + off * 4, floats * 4);
        slice.set(floats === BLOCK_FLOATS ? acc : acc.subarray(0, floats));
      }
      if (simd < count) jsAddInto(dst, at, src, simd, count);
    },
    addDivideInto: (dst, at, count, n) => jsAddDivideInto(dst, at, src, count, n),
    sumInto(out, inputs, count, divideBy) {
      // A block of the sum builds up in `acc` (each rank's slice copied into `src` and added)
      // and is copied out once: the slices are not in wasm memory, the sum must be.
      const simd = count & ~3;
      const block = Math.min(BLOCK_FLOATS, src.length & ~3);
      for (let off = 0; off < simd; off += block) {
        const floats = Math.min(block, simd - off);
        const sum = acc.subarray(0, floats);
        sum.set(inputs[0]!.subarray(off, off + floats));
        for (let p = 1; p < inputs.length; p++) {
          src.set(inputs[p]!.subarray(off, off + floats));
          add(0, accBytes, floats * 4);
        }
        if (divideBy !== 1) divideInPlace(sum, divideBy);
        out.set(sum, off);
      }
      if (simd < count) jsSumInto(out, inputs, simd, count, divideBy);
    },
  };
}
