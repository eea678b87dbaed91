/**
 * verifyPackage, the head's check of an upload: it accepts exactly what unpacking accepts under
 * the same hash, and refuses the rest without writing anything.
 */
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { END_OF_ARCHIVE, encodeHeader, padding, type TarHeader } from './tar.js';
import {
  checkPackageHash,
  PackageHashMismatchError,
  packWorkingDir,
  unpackWorkingDir,
  verifyPackage,
} from './working-dir.js';

let base: string;
beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'clawray-verify-'));
});
afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

async function tree(name: string, files: Record<string, string | { link: string } | { exec: string }>) {
  const root = join(base, name);
  for (const [path, what] of Object.entries(files)) {
    const full = join(root, path);
    await mkdir(dirname(full), { recursive: true });
    if (typeof what === 'string') await writeFile(full, what);
    else if ('link' in what) await symlink(what.link, full);
    else await writeFile(full, what.exec, { mode: 0o755 });
  }
  await mkdir(join(root, 'empty'), { recursive: true });
  return packWorkingDir(root);
}

function archive(entries: [TarHeader, string?][]): Uint8Array {
  const parts: Buffer[] = [];
  for (const [h, content] of entries) {
    const body = Buffer.from(content ?? '');
    parts.push(encodeHeader({ ...h, size: body.length }), body, padding(body.length));
  }
  parts.push(END_OF_ARCHIVE);
  return gzipSync(Buffer.concat(parts));
}

const file = (path: string): TarHeader => ({ path, kind: 'file', mode: 0o644, size: 0 });

/** Splits `bytes` into pieces of `size`, as an upload arrives. */
const pieces = (bytes: Uint8Array, size: number): Uint8Array[] => {
  const out: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += size) out.push(bytes.subarray(at, at + size));
  return out;
};

describe('verifyPackage', () => {
  it('accepts a packed working dir under its own hash, whole or in pieces', async () => {
    const packed = await tree('good', {
      'main.mjs': 'console.log(1)\n',
      'lib/deep/util.js': 'export const x = 1;\n',
      'run.sh': { exec: '#!/bin/sh\necho hi\n' },
      'lib/link.js': { link: 'deep/util.js' },
    });
    await expect(verifyPackage(packed.hash, [packed.bytes])).resolves.toBeUndefined();
    await expect(verifyPackage(packed.hash, pieces(packed.bytes, 7))).resolves.toBeUndefined();
  });

  it("refuses another package's bytes, naming both hashes, and says nothing was stored", async () => {
    const a = await tree('a', { 'f.txt': 'original' });
    const b = await tree('b', { 'f.txt': 'altered!' });
    const err = (await verifyPackage(a.hash, [b.bytes]).catch((e: unknown) => e)) as PackageHashMismatchError;
    expect(err).toBeInstanceOf(PackageHashMismatchError);
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toContain(`its content hashes to ${b.hash}, not ${a.hash}`);
    expect(err.message).toMatch(/nothing was stored$/);
    expect(err.fields).toMatchObject({ hash: a.hash, reason: 'hash-mismatch', actualHash: b.hash });
  });

  it('hashes a hand-made archive (implicit folders) exactly as unpacking does', async () => {
    const bytes = archive([
      [file('x/y/z.txt'), 'z'],
      [file('top.txt'), 't'],
    ]);
    const cache = join(base, 'cache');
    const refusal = (await unpackWorkingDir({ hash: 'a'.repeat(64), bytes }, cache).catch(
      (e: unknown) => e,
    )) as ConfigError;
    const actual = String(refusal.fields.actualHash);
    expect(actual).toMatch(/^[0-9a-f]{64}$/);
    await expect(verifyPackage(actual, [bytes])).resolves.toBeUndefined();
    await expect(unpackWorkingDir({ hash: actual, bytes }, cache)).resolves.toBe(join(cache, actual));
  });

  it('refuses what unpacking would refuse, writing nothing', async () => {
    const before = await readdir(base);
    for (const [bytes, reason] of [
      [archive([[file('../escape.txt'), 'x']]), 'unsafe-entry'],
      [
        archive([[{ path: 'l', kind: 'symlink', mode: 0o777, size: 0, linkTarget: '../../etc' }]]),
        'unsafe-symlink',
      ],
      [new Uint8Array([1, 2, 3]), 'malformed'],
    ] as const) {
      const err = (await verifyPackage('a'.repeat(64), [bytes]).catch((e: unknown) => e)) as ConfigError;
      expect(err).toBeInstanceOf(ConfigError);
      expect(err.fields.reason).toBe(reason);
      expect(err.message).toMatch(/nothing was stored$/);
    }
    const big = archive([[file('big.txt'), 'x'.repeat(10_000)]]);
    await expect(verifyPackage('a'.repeat(64), [big], { maxUnpackedBytes: 4096 })).rejects.toMatchObject({
      fields: { reason: 'too-large' },
    });
    expect(await readdir(base)).toEqual(before);
  });

  it('takes only a sha256 as a package name', () => {
    expect(checkPackageHash('0'.repeat(64))).toBe('0'.repeat(64));
    for (const hash of ['../../etc', 'A'.repeat(64), 'a'.repeat(63), 'sha256:abc', ''])
      expect(() => checkPackageHash(hash, 'working_dir_hash')).toThrow(
        /^invalid working_dir_hash .*not a sha256/,
      );
  });
});
