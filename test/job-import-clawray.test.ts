/**
 * Job drivers import clawray wherever they run: the README's `job submit --working-dir . --
 * node script.mjs` from a folder outside this repository with no node_modules, and a script
 * given by absolute path with no working dir at all, on the embedded cluster and on a
 * `clawray start --local` cluster named with --address. Real `clawray` CLI processes from dist.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { distEntry, packageRoot } from '../common/package-root.js';

const DRIVER =
  "import { connect } from 'clawray';\n" +
  'const cluster = await connect();\n' +
  "console.log('driver sees', (await cluster.status()).nodes.length, 'node(s)');\n" +
  'await cluster.close();\n';

/** `clawray ARGS` in `cwd` with a clean environment; resolves with its output once it exits. */
function clawray(
  args: string[],
  home: string,
  cwd: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [distEntry('cli/main'), ...args], {
      cwd,
      env: {
        ...process.env,
        CLAWRAY_HOME: home,
        CLAWRAY_ADDRESS: '',
        CLAWRAY_TOKEN: '',
        CLAWRAY_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('a job driver imports clawray from a folder outside the repository', () => {
  const home = mkdtempSync(join(tmpdir(), 'clawray-import-home-'));
  const project = mkdtempSync(join(tmpdir(), 'clawray-import-project-'));
  let start: ChildProcess | undefined;
  let startExited: Promise<unknown> | undefined;
  let headAddress = '';

  beforeAll(async () => {
    writeFileSync(join(project, 'script.mjs'), DRIVER);
    expect(project.startsWith(packageRoot())).toBe(false);
    expect(existsSync(join(project, 'node_modules'))).toBe(false);
  });

  afterAll(async () => {
    if (start && start.exitCode === null && start.signalCode === null) {
      start.kill('SIGTERM');
      await startExited;
    }
    rmSync(home, { recursive: true, force: true });
    rmSync(project, { recursive: true, force: true });
  });

  const expectRan = (r: { code: number | null; stdout: string; stderr: string }) => {
    expect(r.stderr).not.toContain('ERR_MODULE_NOT_FOUND');
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toMatch(/^driver sees 1 node\(s\)$/m);
    expect(r.stderr).toMatch(/SUCCEEDED/);
  };

  it('on the embedded cluster, with the working dir uploaded', async () => {
    const r = await clawray(
      ['job', 'submit', '--working-dir', '.', '--', 'node', 'script.mjs'],
      home,
      project,
    );
    expectRan(r);
    expect(r.stderr).toMatch(/starting a local cluster for this job/);
  });

  it('on the embedded cluster, with no working dir and the script by absolute path', async () => {
    const r = await clawray(['job', 'submit', '--', 'node', join(project, 'script.mjs')], home, project);
    expectRan(r);
    // Nothing was written into the user's folder to make it work.
    expect(existsSync(join(project, 'node_modules'))).toBe(false);
  });

  it('on a `clawray start --local` cluster named with --address, both ways', async () => {
    const child = spawn(
      process.execPath,
      [distEntry('cli/main'), 'start', '--local', '--workers', '1', '--port', '0'],
      {
        env: {
          ...process.env,
          CLAWRAY_HOME: home,
          CLAWRAY_ADDRESS: '',
          CLAWRAY_TOKEN: '',
          CLAWRAY_LOG_LEVEL: 'warn',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    start = child;
    startExited = new Promise((resolve) => child.once('exit', resolve));
    const lines: string[] = [];
    headAddress = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on('line', (line) => {
        lines.push(line);
        const m = /head on (\S+) with/.exec(line);
        if (m) resolve(m[1]);
      });
      createInterface({ input: child.stderr! }).on('line', (line) => lines.push(line));
      void startExited!.then(() => reject(new Error(`start exited:\n${lines.join('\n')}`)));
    });

    const withDir = await clawray(
      ['job', 'submit', '--address', headAddress, '--working-dir', '.', '--', 'node', 'script.mjs'],
      home,
      project,
    );
    expectRan(withDir);
    expect(withDir.stderr).not.toMatch(/starting a local cluster/);

    const byPath = await clawray(
      ['job', 'submit', '--address', headAddress, '--', 'node', join(project, 'script.mjs')],
      home,
      project,
    );
    expectRan(byPath);
  });
});
