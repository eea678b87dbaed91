import { describe, expect, it } from 'vitest';
import { reduceKernel } from '../actors/collective/reduce-kernel.js';

/** Reference: the float32 sum of each pair, computed in float64 and rounded. */
function reference(dst: Float32Array, src: Float32Array, at: number, count: number): Float32Array {
  const out = dst.slice();
  for (let i = 0; i < count; i++) out[at + i] = dst[at + i]! + src[i]!;
  return out;
}

describe('reduce kernel', () => {
  it('the WebAssembly SIMD kernel and the JS loop give the bit-identical float32 sums', () => {
    const simd = reduceKernel(1 << 20);
    const js = reduceKernel(1 << 20, { forceJs: true });
    expect(simd.kind).toBe('wasm-simd');
    expect(js.kind).toBe('js');
    // Counts below, at and above the kernel's 64 Ki-float block and not multiples of 4.
    for (const [at, count] of [
      [0, 1],
      [3, 7],
      [5, 65_536],
      [1, 65_539],
      [17, 262_143],
    ] as const) {
      const dst = Float32Array.from({ length: at + count + 9 }, (_, i) => Math.fround(Math.sin(i) * 1e3));
      const src = Float32Array.from({ length: count }, (_, i) => Math.fround(Math.cos(i * 0.7) / (i + 1)));
      const want = reference(dst, src, at, count);
      for (const kernel of [simd, js]) {
        new Float32Array(kernel.src.buffer, kernel.src.byteOffset, count).set(src);
        const got = dst.slice();
        kernel.addInto(got, at, count);
        expect(
          Buffer.from(got.buffer).equals(Buffer.from(want.buffer)),
          `${kernel.kind} at ${at} × ${count}`,
        ).toBe(true);
      }
    }
  });

  it('divides on the last step of a mean', () => {
    const kernel = reduceKernel(64);
    new Float32Array(kernel.src.buffer, kernel.src.byteOffset, 3).set([1, 2, 3]);
    const dst = new Float32Array([5, 7, 9, 100]);
    kernel.addDivideInto(dst, 0, 3, 2);
    expect([...dst]).toEqual([3, 4.5, 6, 100]);
  });
});
