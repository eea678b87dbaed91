/**
 * Working-directory packages (Ray's `runtime_env.working_dir`): the CLI packs the user's
 * directory into a `.tar.gz` named by a hash of its content, the head keeps it, and every worker
 * unpacks it once per hash into a local cache where job entrypoints and plugins run.
 *
 * The hash is of the content alone (see `tree.ts`), so packing the same tree on two machines, or
 * twice, names the same package and the worker cache hits. Packing stops as soon as the
 * compressed size passes the limit and says what made it large; unpacking refuses anything that
 * could write outside its target and checks the hash of what it wrote before making it visible.
 */
import { createHash, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import {
  chmod,
  lstat,
  mkdir,
  open,
  readdir,
  readFile,
  realpath,
  rename,
  rm,
  stat,
  symlink,
} from 'node:fs/promises';
import { join, posix, resolve } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import { ConfigError, type ErrorFields, registerErrorClass } from '../../common/errors.js';
import { clawrayHome } from '../../common/home.js';
import { IgnoreRules } from './ignore.js';
import { describeProblem, PackageLinks, UnsafeSymlinkError } from './package-links.js';
import { END_OF_ARCHIVE, encodeHeader, padding, readTar, TarFormatError } from './tar.js';
import { ContentHash, isInside, READ_CHUNK, type TreeEntry, walkTree } from './tree.js';

/** The largest compressed package `packWorkingDir` makes unless told otherwise. */
export const DEFAULT_MAX_PACKAGE_BYTES = 100 * 1024 * 1024;

/**
 * The most a package may expand to when unpacked unless told otherwise: a bound on what a
 * hostile or broken archive (a gzip bomb) can write before its hash is checked.
 */
export const DEFAULT_MAX_UNPACKED_BYTES = 16 * 1024 * 1024 * 1024;

/** Always left out: version control, installed dependencies and byte code the worker rebuilds. */
export const DEFAULT_EXCLUDES: readonly string[] = [
  // No trailing slash: in a git worktree or submodule `.git` is a file naming a path on this machine.
  '.git',
  'node_modules/',
  '__pycache__/',
  '*.pyc',
  '.DS_Store',
];

/** Patterns in this file at the root of the directory are added to the excludes. */
export const IGNORE_FILE = '.clawrayignore';

export interface PackedDir {
  /** Hex sha256 of the canonical content listing: the package's name. */
  hash: string;
  /** The archive (`.tar.gz`). */
  bytes: Uint8Array;
  /** Files and symlinks packed. */
  files: number;
  /** Bytes of file content, uncompressed. */
  sizeBytes: number;
}

export interface PackOptions {
  /** Largest compressed size allowed; DEFAULT_MAX_PACKAGE_BYTES when absent. */
  maxBytes?: number;
  /** gitignore-style patterns to leave out, on top of DEFAULT_EXCLUDES and the `.clawrayignore` file. */
  excludes?: string[];
  /**
   * How the user raises the limit, for the too-large error, e.g. `--set spec.workingDirMaxBytes=…`.
   * Without it the error names `maxBytes`.
   */
  limitHint?: string;
}

export interface UnpackOptions {
  /** Most bytes the archive may expand to (uncompressed tar); DEFAULT_MAX_UNPACKED_BYTES when absent. */
  maxUnpackedBytes?: number;
}

/** The working directory is larger than the package size limit. */
export class PackageTooLargeError extends ConfigError {}
registerErrorClass(PackageTooLargeError);

/** Where workers keep unpacked packages: `<clawray home>/packages/<hash>`. */
export function packageCacheRoot(): string {
  return join(clawrayHome(), 'packages');
}

/** Packs `dir` (see the module comment); throws PackageTooLargeError past the size limit. */
export async function packWorkingDir(dir: string, options: PackOptions = {}): Promise<PackedDir> {
  const root = resolve(dir);
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_PACKAGE_BYTES;
  if (!Number.isSafeInteger(maxBytes) || maxBytes <= 0) {
    throw new ConfigError(
      `the working-directory size limit must be a positive whole number of bytes, not ${maxBytes}`,
      {
        fields: { dir: root, maxBytes },
      },
    );
  }
  let isDir = false;
  try {
    isDir = (await stat(root)).isDirectory();
  } catch {
    // Reported just below, with the path.
  }
  if (!isDir) {
    throw new ConfigError(`working directory ${root} is not a directory`, { fields: { dir: root } });
  }

  const rules = new IgnoreRules(DEFAULT_EXCLUDES);
  const ignoreFile = await readIgnoreFile(root);
  if (ignoreFile !== undefined) rules.addText(ignoreFile);
  rules.add(options.excludes ?? []);
  const entries = await walkTree(root, rules);

  const hash = new ContentHash();
  const progress = { files: 0, sizeBytes: 0 };
  const chunks: Buffer[] = [];
  let compressed = 0;
  let overLimit = false;
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      compressed += chunk.length;
      if (compressed > maxBytes) {
        // Failing the pipeline here stops the reads: nothing past the limit is read or kept.
        overLimit = true;
        done(new Error('over the package size limit'));
        return;
      }
      chunks.push(chunk);
      done();
    },
  });
  try {
    const tar = coalesce(archiveChunks(root, entries, hash, progress));
    await pipeline(Readable.from(tar, { objectMode: false }), createGzip(), sink);
  } catch (err) {
    if (overLimit) throw tooLarge(root, entries, maxBytes, options.limitHint);
    throw err;
  }
  return {
    hash: hash.digest(),
    bytes: Buffer.concat(chunks, compressed),
    files: progress.files,
    sizeBytes: progress.sizeBytes,
  };
}

