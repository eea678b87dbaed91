/**
 * Commands in the sandbox: the agent's and the grader's alike run through `runSandboxed` with the
 * workspace at /workspace, no network, and the limits below.
 */
import { accessSync, constants } from 'node:fs';
import { runSandboxed, type SandboxResult } from '../sandbox/sandbox.js';
import { COMMIT_ENV } from './git.js';

export interface SandboxLimits {
  /** RLIMIT_AS of each process, in MiB (generous: V8 and the JVM reserve far more than they use). */
  memoryMb: number;
  /** RLIMIT_NPROC of the sandbox uid. */
  maxProcesses: number;
  /** Size of the private /tmp, in MiB. */
  tmpSizeMb: number;
  /** The sandbox's other limits (sandbox-limits.ts); unset, its defaults hold. */
  maxFileMb?: number;
  tmpMaxFiles?: number;
  workspaceMaxMb?: number;
  workspaceMaxFiles?: number;
  seccomp?: boolean;
}

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = { memoryMb: 8192, maxProcesses: 256, tmpSizeMb: 256 };

/**
 * What every sandboxed command sees besides the sandbox's own defaults: HOME in the private /tmp
 * and no byte-code files, so caches and dotfiles stay out of the repository (and of the diff);
 * unbuffered Python output (a killed run still shows what it printed); an identity so
 * `git commit` works.
 */
export const SANDBOX_ENV: Readonly<Record<string, string>> = {
  HOME: '/tmp',
  PYTHONDONTWRITEBYTECODE: '1',
  PYTHONUNBUFFERED: '1',
  PAGER: 'cat',
  GIT_PAGER: 'cat',
  ...COMMIT_ENV,
};

function hasBash(): boolean {
  try {
    accessSync('/bin/bash', constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The shell of the `bash` tool and of test commands: bash where the host has it (as /usr is shared). */
export const SHELL = hasBash() ? '/bin/bash' : '/bin/sh';

export interface ShellRun {
  workspace: string;
  timeoutMs: number;
  maxOutputBytes: number;
  limits: SandboxLimits;
  env?: Record<string, string>;
  stdin?: string;
}

/** Runs argv in the sandbox. */
export function sandboxed(argv: string[], run: ShellRun): Promise<SandboxResult> {
  return runSandboxed({
    command: argv,
    workspace: run.workspace,
    network: false,
    timeoutMs: run.timeoutMs,
    memoryMb: run.limits.memoryMb,
    maxProcesses: run.limits.maxProcesses,
    tmpSizeMb: run.limits.tmpSizeMb,
    maxFileMb: run.limits.maxFileMb,
    tmpMaxFiles: run.limits.tmpMaxFiles,
    workspaceMaxMb: run.limits.workspaceMaxMb,
    workspaceMaxFiles: run.limits.workspaceMaxFiles,
    seccomp: run.limits.seccomp,
    maxOutputBytes: run.maxOutputBytes,
    env: { ...SANDBOX_ENV, ...run.env },
    stdin: run.stdin,
  });
}

/**
 * Runs a shell command line as written (not rewritten or wrapped, so its line numbers and
 * syntax errors read as the author expects), with stderr merged into stdout in order.
 */
export function shell(command: string, run: ShellRun): Promise<SandboxResult> {
  return sandboxed([SHELL, '-c', 'exec 2>&1; exec "$0" -c "$1"', SHELL, command], run);
}
