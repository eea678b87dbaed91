/**
 * Walking a directory the way a working-directory package sees it, and the content hash both
 * ends agree on. The hash covers relative paths, the owner-executable bit, file bytes and symlink
 * targets, and nothing else (no times, owners or other mode bits), over entries sorted by path:
 * two machines holding the same tree get the same hash whatever order they made it in.
 */
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, open, readdir, readlink, realpath } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { ConfigError } from '../../common/errors.js';
import type { IgnoreRules } from './ignore.js';
import { describeProblem, PackageLinks, UnsafeSymlinkError } from './package-links.js';
import type { TarEntryKind } from './tar.js';

export interface TreeEntry {
  /** Relative to the root, `/`-separated. */
  path: string;
  kind: TarEntryKind;
  /** Files: whether the owner may execute it. */
  exec: boolean;
  /** Files: bytes when walked. */
  size: number;
  /** Symlinks: the target as it will be stored (always relative). */
  linkTarget?: string;
}

/** Reads files in pieces this size, so no file is ever held in memory whole. */
export const READ_CHUNK = 256 * 1024;

/** A symlink stays a symlink only while it points inside the tree. */
export function isInside(root: string, p: string): boolean {
  return p === root || p.startsWith(root.endsWith(sep) ? root : root + sep);
}

const byPath = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Every directory, file and symlink under `root` (not `root` itself) that `ignore` keeps, parents
 * before children. Excluded directories are not entered. Sockets, FIFOs and devices are passed
 * over: they have no content to ship. Symlinks that lead outside the tree are refused, all of them
 * named in one UnsafeSymlinkError: on the disk, and through each other as the worker will resolve
 * them (see package-links.ts), so a package this makes is one every worker unpacks.
 */
export async function walkTree(root: string, ignore?: IgnoreRules): Promise<TreeEntry[]> {
  const realRoot = await realpath(root);
  const entries: TreeEntry[] = [];
  const outside: string[] = [];

  async function visit(relDir: string): Promise<void> {
    const abs = relDir === '' ? root : join(root, relDir);
    let names: string[];
    try {
      names = (await readdir(abs)).sort(byPath);
    } catch (err) {
      throw unreadable(root, relDir, err);
    }
    for (const name of names) {
      const rel = relDir === '' ? name : `${relDir}/${name}`;
      const full = join(abs, name);
      let st: Awaited<ReturnType<typeof lstat>>;
      try {
        st = await lstat(full);
      } catch (err) {
        throw unreadable(root, rel, err);
      }
      const isDir = st.isDirectory();
      if (ignore?.ignores(rel, isDir)) continue;
      if (isDir) {
        entries.push({ path: rel, kind: 'dir', exec: false, size: 0 });
        await visit(rel);
      } else if (st.isFile()) {
        entries.push({ path: rel, kind: 'file', exec: (st.mode & 0o100) !== 0, size: st.size });
      } else if (st.isSymbolicLink()) {
        const target = await readlink(full);
        const stored = await storedLinkTarget(root, realRoot, rel, target);
        if (stored === undefined) outside.push(`${rel} -> ${target}`);
        else entries.push({ path: rel, kind: 'symlink', exec: false, size: 0, linkTarget: stored });
      }
    }
  }

  await visit('');
  // Checked once all are known: a link may lead out through one later in the walk.
  const links = new PackageLinks();
  for (const e of entries) if (e.kind === 'symlink') links.add(e.path, e.linkTarget!);
  for (const problem of links.problems()) outside.push(describeProblem(problem));
  if (outside.length > 0) {
    const shown = outside.slice(0, 10).join(', ');
    const more = outside.length > 10 ? ` and ${outside.length - 10} more` : '';
    throw new UnsafeSymlinkError(
      `${root}: symlinks that point outside the directory cannot be packaged (the worker would not ` +
        `have their targets): ${shown}${more}. Copy what they point to into the directory, or ` +
        `leave them out with excludes or a .clawrayignore file.`,
      { fields: { dir: root, symlink: outside[0], count: outside.length } },
    );
  }
  return entries;
}

/**
 * The target to store for a symlink at `rel`, or undefined when it leads outside the tree.
 * Absolute targets inside the tree become relative, since the tree lands elsewhere on a worker.
 */
async function storedLinkTarget(
  root: string,
  realRoot: string,
  rel: string,
  target: string,
): Promise<string | undefined> {
  let stored: string;
  if (isAbsolute(target)) {
    // The user may have written the target through the path they gave or through the real one.
    const base = isInside(root, target) ? root : isInside(realRoot, target) ? realRoot : undefined;
    if (base === undefined) return undefined;
    stored = relative(dirname(join(base, rel)), target) || '.';
  } else {
    // Directories inside the tree are never symlinks (the walk does not follow them), so the
    // link's real parent is the real root joined with its relative parent.
    if (!isInside(realRoot, resolve(realRoot, dirname(rel), target))) return undefined;
    stored = target;
  }
  try {
    // The lexical check misses `..` taken after another symlink; the resolved path does not.
    if (!isInside(realRoot, await realpath(join(root, rel)))) return undefined;
  } catch {
    // Dangling (or a loop): nothing to resolve, so the lexical check above is all there is.
  }
  return stored.split(sep).join('/');
}

function unreadable(root: string, rel: string, err: unknown): ConfigError {
  const code = (err as NodeJS.ErrnoException).code ?? 'error';
  const where = rel === '' ? root : join(root, rel);
  return new ConfigError(
    `${where} cannot be read for packaging (${code}); fix its permissions or leave it out with ` +
      `excludes or a .clawrayignore file`,
    { cause: err, fields: { dir: root, path: rel, code } },
  );
}

/** Accumulates the canonical listing of a tree; entries may come in any order. */
export class ContentHash {
  private readonly lines: [string, string][] = [];

  dir(path: string): void {
    this.lines.push([path, `d\0${path}\0`]);
  }

  file(path: string, exec: boolean, sha256: string): void {
    this.lines.push([path, `f\0${path}\0${exec ? 'x' : '-'}\0${sha256}\0`]);
  }

  symlink(path: string, target: string): void {
    this.lines.push([path, `l\0${path}\0${target}\0`]);
  }

  /** Hex sha256 of the listing; the version tag keeps a future listing format from colliding. */
  digest(): string {
    const h = createHash('sha256').update('clawray-working-dir-v1\0');
    for (const [, line] of [...this.lines].sort((a, b) => byPath(a[0], b[0]))) h.update(line);
    return h.digest('hex');
  }
}

/** Hex sha256 of a file's bytes, read in pieces. */
export async function sha256File(path: string): Promise<string> {
  const fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const h = createHash('sha256');
    const buf = Buffer.allocUnsafe(READ_CHUNK);
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      h.update(buf.subarray(0, bytesRead));
    }
    return h.digest('hex');
  } finally {
    await fh.close();
  }
}

/** The content hash of everything under `root`, with no exclusions. */
export async function hashTree(root: string): Promise<string> {
  const hash = new ContentHash();
  for (const e of await walkTree(root)) {
    if (e.kind === 'dir') hash.dir(e.path);
    else if (e.kind === 'symlink') hash.symlink(e.path, e.linkTarget!);
    else hash.file(e.path, e.exec, await sha256File(join(root, e.path)));
  }
  return hash.digest();
}
