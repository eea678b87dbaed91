/**
 * Atomic files: the bytes land whole under the name or not at all, and a large buffer goes
 * through write() in pieces Node accepts (it refuses a length above 2^31 − 1).
 */
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { IO_CHUNK_BYTES, writeAll, writeFileAtomic, writeFileAtomicWith } from './atomic-file.js';

const root = mkdtempSync(join(tmpdir(), 'clawray-atomic-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('atomic files', () => {
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
