import { describe, expect, it } from 'vitest';
import { CHUNK_BYTES, ChunkAssembler, splitPayload } from './chunks.js';

const pattern = (length: number): Buffer => {
  const b = Buffer.allocUnsafe(length);
  for (let i = 0; i < length; i++) b[i] = (i * 31 + 7) & 0xff;
  return b;
};

describe('splitPayload', () => {
  it('returns a small payload as one chunk, the same buffer', () => {
    const payload = Buffer.from('hello');
    const chunks = splitPayload(payload);
    expect(chunks).toHaveLength(1);
    expect(chunks[0]).toBe(payload);
  });

  it('returns an empty payload as one empty chunk', () => {
    const payload = Buffer.alloc(0);
    const chunks = splitPayload(payload);
    expect(chunks).toHaveLength(1);
    expect(chunks[0]).toBe(payload);
  });

  it('keeps a payload of exactly CHUNK_BYTES in one chunk', () => {
    const payload = Buffer.alloc(CHUNK_BYTES);
    const chunks = splitPayload(payload);
    expect(chunks).toHaveLength(1);
    expect(chunks[0]).toBe(payload);
  });

  it('splits CHUNK_BYTES + 1 into a full chunk and one byte', () => {
    const chunks = splitPayload(pattern(CHUNK_BYTES + 1));
    expect(chunks.map((c) => c.length)).toEqual([CHUNK_BYTES, 1]);
  });

  it('splits CHUNK_BYTES*2+1 into 3 chunks that concatenate back', () => {
    const payload = pattern(CHUNK_BYTES * 2 + 1);
    const chunks = splitPayload(payload);
    expect(chunks.map((c) => c.length)).toEqual([CHUNK_BYTES, CHUNK_BYTES, 1]);
    expect(Buffer.concat(chunks).equals(payload)).toBe(true);
  });

  it('gives views into the payload, not copies', () => {
    const payload = pattern(CHUNK_BYTES * 2 + 1);
    const chunks = splitPayload(payload);
    chunks.forEach((chunk, i) => {
      expect(chunk.buffer).toBe(payload.buffer);
      expect(chunk.byteOffset).toBe(payload.byteOffset + i * CHUNK_BYTES);
    });
    payload[CHUNK_BYTES] = 0xab;
    expect(chunks[1][0]).toBe(0xab);
    chunks[2][0] = 0xcd;
    expect(payload[CHUNK_BYTES * 2]).toBe(0xcd);
  });
});

describe('ChunkAssembler', () => {
  it('returns a single chunk with more=false at once, unchanged', () => {
    const a = new ChunkAssembler();
    const bytes = Buffer.from('abc');
    expect(a.add(1, bytes, false)).toBe(bytes);
  });

  it('collects chunks until more=false', () => {
    const a = new ChunkAssembler();
    expect(a.add(1, Buffer.from('ab'), true)).toBeUndefined();
    expect(a.add(1, Buffer.from('cd'), true)).toBeUndefined();
    expect(a.add(1, Buffer.from('e'), false)?.toString()).toBe('abcde');
  });

  it('keeps interleaved ids apart', () => {
    const a = new ChunkAssembler();
    expect(a.add(1, Buffer.from('1a'), true)).toBeUndefined();
    expect(a.add(2, Buffer.from('2a'), true)).toBeUndefined();
    expect(a.add(3, Buffer.from('3only'), false)?.toString()).toBe('3only');
    expect(a.add(1, Buffer.from('1b'), true)).toBeUndefined();
    expect(a.add(2, Buffer.from('2b'), false)?.toString()).toBe('2a2b');
    expect(a.add(1, Buffer.from('1c'), false)?.toString()).toBe('1a1b1c');
  });

  it('starts afresh for an id once its payload completed', () => {
    const a = new ChunkAssembler();
    a.add(1, Buffer.from('old'), true);
    expect(a.add(1, Buffer.from('!'), false)?.toString()).toBe('old!');
    expect(a.add(1, Buffer.from('new'), false)?.toString()).toBe('new');
  });

  it('reassembles what splitPayload produced', () => {
    const payload = pattern(CHUNK_BYTES * 2 + 5);
    const chunks = splitPayload(payload);
    const a = new ChunkAssembler();
    let out: Buffer | undefined;
    chunks.forEach((chunk, i) => {
      out = a.add(9, chunk, i < chunks.length - 1);
      if (i < chunks.length - 1) expect(out).toBeUndefined();
    });
    expect(out?.equals(payload)).toBe(true);
  });

  it('drop forgets the partial chunks of one id only', () => {
    const a = new ChunkAssembler();
    a.add(1, Buffer.from('stale'), true);
    a.add(2, Buffer.from('keep'), true);
    a.drop(1);
    expect(a.add(1, Buffer.from('fresh'), false)?.toString()).toBe('fresh');
    expect(a.add(2, Buffer.from('!'), false)?.toString()).toBe('keep!');
    a.drop(42); // unknown id: no-op
  });

  it('clear forgets every partial payload', () => {
    const a = new ChunkAssembler();
    a.add(1, Buffer.from('x'), true);
    a.add(2, Buffer.from('y'), true);
    a.clear();
    expect(a.add(1, Buffer.from('1'), false)?.toString()).toBe('1');
    expect(a.add(2, Buffer.from('2'), false)?.toString()).toBe('2');
  });
});
