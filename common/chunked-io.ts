/** Reads and writes of buffers of any size through a file descriptor. */
import { readSync, writeSync } from 'node:fs';

/**
 * Bytes one read() or write() is given: Node refuses a length above 2^31 − 1, and a 0.6B
 * model's weights in float32 are 2.4 GB (an 8B model's embedding alone 2.1 GB).
 */
export const IO_CHUNK_BYTES = 1 << 30;

/** Writes all of `bytes` at the descriptor's position, in pieces of at most `chunkBytes`. */
export function writeAll(fd: number, bytes: Uint8Array, chunkBytes = IO_CHUNK_BYTES): void {
  let done = 0;
  while (done < bytes.byteLength)
    done += writeSync(fd, bytes, done, Math.min(chunkBytes, bytes.byteLength - done));
}

/**
 * Fills `into` from byte `position` of the file, in pieces of at most `chunkBytes`. Returns the
 * bytes read: fewer than `into.byteLength` only when the file ends first.
 */
export function readAt(fd: number, into: Uint8Array, position: number, chunkBytes = IO_CHUNK_BYTES): number {
  let done = 0;
  while (done < into.byteLength) {
    const n = readSync(fd, into, done, Math.min(chunkBytes, into.byteLength - done), position + done);
    if (n === 0) break;
    done += n;
  }
  return done;
}
