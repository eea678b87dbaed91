import { describe, expect, it } from 'vitest';
import { KvBatch, type SequenceKv } from './kv-batch.js';

const layout = { layers: 2, kvHeads: 2, headDim: 3, vocab: 10 };

/** A cache whose every value encodes (tensor, head, slot, dim) so misplacement shows. */
function seqKv(id: number, len: number): SequenceKv {
  const kv: Float32Array[] = [];
  for (let t = 0; t < layout.layers * 2; t++) {
    const a = new Float32Array(layout.kvHeads * len * layout.headDim);
    for (let h = 0; h < layout.kvHeads; h++)
      for (let s = 0; s < len; s++)
        for (let d = 0; d < layout.headDim; d++)
          a[(h * len + s) * layout.headDim + d] = id * 1000 + t * 100 + h * 10 + s + d / 10;
    kv.push(a);
  }
  return { len, kv };
}

describe('KvBatch', () => {
  it('left-pads members to the longest and extracts them unchanged', () => {
    const batch = new KvBatch(layout);
    const a = seqKv(1, 2);
    const b = seqKv(2, 4);
    batch.pack([a, b]);
    expect(batch.past).toBe(4);
    expect(batch.kv[0]).toHaveLength(2 * 2 * 4 * 3);
    expect(batch.extract(0)).toEqual(a);
    expect(batch.extract(1)).toEqual(b);
    // Padding slots of the shorter member are zero and masked out.
    expect(Array.from(batch.kv[0].subarray(0, 6))).toEqual([0, 0, 0, 0, 0, 0]);
    expect(Array.from(batch.stepMask())).toEqual([0, 0, 1, 1, 1, 1, 1, 1, 1, 1].map(BigInt));
  });

  it('advances by taking the step output as the cache', () => {
    const batch = new KvBatch(layout);
    batch.pack([seqKv(1, 1), seqKv(2, 2)]);
    const present = batch.kv.map(() => new Float32Array(2 * 2 * 3 * 3).fill(7));
    batch.advance(present);
    expect(batch.past).toBe(3);
    expect(batch.lens).toEqual([2, 3]);
    expect(batch.kv).toBe(present);
    expect(batch.extract(0).len).toBe(2);
  });

  it('hands out step outputs from two alternating buffer sets', () => {
    const batch = new KvBatch(layout);
    batch.pack([seqKv(1, 2)]);
    const a = batch.stepOutputs();
    expect(a.logits).toHaveLength(10);
    expect(a.presentKv).toHaveLength(4);
    expect(a.presentKv[0]).toHaveLength(2 * 3 * 3);
    batch.advance(a.presentKv);
    const b = batch.stepOutputs();
    // The next step writes elsewhere than the cache it reads.
    expect(b.presentKv[0].buffer).not.toBe(a.presentKv[0].buffer);
    batch.advance(b.presentKv);
    expect(batch.stepOutputs().presentKv[0].buffer).not.toBe(b.presentKv[0].buffer);
  });

  it('packs an empty batch', () => {
    const batch = new KvBatch(layout);
    batch.pack([]);
    expect(batch.size).toBe(0);
    expect(batch.past).toBe(0);
  });

  it('adopts a left-padded prefill output and cuts each member out of it', () => {
    const batch = new KvBatch(layout);
    const a = seqKv(1, 2);
    const b = seqKv(2, 4);
    batch.pack([a, b]);
    const scratch = new KvBatch(layout);
    scratch.adopt(batch.kv, [2, 4]);
    expect(scratch.past).toBe(4);
    expect(scratch.extract(0)).toEqual(a);
    expect(scratch.extract(1)).toEqual(b);
  });

  it('reserves step outputs for the longest length a member may reach, and lets oversized ones go', () => {
    const batch = new KvBatch(layout);
    batch.pack([seqKv(1, 2), seqKv(2, 3)], 10);
    const first = batch.stepOutputs().presentKv[0].buffer;
    expect(first.byteLength).toBe(2 * 2 * 10 * 3 * 4);
    // Steps up to the reserved length write into the same buffers.
    for (let step = 0; step < 6; step++) batch.advance(batch.stepOutputs().presentKv);
    batch.stepOutputs();
    expect(batch.stepOutputs().presentKv[0].buffer).toBe(first);
    batch.pack([seqKv(1, 1)], 2);
    expect(batch.stepOutputs().presentKv[0].buffer.byteLength).toBe(1 * 2 * 2 * 3 * 4);
  });
});
