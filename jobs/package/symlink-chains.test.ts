/**
 * Symlink chains in working-directory packages, with archives made by the system's `tar` from
 * trees made with real symlinks: a link that leaves the package only through another link,
 * dangling or not, is refused by the unpacker with UnsafeSymlinkError naming the entry, and the
 * packer refuses the same trees, so what the CLI packs every worker unpacks.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, fromErrorInfo, registeredErrorClass, toErrorInfo } from '../../common/errors.js';
import { MAX_LINK_HOPS, PackageLinks, UnsafeSymlinkError } from './package-links.js';
import { packWorkingDir, unpackWorkingDir } from './working-dir.js';

let base: string;
beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'clawray-symlink-chains-'));
});
afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

let counter = 0;
async function freshDir(name: string): Promise<string> {
  const dir = join(base, `${name}-${counter++}`);
  await mkdir(dir, { recursive: true });
  return dir;
}

/** path → file content, or `{ link }` for a symlink; made in the order given. */
type Tree = Record<string, string | { link: string }>;

async function makeTree(root: string, tree: Tree): Promise<void> {
  for (const [path, what] of Object.entries(tree)) {
    const full = join(root, path);
    await mkdir(dirname(full), { recursive: true });
    if (typeof what === 'string') await writeFile(full, what);
    else await symlink(what.link, full);
  }
}

/** A `.tar.gz` of `tree` written by the system's tar, entries in the order the tree lists them. */
async function systemTar(tree: Tree): Promise<Buffer> {
  const src = await freshDir('src');
  await makeTree(src, tree);
  return execFileSync('tar', ['-czf', '-', '-C', src, ...Object.keys(tree)]);
}

const ANY_HASH = 'b'.repeat(64);

async function unpackRefusal(bytes: Buffer): Promise<{ err: UnsafeSymlinkError; cache: string }> {
  const cache = await freshDir('cache');
  const err = (await unpackWorkingDir({ hash: ANY_HASH, bytes }, cache).catch((e: unknown) => e)) as Error;
  expect(err).toBeInstanceOf(UnsafeSymlinkError);
  // Still a ConfigError: callers that handle refusals as configuration problems keep doing so.
  expect(err).toBeInstanceOf(ConfigError);
  // Nothing of it is left, not even the temporary directory.
  expect(await readdir(cache)).toEqual([]);
  return { err: err as UnsafeSymlinkError, cache };
}

describe('unpacking refuses symlinks that leave the package through other symlinks', () => {
  it('a -> b, b -> ../../etc: b is refused by name', async () => {
    const { err } = await unpackRefusal(await systemTar({ a: { link: 'b' }, b: { link: '../../etc' } }));
    expect(err.fields).toMatchObject({ reason: 'unsafe-symlink', entry: 'b', linkTarget: '../../etc' });
    expect(err.message).toMatch(/entry "b" is a symlink that points outside the package/);
  });

  it('a dangling link whose `..` climbs out through another link', async () => {
    // `d/e/up` is the package root; `esc` is then `<root>/../x`: nothing there at unpack time,
    // so only resolving it through `d/e/up` shows where it leads.
    const { err } = await unpackRefusal(
      await systemTar({
        'd/e/keep.txt': 'k',
        'd/e/up': { link: '../..' },
        esc: { link: 'd/e/up/../x' },
      }),
    );
    expect(err.fields).toMatchObject({ entry: 'esc', linkTarget: 'd/e/up/../x' });
    expect(err.fields.chain).toBe('esc -> d/e/up/../x, d/e/up -> ../..');
    expect(err.message).toMatch(
      /"esc" is a symlink that resolves outside the package through other symlinks/,
    );
  });

  it('a link that leads out through one that comes later in the archive', async () => {
    const { err } = await unpackRefusal(
      await systemTar({ first: { link: 'sub/up/../../../etc' }, 'sub/up': { link: '..' } }),
    );
    // `first` alone normalizes to `../etc`: refused on its own, before `sub/up` is read.
    expect(err.fields.entry).toBe('first');

    const later = await unpackRefusal(
      await systemTar({ first: { link: 'sub/deep/up/../x' }, 'sub/deep/up': { link: '../..' } }),
    );
    // Lexically `sub/deep/x`; through `sub/deep/up` (the root) it is `<root>/../x`.
    expect(later.err.fields).toMatchObject({
      entry: 'first',
      chain: 'first -> sub/deep/up/../x, sub/deep/up -> ../..',
    });
  });

  it('keeps its class and fields across the wire (a supervisor reports it to the head)', async () => {
    const { err } = await unpackRefusal(await systemTar({ out: { link: '../x' } }));
    expect(registeredErrorClass('UnsafeSymlinkError')).toBe(UnsafeSymlinkError);
    const back = fromErrorInfo(JSON.parse(JSON.stringify(toErrorInfo(err)))) as UnsafeSymlinkError;
    expect(back).toBeInstanceOf(UnsafeSymlinkError);
    expect(back.fields).toEqual(err.fields);
    expect(back.retryable).toBe(false);
  });

  it('a symlink loop', async () => {
    const { err } = await unpackRefusal(await systemTar({ a: { link: 'b' }, b: { link: 'a' } }));
    expect(err.fields.entry).toBe('a');
    expect(err.message).toMatch(/never resolves \(a symlink loop\)/);
  });

  it('takes chains that stay inside, dangling ones included', async () => {
    const tree: Tree = {
      'src/main.txt': 'main',
      lib: { link: 'src' },
      // Dangling: resolves to src/v1, which nothing provides yet, inside the package.
      'src/current': { link: '../lib/v1' },
      'src/up/self': { link: '../..' },
      back: { link: 'src/up/self/src/main.txt' },
    };
    const bytes = await systemTar(tree);
    const src = await freshDir('inside');
    await makeTree(src, tree);
    const packed = await packWorkingDir(src);
    const out = await unpackWorkingDir({ hash: packed.hash, bytes }, await freshDir('cache'));
    expect(await readlink(join(out, 'src/current'))).toBe('../lib/v1');
    expect(existsSync(join(out, 'src/current'))).toBe(false);
    expect(await readlink(join(out, 'back'))).toBe('src/up/self/src/main.txt');
    expect(existsSync(join(out, 'back'))).toBe(true);
  });
});

