/**
 * An episode's workspace: a host directory that every sandboxed command sees at /workspace. All
 * that touches it on the agent's behalf — setup, commands, reading and writing files, tests —
 * runs in the bubblewrap sandbox, so a path or symlink the agent planted is only ever resolved
 * inside the sandbox's view, never against the host's file system.
 *
 * Tests run on a snapshot: the workspace is copied (`cp -a`, links kept as links), the test files
 * are added under a fresh random hidden directory, the tests run there and the copy is deleted.
 * The agent never sees the tests, cannot plant files where they will go, and a run (or an
 * `evaluate()` mid-episode) leaves the agent's workspace as it was.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { promisify } from 'node:util';
import { runSandboxed, type SandboxResult } from '../sandbox/sandbox.js';
import type { TerminalTask } from './task.js';
import { scoreTestOutput, type TestReport } from './test-results.js';

const execFileP = promisify(execFile);

export const SANDBOX_ROOT = '/workspace';

/** bash runs the scripts and commands where it exists (terminal-bench's scripts are bash); else sh. */
export const SHELL = existsSync('/bin/bash') ? '/bin/bash' : '/bin/sh';

export interface SandboxLimits {
  /** RLIMIT_AS per process, MiB. */
  memoryMb: number;
  /** RLIMIT_NPROC of the sandbox uid. */
  maxProcesses: number;
  /** Largest file a command may write, MiB. */
  maxFileMb: number;
  /** Output kept per command before it is killed, bytes. */
  maxOutputBytes: number;
  /** The sandbox's other limits (sandbox-limits.ts); unset, its defaults hold. */
  tmpSizeMb?: number;
  tmpMaxFiles?: number;
  workspaceMaxMb?: number;
  workspaceMaxFiles?: number;
  seccomp?: boolean;
}

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = {
  memoryMb: 4096,
  maxProcesses: 256,
  maxFileMb: 256,
  maxOutputBytes: 256 * 1024,
};

const TEST_OUTPUT_BYTES = 4 * 1024 * 1024;

export interface TestRun {
  report: TestReport;
  exitCode: number | null;
  timedOut: boolean;
  durationMs: number;
  /** The end of the run's output, for debugging a task. */
  outputTail: string;
}

/** The absolute sandbox path of `path` (relative to /workspace) when it stays inside, lexically. */
export function sandboxPath(path: string): string | undefined {
  if (path.trim() === '' || path.includes('\0')) return undefined;
  const resolved = posix.resolve(SANDBOX_ROOT, path);
  return resolved === SANDBOX_ROOT || resolved.startsWith(`${SANDBOX_ROOT}/`) ? resolved : undefined;
}

// Both scripts resolve the path with every symlink followed, inside the sandbox, and refuse a
// result outside /workspace. Nothing else runs in the sandbox meanwhile, so nothing can swap a
// link between the check and the use.
const CONFINE = `case "$p" in ${SANDBOX_ROOT}|${SANDBOX_ROOT}/*) ;; *) echo "refused: $1 resolves to $p, outside ${SANDBOX_ROOT}" >&2; exit 3 ;; esac`;

const VIEW_SCRIPT = [
  'p=$(realpath -e -- "$1" 2>/dev/null) || { echo "no such file or directory: $1" >&2; exit 2; }',
  CONFINE,
  'if [ -d "$p" ]; then exec ls -la -- "$p"; fi',
  '[ -f "$p" ] || { echo "not a regular file: $1" >&2; exit 4; }',
  'wc -c < "$p" >&2',
  'exec head -c "$2" -- "$p"',
].join('\n');

const WRITE_SCRIPT = [
  'p=$(realpath -m -- "$1" 2>/dev/null) || { echo "bad path: $1" >&2; exit 2; }',
  CONFINE,
  '[ "$p" != "/workspace" ] || { echo "refused: $1 is the workspace itself" >&2; exit 3; }',
  '[ ! -d "$p" ] || { echo "is a directory: $1" >&2; exit 4; }',
  'mkdir -p -- "$(dirname -- "$p")" || exit 5',
  'cat > "$p" || exit 5',
  'wc -c < "$p"',
].join('\n');

export interface ViewResult {
  ok: boolean;
  /** The file's text (cut to the byte limit), a directory listing, or why it failed. */
  text: string;
  /** The file's size in bytes, when it is a file. */
  size?: number;
  directory?: boolean;
}

export class Workspace {
  private removed = false;

  private constructor(
    readonly dir: string,
    private readonly limits: SandboxLimits,
  ) {}

  /** A fresh empty workspace under `baseDir` (default: the OS temp dir). */
  static async create(
    limits: SandboxLimits = DEFAULT_SANDBOX_LIMITS,
    baseDir = tmpdir(),
  ): Promise<Workspace> {
    return new Workspace(await mkdtemp(join(baseDir, 'clawray-terminal-')), limits);
  }

  /** Runs `command` with the shell in the workspace (stdin empty). */
  async exec(command: string, timeoutMs: number): Promise<SandboxResult> {
    return this.sandbox(this.dir, [SHELL, '-c', command], timeoutMs);
  }