async function readIgnoreFile(root: string): Promise<string | undefined> {
  try {
    return await readFile(join(root, IGNORE_FILE), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ConfigError(`${join(root, IGNORE_FILE)} cannot be read: ${(err as Error).message}`, {
      cause: err,
      fields: { dir: root, path: IGNORE_FILE },
    });
  }
}

/** Joins small pieces (headers, small files): each write to gzip costs a trip to the thread pool. */
async function* coalesce(pieces: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  let held: Buffer[] = [];
  let heldBytes = 0;
  for await (const piece of pieces) {
    held.push(piece);
    heldBytes += piece.length;
    if (heldBytes >= READ_CHUNK) {
      yield held.length === 1 ? held[0] : Buffer.concat(held, heldBytes);
      held = [];
      heldBytes = 0;
    }
  }
  if (heldBytes > 0) yield Buffer.concat(held, heldBytes);
}

/** The uncompressed tar stream of `entries`, feeding `hash` with exactly the bytes it archives. */
async function* archiveChunks(
  root: string,
  entries: TreeEntry[],
  hash: ContentHash,
  progress: { files: number; sizeBytes: number },
): AsyncGenerator<Buffer> {
  for (const e of entries) {
    if (e.kind === 'dir') {
      hash.dir(e.path);
      yield encodeHeader({ path: `${e.path}/`, kind: 'dir', mode: 0o755, size: 0 });
    } else if (e.kind === 'symlink') {
      hash.symlink(e.path, e.linkTarget!);
      yield encodeHeader({ path: e.path, kind: 'symlink', mode: 0o777, size: 0, linkTarget: e.linkTarget });
      progress.files++;
    } else {
      yield* fileChunks(root, e.path, hash);
      progress.files++;
    }
  }
  yield END_OF_ARCHIVE;

  async function* fileChunks(root: string, path: string, hash: ContentHash): AsyncGenerator<Buffer> {
    const full = join(root, path);
    const changed = (why: string, cause?: unknown) =>
      new ConfigError(`${full} ${why} while the working directory was being packed; try again`, {
        cause,
        fields: { dir: root, path },
      });
    let fh: Awaited<ReturnType<typeof open>>;
    try {
      // No following: a file swapped for a symlink since the walk must not pull in its target.
      // Non-blocking: one swapped for a FIFO must fail the stat below, not hang the open.
      fh = await open(full, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (err) {
      throw changed('changed or became unreadable', err);
    }
    try {
      // The size and mode come from the open file, not the walk, so header and bytes agree.
      const st = await fh.stat();
      if (!st.isFile()) throw changed('stopped being a regular file');
      const exec = (st.mode & 0o100) !== 0;
      yield encodeHeader({ path, kind: 'file', mode: exec ? 0o755 : 0o644, size: st.size });
      const sha = createHash('sha256');
      let left = st.size;
      while (left > 0) {
        // A fresh buffer per piece: gzip may still hold the previous one.
        const buf = Buffer.allocUnsafe(Math.min(READ_CHUNK, left));
        const { bytesRead } = await fh.read(buf, 0, buf.length, null);
        if (bytesRead === 0) throw changed('shrank');
        const piece = buf.subarray(0, bytesRead);
        sha.update(piece);
        left -= bytesRead;
        progress.sizeBytes += bytesRead;
        yield piece;
      }
      yield padding(st.size);
      hash.file(path, exec, sha.digest('hex'));
    } finally {
      await fh.close();
    }
  }
}

function tooLarge(
  root: string,
  entries: TreeEntry[],
  maxBytes: number,
  limitHint: string | undefined,
): PackageTooLargeError {
  const files = entries.filter((e) => e.kind !== 'dir');
  const total = files.reduce((n, e) => n + e.size, 0);
  const topDirs = new Map<string, number>();
  for (const e of files) {
    const slash = e.path.indexOf('/');
    if (slash !== -1) {
      const top = e.path.slice(0, slash + 1);
      topDirs.set(top, (topDirs.get(top) ?? 0) + e.size);
    }
  }
  // Only what moves the total: a list padded with tiny files would hide the real culprits.
  const matters = (size: number) => size >= total / 100;
  const largestDirs = [...topDirs]
    .filter(([, n]) => matters(n))
    .sort((a, b) => b[1] - a[1])
    .slice(0, 5);
  const largestFiles = files
    .filter((e) => matters(e.size))
    .sort((a, b) => b.size - a.size)
    .slice(0, 5);
  const rows: [string, number][] = [
    ...largestDirs,
    ...largestFiles.map((e): [string, number] => [e.path, e.size]),
  ];
  const width = Math.max(0, ...rows.map(([p]) => p.length));
  const list = (items: [string, number][]) =>
    items.map(([p, n]) => `    ${p.padEnd(width)}  ${formatBytes(n).padStart(8)}`).join('\n');
  const lines = [
    `working directory ${root} is too large to package: its archive passed the limit of ` +
      `${formatBytes(maxBytes)} (compressed), so packing stopped; its ${files.length} files come to ` +
      `${formatBytes(total)} uncompressed.`,
  ];
  if (largestDirs.length > 0) lines.push('  largest directories (uncompressed):', list(largestDirs));
  if (largestFiles.length > 0) lines.push('  largest files:', list(rows.slice(largestDirs.length)));
  const example = largestDirs[0]?.[0] ?? largestFiles[0]?.path ?? 'data/';
  lines.push(
    `Leave out what the job does not need: add gitignore-style patterns (e.g. "${example}") to ` +
      `${join(root, IGNORE_FILE)} or to the excludes, or raise the limit with ` +
      `${limitHint ?? '--set (maxBytes)'} if the job needs it all.`,
  );
  const fields: ErrorFields = {
    dir: root,
    limitBytes: maxBytes,
    files: files.length,
    uncompressedBytes: total,
    largest: largestFiles[0]?.path,
  };
  return new PackageTooLargeError(lines.join('\n'), { fields });
}

/** `1536` → `1.5 KiB`. */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  const text = u === 0 || v >= 10 ? String(Math.round(v)) : v.toFixed(1).replace(/\.0$/, '');
  return `${text} ${units[u]}`;
}

const HASH_RE = /^[0-9a-f]{64}$/;

/** A package's bytes do not hash to the name they came under (INVALID_ARGUMENT on the wire). */
export class PackageHashMismatchError extends ConfigError {}
registerErrorClass(PackageHashMismatchError);

/**
 * Returns `hash` when it is a package name (64 lowercase hex digits, a sha256): it becomes the
 * folder a package is unpacked into, so nothing else may. `field` names it in the refusal.
 */
export function checkPackageHash(hash: string, field = 'package hash'): string {
  if (!HASH_RE.test(hash)) {
    const shown = JSON.stringify(hash.length > 100 ? `${hash.slice(0, 100)}…` : hash);
    throw new ConfigError(
      `invalid ${field} ${shown}: it is not a sha256 (64 lowercase hex digits), which is what names a working-directory package (the hash of its content, as packing makes it)`,
      { fields: { field, hash: hash.slice(0, 100) } },
    );
  }
  return hash;
}

/**
 * Checks, without writing anything, that `chunks` (a `.tar.gz`, in pieces) is a package
 * `unpackWorkingDir` would accept under `hash`: every entry safe, at most `maxUnpackedBytes`
 * unpacked, and its content hashing to `hash`. The head runs it on an upload before storing
 * it, so a package that does not match its name is refused then, not by the job at unpack.
 */
export async function verifyPackage(
  hash: string,
  chunks: readonly Uint8Array[],
  options: UnpackOptions = {},
): Promise<void> {
  checkPackageHash(hash);
  const outcome = 'nothing was stored';
  const actual = await walkArchive(
    { hash, chunks },
    options.maxUnpackedBytes ?? DEFAULT_MAX_UNPACKED_BYTES,
    NOWHERE,
    outcome,
  );
  if (actual !== hash)
    throw mismatch(hash, actual, "it was damaged, or sent under another package's hash", outcome);
}

/** Temporary unpack directories older than this were left by a crash and are removed. */
const STALE_TEMP_MS = 6 * 60 * 60 * 1000;
const TEMP_PREFIX = '.unpack-';
const inFlight = new Map<string, Promise<string>>();

/**
 * Unpacks a package into `<cacheRoot>/<hash>` and returns that directory. A directory already
 * there is used as is. Several processes may unpack the same hash at once: each writes its own
 * temporary directory and renames it into place, so the cache only ever holds complete packages.
 */
export async function unpackWorkingDir(
  packed: { hash: string; bytes: Uint8Array },
  cacheRoot: string,
  options: UnpackOptions = {},
): Promise<string> {
  // The hash becomes a path: only a real hash may, never `../x`.
  checkPackageHash(packed.hash, 'working-directory package hash');
  const root = resolve(cacheRoot);
  const target = join(root, packed.hash);
  if (await isDirectory(target)) return target;
  const running = inFlight.get(target);
  if (running) return running;
  const work = unpackFresh(packed, root, target, options).finally(() => inFlight.delete(target));
  inFlight.set(target, work);
  return work;
}

async function unpackFresh(
  packed: { hash: string; bytes: Uint8Array },
  root: string,
  target: string,
  options: UnpackOptions,
): Promise<string> {
  await mkdir(root, { recursive: true, mode: 0o700 });
  await removeStaleTemps(root);
  const temp = join(
    root,
    `${TEMP_PREFIX}${packed.hash.slice(0, 16)}-${process.pid}-${randomBytes(4).toString('hex')}`,
  );
  await mkdir(temp, { mode: 0o700 });
  try {
    const actual = await extract(packed, temp, options.maxUnpackedBytes ?? DEFAULT_MAX_UNPACKED_BYTES);
    if (actual !== packed.hash) {
      throw mismatch(packed.hash, actual, 'it was altered or damaged on the way', UNPACKED);
    }
    await chmod(temp, 0o755);
    try {
      await rename(temp, target);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // Another process got there first with the same content; theirs is as good as ours.
      if ((code !== 'ENOTEMPTY' && code !== 'EEXIST') || !(await isDirectory(target))) throw err;
      await rm(temp, { recursive: true, force: true });
    }
    return target;
  } catch (err) {
    await rm(temp, { recursive: true, force: true });
    throw err;
  }
}

const UNPACKED = 'nothing was unpacked';

function mismatch(hash: string, actual: string, why: string, outcome: string): PackageHashMismatchError {
  return refused(
    hash,
    'hash-mismatch',
    `its content hashes to ${actual}, not ${hash}: ${why}`,
    { actualHash: actual },
    undefined,
    PackageHashMismatchError,
    outcome,
  ) as PackageHashMismatchError;
}

/**
 * Where an archive's entries go as they are checked: folders, files and symlinks on the disk
 * (unpacking), or nowhere (the head's check of an upload). A file's pieces must all be read.
 */
interface EntrySink {
  dir(rel: string): Promise<void>;
  symlink(rel: string, target: string): Promise<void>;
  file(rel: string, exec: boolean, pieces: AsyncIterable<Buffer>): Promise<void>;
}

const NOWHERE: EntrySink = {
  dir: async () => {},
  symlink: async () => {},
  file: async (_rel, _exec, pieces) => {
    for await (const _ of pieces);
  },
};

/** Writes under `dest`: never through a symlink or a file, never over anything. */
function diskSink(dest: string): EntrySink {
  return {
    dir: (rel) => mkdir(join(dest, rel), { mode: 0o755 }).then(() => {}),
    symlink: (rel, target) => symlink(target, join(dest, rel)),
    async file(rel, exec, pieces) {
      const mode = exec ? 0o755 : 0o644;
      const fh = await open(
        join(dest, rel),
        constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
        mode,
      );
      try {
        for await (const piece of pieces) {
          let off = 0;
          while (off < piece.length) off += (await fh.write(piece, off)).bytesWritten;
        }
        // A umask can only take bits away, and only the executable bit is promised.
        if (exec) await fh.chmod(mode);
      } finally {
        await fh.close();
      }
    },
  };
}

/**
 * Writes the archive's entries under `dest` (a fresh, empty directory) and returns the content
 * hash of what it wrote: every directory it made (named in the archive or not), the bytes and
 * executable bit of every file, every symlink's target. Writes never pass through a symlink or a
 * file: every parent must be a directory this function made.
 */
async function extract(
  packed: { hash: string; bytes: Uint8Array },
  dest: string,
  maxBytes: number,
): Promise<string> {
  const sink = diskSink(dest);
  return walkArchive(
    { hash: packed.hash, chunks: [packed.bytes] },
    maxBytes,
    sink,
    UNPACKED,
    async (links, unsafeLink) => {
      // Belt and braces: what the lexical walk allowed must not resolve outside on the disk either.
      const realDest = await realpath(dest);
      for (const rel of links.paths()) {
        let real: string | undefined;
        try {
          real = await realpath(join(dest, rel));
        } catch {
          // Dangling: nothing on the disk to resolve; the walk above kept it inside.
        }
        if (real !== undefined && !isInside(realDest, real)) {
          throw unsafeLink(rel, links.target(rel) ?? '', 'resolves outside the package');
        }
      }
    },
  );
}

type UnsafeLink = (entry: string, linkTarget: string, why: string, chain?: string[]) => ConfigError;

/**
 * Reads the archive's entries into `sink`, refusing anything unpacking must not write (escaping
 * paths and symlinks, an entry twice, a path through a file, more than `maxBytes` unpacked),
 * and returns the content hash of the tree they make (`ContentHash`, as packing computes it).
 * `outcome` ends every refusal (`nothing was unpacked`); `after` runs once every entry passed.
 */
async function walkArchive(
  packed: { hash: string; chunks: readonly Uint8Array[] },
  maxBytes: number,
  sink: EntrySink,
  outcome: string,
  after?: (links: PackageLinks, unsafeLink: UnsafeLink) => Promise<void>,
): Promise<string> {
  const refuse = (
    reason: string,
    detail: string,
    fields: ErrorFields = {},
    cause?: unknown,
    Kind: typeof ConfigError = ConfigError,
  ) => refused(packed.hash, reason, detail, fields, cause, Kind, outcome);
  const unsafe = (entry: string, why: string) =>
    refuse('unsafe-entry', `entry ${JSON.stringify(entry)} ${why}`, { entry });
  const unsafeLink: UnsafeLink = (entry, linkTarget, why, chain = []) =>
    refuse(
      'unsafe-symlink',
      `entry ${JSON.stringify(entry)} is a symlink that ${why} (its target: ${JSON.stringify(linkTarget)})`,
      { entry, linkTarget, chain: chain.length > 0 ? chain.join(', ') : undefined },
      undefined,
      UnsafeSymlinkError,
    );
  const gunzip = createGunzip({ chunkSize: READ_CHUNK });
  for (const chunk of packed.chunks) gunzip.write(chunk);
  gunzip.end();
  // Counting the whole stream, headers included, also bounds a flood of empty entries.
  let expanded = 0;
  async function* bounded(): AsyncGenerator<Buffer> {
    for await (const chunk of gunzip as AsyncIterable<Buffer>) {
      expanded += chunk.length;
      if (expanded > maxBytes) {
        throw refuse('too-large', `it expands to more than ${formatBytes(maxBytes)}`, {
          maxUnpackedBytes: maxBytes,
        });
      }
      yield chunk;
    }
  }
  const hash = new ContentHash();
  const dirs = new Set<string>(['']);
  const leaves = new Set<string>();
  const links = new PackageLinks();

  const makeDir = async (rel: string) => {
    await sink.dir(rel);
    dirs.add(rel);
    hash.dir(rel);
  };

  try {
    for await (const e of readTar(bounded())) {
      const rel = safeRelativePath(e.path, e.kind === 'dir', refuse);
      if (rel === '') continue;
      if (leaves.has(rel) || (dirs.has(rel) && e.kind !== 'dir')) throw unsafe(e.path, 'appears twice');
      const parts = rel.split('/');
      for (let i = 1; i < parts.length; i++) {
        const parent = parts.slice(0, i).join('/');
        if (leaves.has(parent)) throw unsafe(e.path, `would be written through ${parent}`);
        if (!dirs.has(parent)) await makeDir(parent);
      }
      if (e.kind === 'dir') {
        if (!dirs.has(rel)) await makeDir(rel);
      } else if (e.kind === 'symlink') {
        const link = e.linkTarget ?? '';
        const resolved = posix.normalize(posix.join(posix.dirname(rel), link));
        if (
          link === '' ||
          link.includes('\0') ||
          posix.isAbsolute(link) ||
          resolved === '..' ||
          resolved.startsWith('../')
        ) {
          throw unsafeLink(e.path, link, 'points outside the package');
        }
        await sink.symlink(rel, link);
        leaves.add(rel);
        links.add(rel, link);
        hash.symlink(rel, link);
      } else {
        const exec = (e.mode & 0o100) !== 0;
        const sha = createHash('sha256');
        await sink.file(rel, exec, hashing(e.body, sha));
        leaves.add(rel);
        hash.file(rel, exec, sha.digest('hex'));
      }
    }
    // Each link was checked alone; together they can still lead out (`d/e/up -> ../..`, then
    // `b -> d/e/up/../x`), dangling or not, which only resolving them through each other shows.
    const [problem] = links.problems();
    if (problem) {
      const why =
        problem.why === 'absolute'
          ? 'leads to an absolute path through other symlinks'
          : problem.why === 'loop'
            ? 'never resolves (a symlink loop)'
            : 'resolves outside the package through other symlinks';
      throw unsafeLink(problem.path, problem.target, `${why}: ${describeProblem(problem)}`, problem.chain);
    }
    await after?.(links, unsafeLink);
    return hash.digest();
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    if (err instanceof TarFormatError) throw refuse('malformed', err.message, {}, err);
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      // Names that differ only in case collide on a case-insensitive file system.
      throw refuse('unsafe-entry', `two entries land on the same path (${(err as Error).message})`, {}, err);
    }
    if (typeof code === 'string' && code.startsWith('Z_')) {
      throw refuse('malformed', `it is not a gzip archive (${(err as Error).message})`, {}, err);
    }
    throw err;
  } finally {
    gunzip.destroy();
  }
}

/** `pieces`, feeding each to `sha` on the way. */
async function* hashing(
  pieces: AsyncIterable<Buffer>,
  sha: ReturnType<typeof createHash>,
): AsyncGenerator<Buffer> {
  for await (const piece of pieces) {
    sha.update(piece);
    yield piece;
  }
}

/** The entry's path relative to the package root ('' for the root itself); refuses escapes. */
function safeRelativePath(
  path: string,
  isDir: boolean,
  refuse: (reason: string, detail: string, fields: ErrorFields) => ConfigError,
): string {
  let p = path;
  if (isDir) p = p.replace(/\/+$/, '');
  // Archives made with `tar -C dir .` name everything under `./`.
  if (p === '.') return '';
  if (p.startsWith('./')) p = p.slice(2);
  const why = path.includes('\0')
    ? 'has a NUL byte'
    : p.startsWith('/')
      ? 'is an absolute path'
      : p.split('/').some((part) => part === '' || part === '.' || part === '..')
        ? 'has an empty, `.` or `..` component'
        : undefined;
  if (why !== undefined) {
    throw refuse('unsafe-entry', `entry ${JSON.stringify(path)} ${why}`, { entry: path });
  }
  return p;
}

function refused(
  hash: string,
  reason: string,
  detail: string,
  fields: ErrorFields = {},
  cause?: unknown,
  Kind: typeof ConfigError = ConfigError,
  outcome = UNPACKED,
): ConfigError {
  return new Kind(`working-directory package ${hash} was refused: ${detail}; ${outcome}`, {
    cause,
    fields: { hash, reason, ...fields },
  });
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await lstat(path)).isDirectory();
  } catch {
    return false;
  }
}

async function removeStaleTemps(root: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(root);
  } catch {
    return;
  }
  const now = Date.now();
  for (const name of names) {
    if (!name.startsWith(TEMP_PREFIX)) continue;
    try {
      const st = await lstat(join(root, name));
      if (now - st.mtimeMs > STALE_TEMP_MS) await rm(join(root, name), { recursive: true, force: true });
    } catch {
      // Another process may be removing it too.
    }
  }
}
