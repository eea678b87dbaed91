/**
 * KvSlots, the in-place engine's cache: rows right-padded in one buffer per tensor, a leaving
 * row replaced by the last one, the capacity following the longest row (grown and shrunk with
 * every row's live slots kept), a row copied in from a buffer of another capacity.
 */
import { describe, expect, it } from 'vitest';
import { KvSlots, SLOT_GRANULE } from './kv-batch.js';

const layout = { layers: 1, kvHeads: 2, headDim: 3, vocab: 8 };

/** Fills row r's first `len` slots with values naming (tensor, row, head, slot, dim). */
function fill(slots: KvSlots, r: number, len: number, tag: number): void {
  slots.lens[r] = len;
  slots.kv.forEach((t, ti) => {
    for (let h = 0; h < layout.kvHeads; h++)
      for (let s = 0; s < len; s++)
        for (let i = 0; i < layout.headDim; i++)
          t[((r * layout.kvHeads + h) * slots.capacity + s) * layout.headDim + i] =
            tag * 1e4 + ti * 1e3 + h * 100 + s * 10 + i;
  });
}

/** Row r's live slots, per tensor and head, as arrays (independent of the capacity). */
function live(slots: KvSlots, r: number): number[][][] {
  return slots.kv.map((t) =>
    Array.from({ length: layout.kvHeads }, (_, h) => {
      const from = (r * layout.kvHeads + h) * slots.capacity * layout.headDim;
      return Array.from(t.subarray(from, from + slots.lens[r] * layout.headDim));
    }),
  );
}

/** Every slot of the buffer past its row's length (or in a row not in use) is 0. */
function expectZeroTails(slots: KvSlots): void {
  const n = layout.kvHeads * slots.capacity * layout.headDim;
  slots.kv.forEach((t) => {
    for (let r = 0; r * n < t.length; r++)
      for (let h = 0; h < layout.kvHeads; h++) {
        const start = (r * layout.kvHeads + h) * slots.capacity * layout.headDim;
        const len = r < slots.size ? slots.lens[r] : 0;
        const tail = t.subarray(start + len * layout.headDim, start + slots.capacity * layout.headDim);
        expect(tail.every((x) => x === 0)).toBe(true);
      }
  });
}

