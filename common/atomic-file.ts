/** Files that are never seen half-written: a crash leaves the old content or the new. */
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { writeAll } from './chunked-io.js';

/**
 * Writes `file` through a temporary file in its folder (created if missing) that `write` fills,
 * then fsync, rename over the target, fsync of the folder.
 */
export function writeFileAtomicWith(file: string, write: (fd: number) => void): void {
  const dir = dirname(file);
  mkdirSync(dir, { recursive: true });
  const tmp = join(dir, `.${basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  let fd: number | null = null;
  try {
    fd = openSync(tmp, 'w', 0o644);
    write(fd);
    fsyncSync(fd);
    closeSync(fd);
    fd = null;
    renameSync(tmp, file);
  } catch (err) {
    if (fd !== null) closeSync(fd);
    rmSync(tmp, { force: true });
    throw err;
  }
  fsyncDir(dir);
}

/** Makes a folder's entries (a rename into it) durable; a no-op where the filesystem refuses. */
export function fsyncDir(dir: string): void {
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Some filesystems refuse fsync on a directory; the rename itself has already happened.
  }
}

/** Writes bytes or text to `file` atomically (`writeFileAtomicWith`). */
export function writeFileAtomic(file: string, data: Uint8Array | string): void {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  writeFileAtomicWith(file, (fd) => writeAll(fd, bytes));
}