describe('packing refuses the same trees', () => {
  it('names the dangling chain and the loop, and leaving them out packs', async () => {
    const dir = await freshDir('pack');
    await makeTree(dir, {
      'ok.txt': 'ok',
      'd/e/up': { link: '../..' },
      esc: { link: 'd/e/up/../x' },
      loop1: { link: 'loop2' },
      loop2: { link: 'loop1' },
    });
    const err = (await packWorkingDir(dir).catch((e: unknown) => e)) as UnsafeSymlinkError;
    expect(err).toBeInstanceOf(UnsafeSymlinkError);
    expect(err.message).toContain('esc -> d/e/up/../x resolves to a path outside the package');
    expect(err.message).toContain(`loop1 -> loop2 resolves to a loop of more than ${MAX_LINK_HOPS} links`);
    expect(err.fields).toMatchObject({ dir, count: 3 });
    await expect(packWorkingDir(dir, { excludes: ['esc', 'loop*'] })).resolves.toMatchObject({ files: 2 });
  });
});

describe('PackageLinks', () => {
  const links = (entries: Record<string, string>) => {
    const l = new PackageLinks();
    for (const [p, t] of Object.entries(entries)) l.add(p, t);
    return l;
  };

  it('resolves lexically through the package’s own links', () => {
    const l = links({
      'a/b/root': '../..',
      'a/b/esc': 'root/..',
      'a/b/in': 'root/a',
      abs: '/etc',
      'via-abs': 'abs/x',
      deep: 'a/b/root/a/b/root/a/b/root/x',
      dangling: 'nothing/yet/../here',
    });
    expect(l.check('a/b/root')).toBeUndefined();
    expect(l.check('a/b/in')).toBeUndefined();
    expect(l.check('deep')).toBeUndefined();
    expect(l.check('dangling')).toBeUndefined();
    expect(l.check('a/b/esc')).toMatchObject({
      why: 'outside',
      chain: ['a/b/esc -> root/..', 'a/b/root -> ../..'],
    });
    expect(l.check('abs')).toMatchObject({ why: 'absolute' });
    expect(l.check('via-abs')).toMatchObject({ why: 'absolute', chain: ['via-abs -> abs/x', 'abs -> /etc'] });
    expect(l.problems().map((p) => p.path)).toEqual(['a/b/esc', 'abs', 'via-abs']);
  });

  it(`calls more than ${MAX_LINK_HOPS} links in one resolution a loop`, () => {
    const chain: Record<string, string> = {};
    for (let i = 0; i < MAX_LINK_HOPS; i++) chain[`l${i}`] = `l${i + 1}`;
    // 40 links followed to reach a plain name: allowed; one more is a loop.
    expect(links(chain).check('l0')).toBeUndefined();
    expect(links({ ...chain, [`l${MAX_LINK_HOPS}`]: 'end' }).check('l0')).toMatchObject({ why: 'loop' });
    expect(links({ self: 'self/..' }).check('self')).toMatchObject({ why: 'loop' });
  });
});