describe('KvSlots', () => {
  it('keeps every row when it grows, and moves the last row into a freed one', () => {
    const slots = new KvSlots(layout, 8);
    slots.reserve(2, 5);
    expect(slots.capacity).toBe(SLOT_GRANULE);
    slots.add();
    slots.add();
    fill(slots, 0, 5, 1);
    fill(slots, 1, 3, 2);
    const row0 = live(slots, 0);
    const row1 = live(slots, 1);
    slots.reserve(3, SLOT_GRANULE + 1);
    expect(slots.capacity).toBe(2 * SLOT_GRANULE);
    expect(live(slots, 0)).toEqual(row0);
    expect(live(slots, 1)).toEqual(row1);
    slots.add();
    fill(slots, 2, 4, 3);
    const row2 = live(slots, 2);
    expect(slots.remove(0)).toBe(2);
    expect(slots.size).toBe(2);
    expect(slots.lens).toEqual([4, 3]);
    expect(live(slots, 0)).toEqual(row2);
    expect(live(slots, 1)).toEqual(row1);
    // A view of the rows in use is contiguous: [rows, kvHeads, capacity, headDim].
    expect(slots.rows(0, 2)[0].length).toBe(2 * layout.kvHeads * slots.capacity * layout.headDim);
  });

  it('shrinks once the longest row needs far less, keeping live slots', () => {
    const slots = new KvSlots(layout, 4);
    slots.reserve(1, 10 * SLOT_GRANULE);
    slots.add();
    fill(slots, 0, 7, 5);
    const row = live(slots, 0);
    slots.reserve(1, 8);
    expect(slots.capacity).toBe(SLOT_GRANULE);
    expect(live(slots, 0)).toEqual(row);
    slots.remove(0);
    expect(slots.size).toBe(0);
  });

  it('keeps its memory, all zero, when the last row leaves or the rows are cleared, and reuses it', () => {
    const slots = new KvSlots(layout, 4);
    slots.reserve(4, 3 * SLOT_GRANULE);
    for (let r = 0; r < 4; r++) slots.add();
    for (let r = 0; r < 4; r++) fill(slots, r, 3 * SLOT_GRANULE - r, r + 1);
    const memory = slots.kv[0].buffer;
    const held = slots.heldBytes;
    expect(held).toBe(4 * 2 * Math.ceil(1.5 * 4 * layout.kvHeads * 3 * SLOT_GRANULE * layout.headDim));
    for (let r = 3; r >= 0; r--) slots.remove(r);
    expect(slots.heldBytes).toBe(held);
    expect(new Float32Array(memory).every((x) => x === 0)).toBe(true);
    // One short row: far less than the memory held, which it still uses (no fresh pages).
    slots.reserve(1, 5);
    expect(slots.capacity).toBe(SLOT_GRANULE);
    expect(slots.kv[0].buffer).toBe(memory);
    slots.add();
    fill(slots, 0, 5, 9);
    const row = live(slots, 0);
    expectZeroTails(slots);
    slots.clear();
    expect(slots.size).toBe(0);
    expect(slots.heldBytes).toBe(held);
    expect(new Float32Array(memory).every((x) => x === 0)).toBe(true);
    // fit() gives back what the rows in use do not need, keeping their slots.
    slots.reserve(1, 5);
    slots.add();
    fill(slots, 0, 5, 9);
    slots.fit();
    expect(slots.heldBytes).toBeLessThan(held);
    expect(slots.kv[0].buffer).not.toBe(memory);
    expect(live(slots, 0)).toEqual(row);
    expectZeroTails(slots);
    const fitted = slots.heldBytes;
    slots.fit(); // already fitted: nothing moves
    expect(slots.heldBytes).toBe(fitted);
    slots.remove(0);
    slots.fit(); // no rows: all of it
    expect(slots.heldBytes).toBe(0);
    expect(slots.kv).toEqual([]);
    slots.reserve(2, 3);
    expect(slots.add()).toBe(0);
    slots.release();
    expect([slots.size, slots.heldBytes]).toEqual([0, 0]);
  });

  it('copies a row in from a buffer of another capacity, its live slots only', () => {
    const own = new KvSlots(layout, 1);
    own.reserve(1, 3 * SLOT_GRANULE);
    own.add();
    fill(own, 0, 2 * SLOT_GRANULE + 5, 7);
    const batch = new KvSlots(layout, 4);
    batch.reserve(2, 3 * SLOT_GRANULE - 1);
    batch.add();
    batch.add();
    fill(batch, 0, 4, 1);
    const row0 = live(batch, 0);
    batch.copyRow(own, 0, 1);
    expect(batch.lens).toEqual([4, 2 * SLOT_GRANULE + 5]);
    expect(live(batch, 1)).toEqual(live(own, 0));
    expect(live(batch, 0)).toEqual(row0);
    const small = new KvSlots(layout, 1);
    small.reserve(1, 4);
    small.add();
    expect(() => small.copyRow(own, 0, 0)).toThrow(/does not fit/);
  });

  it('holds 0 at every slot past a row’s length, through removals and regrowth in place', () => {
    const slots = new KvSlots(layout, 4);
    slots.reserve(3, 40);
    for (let r = 0; r < 3; r++) slots.add();
    fill(slots, 0, 10, 1);
    fill(slots, 1, 40, 2);
    fill(slots, 2, 5, 3);
    const rows = [live(slots, 0), live(slots, 1), live(slots, 2)];
    slots.remove(1); // row 2 moves into row 1, whose old slots 5…39 must not linger
    expect(live(slots, 1)).toEqual(rows[2]);
    expectZeroTails(slots);
    const memory = slots.kv[0].buffer;
    slots.reserve(2, 2 * SLOT_GRANULE + 1); // grows inside the memory it holds
    expect(slots.kv[0].buffer).toBe(memory);
    expect([live(slots, 0), live(slots, 1)]).toEqual([rows[0], rows[2]]);
    expectZeroTails(slots);
    slots.reserve(2, 4 * SLOT_GRANULE); // past the room held: a new buffer with room to spare
    const roomy = slots.kv[0].buffer;
    expect(roomy).not.toBe(memory);
    slots.reserve(2, 5 * SLOT_GRANULE); // within it
    expect(slots.kv[0].buffer).toBe(roomy);
    fill(slots, 0, 5 * SLOT_GRANULE, 4);
    const longRow = live(slots, 0);
    slots.lens[0] = 9; // the row's end moves back (as when a long member is replaced)
    slots.reserve(2, 2 * SLOT_GRANULE); // shrinks, inside the same memory
    expect(slots.capacity).toBe(2 * SLOT_GRANULE);
    expect(slots.kv[0].buffer).toBe(roomy);
    expect(live(slots, 0)).toEqual(longRow.map((t) => t.map((h) => h.slice(0, 9 * layout.headDim))));
    expect(live(slots, 1)).toEqual(rows[2]);
    expectZeroTails(slots);
  });

  it('refuses a row it has no room for', () => {
    const slots = new KvSlots(layout, 1);
    slots.reserve(1, 4);
    slots.add();
    expect(() => slots.add()).toThrow(/no free row/);
  });
});