  /**
   * Runs a script that must not stay visible: written under a random hidden name, run, removed
   * before anyone else gets the workspace.
   */
  async runScript(script: string, timeoutMs: number): Promise<SandboxResult> {
    const name = `.clawray-script-${randomBytes(8).toString('hex')}.sh`;
    await writeFile(join(this.dir, name), script, { mode: 0o644 });
    try {
      return await this.sandbox(this.dir, [SHELL, `${SANDBOX_ROOT}/${name}`], timeoutMs);
    } finally {
      await rm(join(this.dir, name), { force: true });
    }
  }

  /** Reads a file (up to `maxBytes`) or lists a directory of the workspace. */
  async view(path: string, maxBytes: number, timeoutMs: number): Promise<ViewResult> {
    const target = sandboxPath(path);
    if (!target) return { ok: false, text: `refused: ${path} is outside ${SANDBOX_ROOT}` };
    const r = await this.sandbox(
      this.dir,
      ['/bin/sh', '-c', VIEW_SCRIPT, 'view', target, String(maxBytes)],
      timeoutMs,
    );
    if (r.exitCode !== 0) return { ok: false, text: failure(r, timeoutMs) };
    const size = Number.parseInt(r.stderr.trim(), 10);
    if (Number.isNaN(size)) return { ok: true, text: r.stdout, directory: true };
    return { ok: true, text: r.stdout, size };
  }

  /** Writes `content` to a file of the workspace, creating its directories. */
  async writeFile(path: string, content: string, timeoutMs: number): Promise<{ ok: boolean; text: string }> {
    const target = sandboxPath(path);
    if (!target) return { ok: false, text: `refused: ${path} is outside ${SANDBOX_ROOT}` };
    const r = await this.sandbox(this.dir, ['/bin/sh', '-c', WRITE_SCRIPT, 'write', target], timeoutMs, {
      stdin: content,
    });
    if (r.exitCode !== 0) return { ok: false, text: failure(r, timeoutMs) };
    return { ok: true, text: `wrote ${r.stdout.trim()} bytes to ${target}` };
  }

  /** Runs the task's tests on a snapshot of the workspace and scores their output. */
  async runTests(task: TerminalTask, timeoutMs: number): Promise<TestRun> {
    const snapshot = await mkdtemp(join(dirname(this.dir), 'clawray-terminal-tests-'));
    try {
      await execFileP('cp', ['-a', '--', `${this.dir}/.`, snapshot]);
      const hidden = `.clawray-tests-${randomBytes(8).toString('hex')}`;
      const testDir = join(snapshot, hidden, 'tests');
      await mkdir(testDir, { recursive: true });
      await writeFile(join(snapshot, hidden, 'run-tests.sh'), task.runTests, { mode: 0o755 });
      for (const [rel, content] of Object.entries(task.testFiles)) {
        const file = join(testDir, rel);
        if (!file.startsWith(`${testDir}/`)) throw new Error(`test file path ${rel} leaves tests/`);
        await mkdir(dirname(file), { recursive: true });
        await writeFile(file, content);
      }
      const r = await this.sandbox(snapshot, [SHELL, `${SANDBOX_ROOT}/${hidden}/run-tests.sh`], timeoutMs, {
        env: { TEST_DIR: `${SANDBOX_ROOT}/${hidden}/tests` },
        // A verbose test runner may print a lot; its result lines come last.
        maxOutputBytes: TEST_OUTPUT_BYTES,
      });
      const output = `${r.stdout}\n${r.stderr}`;
      return {
        report: scoreTestOutput(output, task.testNames),
        exitCode: r.exitCode,
        timedOut: r.timedOut,
        durationMs: r.durationMs,
        outputTail: output.trim().slice(-4000),
      };
    } finally {
      await rm(snapshot, { recursive: true, force: true });
    }
  }

  async remove(): Promise<void> {
    if (this.removed) return;
    this.removed = true;
    await rm(this.dir, { recursive: true, force: true });
  }

  private sandbox(
    workspace: string,
    command: string[],
    timeoutMs: number,
    extra: { stdin?: string; env?: Record<string, string>; maxOutputBytes?: number } = {},
  ): Promise<SandboxResult> {
    if (this.removed) throw new Error('terminal workspace: already removed');
    return runSandboxed({
      command,
      workspace,
      network: false,
      timeoutMs,
      memoryMb: this.limits.memoryMb,
      maxProcesses: this.limits.maxProcesses,
      maxFileMb: this.limits.maxFileMb,
      tmpSizeMb: this.limits.tmpSizeMb,
      tmpMaxFiles: this.limits.tmpMaxFiles,
      workspaceMaxMb: this.limits.workspaceMaxMb,
      workspaceMaxFiles: this.limits.workspaceMaxFiles,
      seccomp: this.limits.seccomp,
      maxOutputBytes: extra.maxOutputBytes ?? this.limits.maxOutputBytes,
      ...(extra.stdin === undefined ? {} : { stdin: extra.stdin }),
      ...(extra.env ? { env: extra.env } : {}),
    });
  }
}

function failure(r: SandboxResult, timeoutMs: number): string {
  if (r.timedOut) return `timed out after ${timeoutMs} ms`;
  return r.stderr.trim() || r.stdout.trim() || `failed with exit code ${r.exitCode ?? r.signal}`;
}
