import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import {
  chmod,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rm,
  symlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { END_OF_ARCHIVE, encodeHeader, padding, type TarHeader } from './tar.js';
import { hashTree } from './tree.js';
import {
  DEFAULT_MAX_PACKAGE_BYTES,
  PackageTooLargeError,
  packageCacheRoot,
  packWorkingDir,
  unpackWorkingDir,
} from './working-dir.js';

let base: string;
beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'clawray-package-'));
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

type Spec = Record<string, string | Buffer | { exec: string } | { link: string } | { dir: true }>;

/** Makes the tree in the order given (the order matters to the hash test). */
async function makeTree(root: string, spec: Spec): Promise<void> {
  for (const [path, what] of Object.entries(spec)) {
    const full = join(root, path);
    await mkdir(dirname(full), { recursive: true });
    if (typeof what === 'string' || Buffer.isBuffer(what)) await writeFile(full, what, { mode: 0o644 });
    else if ('exec' in what) await writeFile(full, what.exec, { mode: 0o755 });
    else if ('link' in what) await symlink(what.link, full);
    else await mkdir(full, { recursive: true });
  }
}

/** path → what a checkout must reproduce: kind, exec bit, bytes or link target. */
async function listing(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  async function visit(dir: string): Promise<void> {
    for (const name of await readdir(dir)) {
      const full = join(dir, name);
      const rel = relative(root, full);
      const st = await lstat(full);
      if (st.isSymbolicLink()) out[rel] = `link ${await readlink(full)}`;
      else if (st.isDirectory()) {
        out[rel] = 'dir';
        await visit(full);
      } else {
        const bytes = await readFile(full);
        out[rel] = `file ${st.mode & 0o100 ? 'x' : '-'} ${bytes.length} ${bytes.toString('base64')}`;
      }
    }
  }
  await visit(root);
  return out;
}

/** Every path under `dir`, for checking that nothing was written where it should not be. */
async function allPaths(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { recursive: true })) out.push(String(e));
  return out.sort();
}

function archive(entries: [TarHeader, (string | Buffer)?][]): Uint8Array {
  const parts: Buffer[] = [];
  for (const [h, content] of entries) {
    const body = Buffer.from(content ?? '');
    parts.push(encodeHeader({ ...h, size: body.length }), body, padding(body.length));
  }
  parts.push(END_OF_ARCHIVE);
  return gzipSync(Buffer.concat(parts));
}

const ANY_HASH = 'a'.repeat(64);

/** Recomputes a header block's checksum after a test edits it. */
function fixChecksum(h: Buffer): void {
  let sum = 8 * 0x20;
  for (let i = 0; i < 512; i++) if (i < 148 || i >= 156) sum += h[i];
  h.write(`${sum.toString(8).padStart(6, '0')}\u0000 `, 148, 'latin1');
}

