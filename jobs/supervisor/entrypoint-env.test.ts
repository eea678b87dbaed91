import { spawnSync } from 'node:child_process';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../common/package-root.js';
import { clawrayBinDir, clawrayImportOption, entrypointEnv, linkClawrayPackage } from './entrypoint-env.js';

describe("what a job's entrypoint finds around it", () => {
  const dir = mkdtempSync(join(tmpdir(), 'clawray-entrypoint-env-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('puts a clawray shim of this install, written once, first on PATH', () => {
    const bin = clawrayBinDir(dir);
    expect(clawrayBinDir(dir)).toBe(bin);
    expect(readdirSync(bin)).toEqual(['clawray']);
    expect(statSync(join(bin, 'clawray')).mode & 0o111).toBe(0o111);
    const run = spawnSync(join(bin, 'clawray'), ['--help'], { encoding: 'utf8' });
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('Usage: clawray');
  });

  it("gives the driver the job's variables, not the supervisor actor's", () => {
    const env = entrypointEnv(
      {
        PATH: '/usr/bin',
        CLAWRAY_ACTOR_ID: 'actor_x',
        CLAWRAY_NODE_ID: 'n',
        CUDA_VISIBLE_DEVICES: '',
        HOME: '/h',
      },
      {
        address: '127.0.0.1:1',
        token: 't',
        submissionId: 'job-1',
        attempt: 2,
        binDir: '/b',
        store: { url: 'redis://r:6379', cluster: 'c1' },
      },
    );
    expect(env).toEqual({
      PATH: '/b:/usr/bin',
      HOME: '/h',
      CLAWRAY_ADDRESS: '127.0.0.1:1',
      CLAWRAY_TOKEN: 't',
      CLAWRAY_JOB_ID: 'job-1',
      CLAWRAY_JOB_ATTEMPT: '2',
      CLAWRAY_STORE_URL: 'redis://r:6379',
      CLAWRAY_CLUSTER_NAME: 'c1',
    });
    const memory = entrypointEnv(
      {},
      { address: 'a', token: 't', submissionId: 'j', attempt: 1, binDir: '/b' },
    );
    expect(memory.CLAWRAY_STORE_URL).toBeUndefined();
    expect(memory.PATH).toBe('/b');
  });

  it('links node_modules/clawray of a working dir to this install, once', () => {
    const wd = join(dir, 'wd');
    linkClawrayPackage(wd);
    linkClawrayPackage(wd);
    expect(readlinkSync(join(wd, 'node_modules', 'clawray'))).toBe(packageRoot());
    expect(readdirSync(join(wd, 'node_modules'))).toEqual(['clawray']);
  });

  it("replaces a link another install left (dangling or elsewhere), never the user's own directory", () => {
    const wd = join(dir, 'shared');
    mkdirSync(join(wd, 'node_modules'), { recursive: true });
    const link = join(wd, 'node_modules', 'clawray');
    symlinkSync(join(dir, 'a-clone-since-deleted'), link);
    linkClawrayPackage(wd);
    expect(readlinkSync(link)).toBe(packageRoot());
    rmSync(link);
    symlinkSync(dir, link);
    linkClawrayPackage(wd);
    expect(readlinkSync(link)).toBe(packageRoot());
    rmSync(link);
    mkdirSync(link);
    linkClawrayPackage(wd);
    expect(lstatSync(link).isDirectory()).toBe(true);
    expect(readdirSync(join(wd, 'node_modules'))).toEqual(['clawray']);
  });

  it("lets a script with no node_modules above it import clawray, the user's NODE_OPTIONS kept", () => {
    const elsewhere = join(dir, 'no-modules');
    mkdirSync(elsewhere);
    const script = join(elsewhere, 'driver.mjs');
    writeFileSync(
      script,
      "import { connect } from 'clawray';\n" +
        "const pkg = await import('clawray/package.json', { with: { type: 'json' } });\n" +
        "console.log(typeof connect, pkg.default.name, process.env.NODE_OPTIONS.split(' ').length);\n",
    );
    const options = { address: 'a', token: 't', submissionId: 'j', attempt: 1, binDir: '/b' };
    const run = (env: NodeJS.ProcessEnv) =>
      spawnSync(process.execPath, [script], { cwd: elsewhere, env, encoding: 'utf8' });

    const without = run(entrypointEnv({ PATH: process.env.PATH }, options));
    expect(without.stderr).toContain('ERR_MODULE_NOT_FOUND');

    const base = { PATH: process.env.PATH, NODE_OPTIONS: '--max-old-space-size=256' };
    const env = entrypointEnv(base, { ...options, nodeOption: clawrayImportOption() });
    expect(env.NODE_OPTIONS).toBe(`--max-old-space-size=256 ${clawrayImportOption()}`);
    // Passed along again (a job's entrypoint is itself a job's environment): not added twice.
    expect(entrypointEnv(env, { ...options, nodeOption: clawrayImportOption() }).NODE_OPTIONS).toBe(
      env.NODE_OPTIONS,
    );
    const ok = run(env);
    expect(ok.stderr).toBe('');
    expect(ok.stdout.trim()).toMatch(/^function clawray 2$/);
  });
});
