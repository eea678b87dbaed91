/**
 * Atomic files: the bytes land whole under the name or not at all; and chunked I/O: a large
 * buffer goes through write() and read() in pieces Node accepts (it refuses a length above
 * 2^31 − 1).
 */
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeFileAtomic, writeFileAtomicWith } from './atomic-file.js';
import { IO_CHUNK_BYTES, readAt, writeAll } from './chunked-io.js';

const root = mkdtempSync(join(tmpdir(), 'clawray-atomic-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('atomic files and chunked I/O', () => {
  it('writes a buffer in pieces of at most the chunk size, byte for byte', () => {
    expect(IO_CHUNK_BYTES).toBeLessThan(2 ** 31);
    const bytes = Uint8Array.from({ length: 1000 }, (_, i) => (i * 37) % 251);
    for (const chunk of [1, 7, 999, 1000, 4096]) {
      const file = join(root, `chunks-${chunk}`);
      const fd = openSync(file, 'w');
      try {
        writeAll(fd, bytes.subarray(3), chunk); // a view that does not start its buffer
      } finally {
        closeSync(fd);
      }
      expect(new Uint8Array(readFileSync(file))).toEqual(bytes.subarray(3));
    }
  });

  it('reads a file range in pieces of at most the chunk size, stopping where the file ends', () => {
    const bytes = Uint8Array.from({ length: 500 }, (_, i) => (i * 13) % 256);
    const file = join(root, 'read.bin');
    writeFileSync(file, bytes);
    const fd = openSync(file, 'r');
    try {
      for (const chunk of [1, 7, 4096]) {
        const into = new Uint8Array(200);
        expect(readAt(fd, into, 100, chunk)).toBe(200);
        expect(into).toEqual(bytes.subarray(100, 300));
        const past = new Uint8Array(50);
        expect(readAt(fd, past, 480, chunk)).toBe(20);
        expect(past.subarray(0, 20)).toEqual(bytes.subarray(480));
      }
    } finally {
      closeSync(fd);
    }
  });

  it('hands a buffer over 2 GiB to write() without a length Node refuses', () => {
    // /dev/null never reads the pages, so the 2 GiB stay untouched (zero pages, not memory).
    const huge = new Uint8Array(2 ** 31 + 8);
    const fd = openSync('/dev/null', 'w');
    try {
      expect(() => writeAll(fd, huge)).not.toThrow();
    } finally {
      closeSync(fd);
    }
  });

  it('replaces the file whole, creating its folder, and leaves nothing behind', () => {
    const file = join(root, 'a', 'b', 'state.json');
    writeFileAtomic(file, '{"v":1}');
    writeFileAtomic(file, new TextEncoder().encode('{"v":2}'));
    expect(readFileSync(file, 'utf8')).toBe('{"v":2}');
    expect(readdirSync(join(root, 'a', 'b'))).toEqual(['state.json']);
  });

  it('keeps the old file and removes its temp file when the writer fails', () => {
    const file = join(root, 'kept.bin');
    writeFileSync(file, 'old');
    expect(() =>
      writeFileAtomicWith(file, (fd) => {
        writeAll(fd, new Uint8Array(10));
        throw new Error('disk full');
      }),
    ).toThrow('disk full');
    expect(readFileSync(file, 'utf8')).toBe('old');
    expect(readdirSync(root).filter((n) => n.includes('kept'))).toEqual(['kept.bin']);
  });
});