describe('packWorkingDir', () => {
  it('gives the same hash for the same content whatever the times, order and other mode bits', async () => {
    const a = await freshDir('same-a');
    const b = await freshDir('same-b');
    const spec: Spec = {
      'src/main.py': 'print("hi")\n',
      'src/util/helpers.py': 'def f(): pass\n',
      'run.sh': { exec: '#!/bin/sh\necho run\n' },
      'README.md': '# readme\n',
      'link.md': { link: 'README.md' },
      'empty/': { dir: true },
    };
    await makeTree(a, spec);
    await makeTree(b, Object.fromEntries(Object.entries(spec).reverse()));
    await utimes(join(b, 'src/main.py'), new Date(2001, 1, 1), new Date(2001, 1, 1));
    await utimes(join(b, 'src'), new Date(2011, 1, 1), new Date(2011, 1, 1));
    await chmod(join(b, 'README.md'), 0o600);

    const pa = await packWorkingDir(a);
    const pb = await packWorkingDir(b);
    expect(pa.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(pb.hash).toBe(pa.hash);
    // No times or owners go into the archive either, so it is the same byte for byte.
    expect(Buffer.from(pb.bytes).equals(Buffer.from(pa.bytes))).toBe(true);
    expect(pa.files).toBe(5);
    expect(pa.sizeBytes).toBe(12 + 14 + 19 + 9);

    await chmod(join(b, 'run.sh'), 0o644);
    const noExec = (await packWorkingDir(b)).hash;
    await chmod(join(b, 'run.sh'), 0o755);
    await writeFile(join(b, 'README.md'), '# readme!\n');
    const edited = (await packWorkingDir(b)).hash;
    await writeFile(join(b, 'README.md'), '# readme\n');
    await rm(join(b, 'link.md'));
    await symlink('src/main.py', join(b, 'link.md'));
    const relinked = (await packWorkingDir(b)).hash;
    expect(new Set([pa.hash, noExec, edited, relinked]).size).toBe(4);
  });

  it('leaves out the default excludes, the .clawrayignore patterns and the given excludes', async () => {
    const dir = await freshDir('excludes');
    await makeTree(dir, {
      '.git/HEAD': 'ref: refs/heads/main\n',
      'node_modules/x/index.js': 'x',
      'sub/node_modules/y.js': 'y',
      '__pycache__/a.cpython-312.pyc': 'pyc',
      'pkg/__pycache__/b.pyc': 'pyc',
      'pkg/mod.pyc': 'pyc',
      'pkg/mod.py': 'py',
      '.DS_Store': 'ds',
      'sub/.DS_Store': 'ds',
      '.clawrayignore': '# build outputs\n*.log\n!keep.log\n\n/build\nsecrets/\n',
      'a.log': 'log',
      'sub/b.log': 'log',
      'keep.log': 'kept',
      'build/out.js': 'out',
      'src/build/kept.js': 'kept: the pattern is anchored at the root',
      'secrets/key': 'k',
      'sub/secrets': 'kept: a file, and the pattern is for directories',
      'x.tmp': 'tmp',
      'data/raw/big': 'raw',
      'data/clean': 'clean',
    });
    const packed = await packWorkingDir(dir, { excludes: ['*.tmp', 'data/raw/'] });
    const out = await unpackWorkingDir(packed, await freshDir('excludes-cache'));
    expect(Object.keys(await listing(out)).sort()).toEqual(
      [
        '.clawrayignore',
        'data',
        'data/clean',
        'keep.log',
        'pkg',
        'pkg/mod.py',
        'src',
        'src/build',
        'src/build/kept.js',
        'sub',
        'sub/secrets',
      ].sort(),
    );

    // A negation in .clawrayignore can take back a default exclude.
    await writeFile(join(dir, '.clawrayignore'), '!node_modules/\n');
    const withModules = await unpackWorkingDir(await packWorkingDir(dir), await freshDir('excludes-cache'));
    expect(existsSync(join(withModules, 'node_modules/x/index.js'))).toBe(true);
    expect(existsSync(join(withModules, 'sub/node_modules/y.js'))).toBe(true);
  });

  it('stops at the size limit and names the directory, the limit and the largest contributors', async () => {
    const dir = await freshDir('too-large');
    await makeTree(dir, {
      'data/train.bin': randomBytes(400 * 1024),
      'data/eval.bin': randomBytes(100 * 1024),
      'weights.bin': randomBytes(200 * 1024),
      'src/main.ts': 'export {};\n',
    });
    const err = await packWorkingDir(dir, { maxBytes: 128 * 1024 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PackageTooLargeError);
    expect(err).toBeInstanceOf(ConfigError);
    const e = err as PackageTooLargeError;
    expect(e.message).toContain(dir);
    expect(e.message).toContain('passed the limit of 128 KiB (compressed)');
    expect(e.message).toContain('4 files come to 700 KiB uncompressed');
    expect(e.message).toMatch(/data\/\s+500 KiB/);
    expect(e.message).toMatch(/data\/train\.bin\s+400 KiB/);
    expect(e.message).toMatch(/weights\.bin\s+200 KiB/);
    expect(e.message).not.toContain('src/');
    expect(e.message).toContain(join(dir, '.clawrayignore'));
    expect(e.message).toContain('excludes');
    expect(e.message).toContain('--set');
    expect(e.fields).toMatchObject({
      dir,
      limitBytes: 128 * 1024,
      files: 4,
      largest: 'data/train.bin',
    });

    const hinted = (await packWorkingDir(dir, {
      maxBytes: 1024,
      limitHint: '--set spec.workingDirMaxBytes=BYTES',
    }).catch((x: unknown) => x)) as Error;
    expect(hinted.message).toContain('--set spec.workingDirMaxBytes=BYTES');
    expect(DEFAULT_MAX_PACKAGE_BYTES).toBe(100 * 1024 * 1024);
    await expect(packWorkingDir(dir, { maxBytes: 0 })).rejects.toThrow(ConfigError);
  });

  it('refuses symlinks that lead outside the directory, naming them all', async () => {
    const dir = await freshDir('symlinks');
    await makeTree(dir, {
      'ok.txt': 'ok',
      'up/': { dir: true },
      'up/self': { link: '..' },
      'escape-rel': { link: '../elsewhere' },
      'escape-abs': { link: '/etc/passwd' },
      // Lexically inside, but `here` is a link to the root, so `here/..` is the root's parent.
      here: { link: '.' },
      chain: { link: 'here/..' },
    });
    const err = (await packWorkingDir(dir).catch((e: unknown) => e)) as ConfigError;
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toContain('chain -> here/..');
    expect(err.message).toContain('escape-abs -> /etc/passwd');
    expect(err.message).toContain('escape-rel -> ../elsewhere');
    expect(err.message).not.toContain('up/self');
    expect(err.fields).toMatchObject({ dir, count: 3 });
    // Leaving them out is the way past it.
    await expect(packWorkingDir(dir, { excludes: ['escape-*', 'chain'] })).resolves.toMatchObject({
      files: 3,
    });
  });

  it('refuses a path that is not a directory', async () => {
    const dir = await freshDir('not-dir');
    await writeFile(join(dir, 'f'), 'x');
    await expect(packWorkingDir(join(dir, 'f'))).rejects.toThrow(/is not a directory/);
    await expect(packWorkingDir(join(dir, 'missing'))).rejects.toThrow(ConfigError);
  });
});

describe('unpackWorkingDir', () => {
  it('reproduces the tree: bytes, executable bits, symlinks, empty and long paths', async () => {
    const src = await freshDir('roundtrip');
    const longPath = `deep/${'x'.repeat(70)}/${'y'.repeat(70)}.txt`;
    await makeTree(src, {
      'README.md': '# hello\n',
      'bin/run.sh': { exec: '#!/bin/sh\nexit 0\n' },
      'bin/root': { link: '..' },
      'data/blob.bin': randomBytes(300_000),
      'data/block.bin': randomBytes(512),
      'empty.txt': '',
      'empty-dir/': { dir: true },
      [longPath]: 'long',
      'données/naïve.txt': 'unicode',
      'readme-link': { link: 'README.md' },
      'data-link': { link: 'data' },
      'not-built-yet': { link: 'build/out' },
      [`${'z'.repeat(90)}/link`]: { link: `../${longPath}` },
    });
    // An absolute link into the tree is kept, relative, since the tree lands elsewhere.
    await symlink(join(src, 'README.md'), join(src, 'abs-link'));

    const packed = await packWorkingDir(src);
    const cache = await freshDir('roundtrip-cache');
    const out = await unpackWorkingDir(packed, cache);
    expect(out).toBe(join(cache, packed.hash));
    const expected = await listing(src);
    expected['abs-link'] = 'link README.md';
    expect(await listing(out)).toEqual(expected);
    expect(packed.files).toBe(13);
    expect(packed.sizeBytes).toBe(8 + 17 + 300_000 + 512 + 4 + 7);

    // Calls in one process share one unpack.
    const other = await freshDir('roundtrip-cache');
    const both = await Promise.all([unpackWorkingDir(packed, other), unpackWorkingDir(packed, other)]);
    expect(both).toEqual([join(other, packed.hash), join(other, packed.hash)]);

    // Cached: the second call finds the directory and returns it.
    await writeFile(join(out, 'marker'), 'left by a job');
    expect(await unpackWorkingDir(packed, cache)).toBe(out);
    expect(existsSync(join(out, 'marker'))).toBe(true);
    expect((await readdir(cache)).sort()).toEqual([packed.hash]);
  });

  it('is a plain .tar.gz that system tar reads, and reads what system tar writes', async () => {
    const src = await freshDir('systar');
    await makeTree(src, {
      'a.txt': 'a',
      'bin/x': { exec: 'x' },
      l: { link: 'a.txt' },
      [`${'p'.repeat(120)}.txt`]: 'long name',
    });
    const packed = await packWorkingDir(src);
    const file = join(await freshDir('systar-files'), 'pkg.tar.gz');
    await writeFile(file, packed.bytes);
    const names = execFileSync('tar', ['-tzf', file], { encoding: 'utf8' }).trim().split('\n').sort();
    expect(names).toEqual(['a.txt', 'bin/', 'bin/x', 'l', `${'p'.repeat(120)}.txt`]);
    const extracted = await freshDir('systar-out');
    execFileSync('tar', ['-xzf', file, '-C', extracted]);
    expect(await hashTree(extracted)).toBe(packed.hash);

    const short = await freshDir('systar-short');
    await makeTree(short, { 'a.txt': 'a', 'bin/x': { exec: 'x' }, l: { link: 'a.txt' } });
    const theirs = join(dirname(file), 'theirs.tar.gz');
    execFileSync('tar', ['-czf', theirs, '-C', short, '.']);
    const hash = (await packWorkingDir(short)).hash;
    const out = await unpackWorkingDir(
      { hash, bytes: await readFile(theirs) },
      await freshDir('systar-cache'),
    );
    expect(await listing(out)).toEqual(await listing(short));
  });

  it('refuses a package whose content does not match its hash, and leaves nothing behind', async () => {
    const a = await freshDir('tamper-a');
    const b = await freshDir('tamper-b');
    await makeTree(a, { 'f.txt': 'original' });
    await makeTree(b, { 'f.txt': 'altered!' });
    const pa = await packWorkingDir(a);
    const pb = await packWorkingDir(b);
    const cache = await freshDir('tamper-cache');

    const err = (await unpackWorkingDir({ hash: pa.hash, bytes: pb.bytes }, cache).catch(
      (e: unknown) => e,
    )) as ConfigError;
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toContain(pa.hash);
    expect(err.message).toContain(pb.hash);
    expect(err.fields).toMatchObject({ hash: pa.hash, reason: 'hash-mismatch', actualHash: pb.hash });

    const flipped = Buffer.from(pa.bytes);
    flipped[flipped.length - 12] ^= 0xff;
    await expect(unpackWorkingDir({ hash: pa.hash, bytes: flipped }, cache)).rejects.toMatchObject({
      fields: { reason: 'malformed' },
    });
    await expect(
      unpackWorkingDir({ hash: pa.hash, bytes: new Uint8Array([1, 2, 3]) }, cache),
    ).rejects.toThrow(ConfigError);
    await expect(unpackWorkingDir({ hash: '../../etc', bytes: pa.bytes }, cache)).rejects.toThrow(
      /not a sha256/,
    );
    expect(await allPaths(cache)).toEqual([]);
    await expect(unpackWorkingDir(pa, cache)).resolves.toBe(join(cache, pa.hash));
  });

  it('refuses hostile archives and writes nothing outside the cache', async () => {
    const root = await freshDir('hostile');
    const cache = join(root, 'cache');
    const absolute = join(root, 'absolute.txt');
    const file = (path: string): TarHeader => ({ path, kind: 'file', mode: 0o644, size: 0 });
    const link = (path: string, linkTarget: string): TarHeader => ({
      path,
      kind: 'symlink',
      mode: 0o777,
      size: 0,
      linkTarget,
    });
    const hardLink = encodeHeader(file('h'));
    hardLink.write('1', 156, 'latin1');
    fixChecksum(hardLink);
    const cases: [string, Uint8Array, RegExp][] = [
      [
        'dot-dot',
        archive([
          [file('ok.txt'), 'ok'],
          [file('../escaped.txt'), 'x'],
        ]),
        /"\.\.\/escaped\.txt" has .* `\.\.`/,
      ],
      ['inner dot-dot', archive([[file('a/../../escaped.txt'), 'x']]), /has .* `\.\.` component/],
      ['absolute', archive([[file(absolute), 'x']]), /is an absolute path/],
      [
        'link out',
        archive([[link('out', '..')], [file('out/escaped.txt'), 'x']]),
        /"out" is a symlink that points outside/,
      ],
      ['absolute link', archive([[link('out', root)]]), /"out" is a symlink that points outside/],
      [
        'write through a link',
        archive([
          [link('in', 'sub')],
          [{ path: 'sub/', kind: 'dir', mode: 0o755, size: 0 }],
          [file('in/x'), 'x'],
        ]),
        /"in\/x" would be written through in/,
      ],
      // Each link alone looks inside; resolved, `chain` is the cache's parent.
      [
        'link chain',
        archive([[link('here', '.')], [link('chain', 'here/..')]]),
        /"chain" is a symlink that resolves outside/,
      ],
      [
        'duplicate',
        archive([
          [file('f'), 'one'],
          [file('f'), 'two'],
        ]),
        /"f" appears twice/,
      ],
      ['hard link', gzipSync(Buffer.concat([hardLink, END_OF_ARCHIVE])), /has type "1"/],
    ];
    for (const [what, bytes, message] of cases) {
      const err = (await unpackWorkingDir({ hash: ANY_HASH, bytes }, cache).catch(
        (e: unknown) => e,
      )) as ConfigError;
      expect(err, what).toBeInstanceOf(ConfigError);
      expect(err.message, what).toMatch(message);
      expect(err.fields.reason, what).toMatch(/^(unsafe-entry|unsafe-symlink|malformed)$/);
      expect(await allPaths(root), what).toEqual(['cache']);
    }
    expect(existsSync(absolute)).toBe(false);
  });

  it('clears temporary directories that a crashed unpack left long ago', async () => {
    const src = await freshDir('stale');
    await makeTree(src, { 'a.txt': 'a' });
    const packed = await packWorkingDir(src);
    const cache = await freshDir('stale-cache');
    await mkdir(join(cache, '.unpack-old/sub'), { recursive: true });
    await mkdir(join(cache, '.unpack-recent'));
    const longAgo = new Date(Date.now() - 24 * 3600 * 1000);
    await utimes(join(cache, '.unpack-old'), longAgo, longAgo);
    await unpackWorkingDir(packed, cache);
    expect((await readdir(cache)).sort()).toEqual(['.unpack-recent', packed.hash]);
  });

  it('refuses an archive that expands past the unpacked limit', async () => {
    const bomb = archive([
      [{ path: 'zeros', kind: 'file', mode: 0o644, size: 0 }, Buffer.alloc(1024 * 1024)],
    ]);
    const cache = await freshDir('bomb');
    await expect(
      unpackWorkingDir({ hash: ANY_HASH, bytes: bomb }, cache, { maxUnpackedBytes: 64 * 1024 }),
    ).rejects.toMatchObject({
      fields: { reason: 'too-large' },
    });
    expect(await allPaths(cache)).toEqual([]);
  });

  it('ends with one complete directory when two processes unpack the same hash at once', async () => {
    const src = await freshDir('race');
    const spec: Spec = {};
    for (let i = 0; i < 200; i++) spec[`d${i % 20}/f${i}.txt`] = `file ${i}\n`.repeat(50);
    spec['big.bin'] = randomBytes(2 * 1024 * 1024);
    await makeTree(src, spec);
    const packed = await packWorkingDir(src);
    const work = await freshDir('race-work');
    const pkg = join(work, 'pkg.tar.gz');
    await writeFile(pkg, packed.bytes);
    const script = await buildChildScript(work);

    for (let round = 0; round < 2; round++) {
      const cache = join(work, `cache-${round}`);
      const children = [0, 1].map(() => startChild(script, [pkg, packed.hash, cache]));
      await Promise.all(children.map((c) => c.ready));
      for (const c of children) c.go();
      const dirs = await Promise.all(children.map((c) => c.result));
      expect(dirs).toEqual([join(cache, packed.hash), join(cache, packed.hash)]);
      expect(await readdir(cache)).toEqual([packed.hash]);
      expect(await hashTree(dirs[0])).toBe(packed.hash);
    }
  });

  it('keeps its cache under the clawray home', () => {
    const before = process.env.CLAWRAY_HOME;
    process.env.CLAWRAY_HOME = '/srv/clawray-home';
    try {
      expect(packageCacheRoot()).toBe('/srv/clawray-home/packages');
    } finally {
      if (before === undefined) delete process.env.CLAWRAY_HOME;
      else process.env.CLAWRAY_HOME = before;
    }
  });
});

/**
 * Child processes need this module as JavaScript. Transpiling it (and what it imports) here keeps
 * the test independent of whether, and how recently, dist/ was built.
 */
async function buildChildScript(work: string): Promise<string> {
  const repo = join(dirname(fileURLToPath(import.meta.url)), '../..');
  const out = join(work, 'js');
  const seen = new Set<string>();
  const pending = ['jobs/package/working-dir.ts'];
  while (pending.length > 0) {
    const rel = pending.pop()!;
    if (seen.has(rel)) continue;
    seen.add(rel);
    const source = await readFile(join(repo, rel), 'utf8');
    for (const m of source.matchAll(/from '(\.{1,2}\/[^']+)\.js'/g)) {
      pending.push(join(dirname(rel), `${m[1]}.ts`));
    }
    const js = ts.transpileModule(source, {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    }).outputText;
    await mkdir(dirname(join(out, rel)), { recursive: true });
    await writeFile(join(out, rel.replace(/\.ts$/, '.js')), js);
  }
  await writeFile(join(out, 'package.json'), '{"type":"module"}\n');
  const script = join(out, 'unpack-child.js');
  await writeFile(
    script,
    `import { readFileSync } from 'node:fs';
import { unpackWorkingDir } from './jobs/package/working-dir.js';
const [pkg, hash, cache] = process.argv.slice(2);
const bytes = readFileSync(pkg);
process.stdout.write('ready\\n');
process.stdin.once('data', async () => {
  const dir = await unpackWorkingDir({ hash, bytes }, cache);
  process.stdout.write(JSON.stringify({ dir }) + '\\n');
  process.exit(0);
});
`,
  );
  return script;
}

/** A child that loads the module, says `ready`, then unpacks when told to go (so both overlap). */
function startChild(script: string, args: string[]) {
  const child = spawn(process.execPath, [script, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr += d;
  });
  const ready = new Promise<void>((res, rej) => {
    child.stdout.on('data', (d: Buffer) => {
      stdout += d;
      if (stdout.startsWith('ready\n')) res();
    });
    child.on('exit', () => rej(new Error(`child exited before it was ready: ${stderr}`)));
  });
  const result = new Promise<string>((res, rej) => {
    child.on('exit', (code) => {
      const line = stdout.split('\n').find((l) => l.startsWith('{'));
      if (code === 0 && line) res((JSON.parse(line) as { dir: string }).dir);
      else rej(new Error(`child exited with ${code}: ${stderr}`));
    });
  });
  ready.catch(() => {});
  return { ready, result, go: () => child.stdin.end('go\n') };
}
