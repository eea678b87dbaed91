/**
 * `clawray sandbox exec`: one command in the agent sandbox (bubblewrap), for trying it out by
 * hand. Its workspace is a fresh directory of its own unless `--workspace` names one; a
 * directory of the user's is never chowned to the sandbox user (only with --chown-workspace).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { constants as osConstants, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { runSandboxed } from '../actors/envs/sandbox/sandbox.js';
import { SANDBOX_DEFAULTS as D } from '../actors/envs/sandbox/sandbox-limits.js';
import { ConfigError } from '../common/errors.js';
import { int } from './cli-parse.js';

export const EXIT_TIMEOUT = 124;

export function registerSandboxCommand(program: Command): void {
  const sandbox = program.command('sandbox').description('the sandbox agent commands run in (bubblewrap)');
  sandbox
    .command('exec')
    .description(
      'run one command in a fresh sandbox with a workspace at /workspace; exits with its exit code',
    )
    .argument('<command...>', 'the command and its arguments (after --)')
    .option(
      '--workspace <dir>',
      'directory mounted read-write at /workspace (default: a fresh empty one, removed afterwards)',
    )
    .option(
      '--chown-workspace',
      'as root: chown --workspace DIR recursively to the sandbox user so it can write everywhere (default: leave it as it is)',
    )
    .option('--keep-workspace', 'keep the fresh workspace afterwards and print its path')
    .option('--network', 'share the host network (default: none, only a private loopback)')
    .option(
      '--allow-host <pattern>',
      'without --network: reach this host (example.com, *.example.com, host:port) through a proxy; repeatable',
      (value: string, previous: string[]) => [...previous, value],
      [] as string[],
    )
    .option(
      '--timeout-ms <n>',
      'wall-clock limit; exit code 124 when reached',
      int('--timeout-ms'),
      D.timeoutMs,
    )
    .option(
      '--memory-mb <n>',
      `address-space limit per process, RLIMIT_AS (default ${D.memoryMb})`,
      int('--memory-mb'),
    )
    .option(
      '--cpu-seconds <n>',
      'CPU-time limit per process, RLIMIT_CPU (default: none)',
      int('--cpu-seconds'),
    )
    .option(
      '--max-processes <n>',
      `process limit of the sandbox user, RLIMIT_NPROC (default ${D.maxProcesses})`,
      int('--max-processes'),
    )
    .option(
      '--max-file-mb <n>',
      `largest file written, RLIMIT_FSIZE (default ${D.maxFileMb})`,
      int('--max-file-mb'),
    )
    .option(
      '--tmp-size-mb <n>',
      `size of the private /tmp tmpfs (default ${D.tmpSizeMb})`,
      int('--tmp-size-mb'),
    )
    .option(
      '--tmp-max-files <n>',
      `files the private /tmp may hold, as root (default ${D.tmpMaxFiles})`,
      int('--tmp-max-files'),
    )
    .option(
      '--workspace-max-mb <n>',
      `disk the workspace may use; past it the command is killed (default ${D.workspaceMaxMb})`,
      int('--workspace-max-mb'),
    )
    .option(
      '--workspace-max-files <n>',
      `files the workspace may hold; past it the command is killed (default ${D.workspaceMaxFiles})`,
      int('--workspace-max-files'),
    )
    .option(
      '--no-seccomp',
      'without the seccomp filter (user namespaces, mount, ptrace, bpf… then reach the kernel): only for trusted commands that need them',
    )
    .option('--max-output-bytes <n>', 'stdout + stderr kept before the run is cut', int('--max-output-bytes'))
    .action(async (command: string[], o) => {
      const fresh = o.workspace === undefined;
      const workspace = fresh ? await mkdtemp(join(tmpdir(), 'clawray-sandbox-')) : (o.workspace as string);
      try {
        await execIn(command, workspace, fresh, o);
      } finally {
        if (fresh && o.keepWorkspace)
          process.stderr.write(`clawray: the workspace is kept at ${workspace}\n`);
        else if (fresh) await rm(workspace, { recursive: true, force: true });
      }
    });
}

interface ExecOptions {
  network?: boolean;
  allowHost: string[];
  timeoutMs: number;
  memoryMb?: number;
  cpuSeconds?: number;
  maxProcesses?: number;
  maxFileMb?: number;
  tmpSizeMb?: number;
  tmpMaxFiles?: number;
  workspaceMaxMb?: number;
  workspaceMaxFiles?: number;
  seccomp: boolean;
  maxOutputBytes?: number;
  chownWorkspace?: boolean;
}

/** The flag that sets each limit a run can go past, for the message. */
const LIMIT_FLAGS = {
  workspaceMaxMb: '--workspace-max-mb',
  workspaceMaxFiles: '--workspace-max-files',
} as const;

/** A ConfigError of runSandboxed names the option (memoryMb); here the flag (--memory-mb) is what was typed. */
function flagOf(field: string): string {
  return `--${field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

async function execIn(command: string[], workspace: string, fresh: boolean, o: ExecOptions): Promise<void> {
  const result = await runSandboxed({
    command,
    workspace,
    // A directory this command made is the sandbox's; one of the user's keeps its owner.
    workspaceAccess: fresh || o.chownWorkspace ? 'chown' : 'keep',
    network: Boolean(o.network),
    allowHosts: o.allowHost,
    timeoutMs: o.timeoutMs,
    memoryMb: o.memoryMb,
    cpuSeconds: o.cpuSeconds,
    maxProcesses: o.maxProcesses,
    maxFileMb: o.maxFileMb,
    tmpSizeMb: o.tmpSizeMb,
    tmpMaxFiles: o.tmpMaxFiles,
    workspaceMaxMb: o.workspaceMaxMb,
    workspaceMaxFiles: o.workspaceMaxFiles,
    seccomp: o.seccomp,
    maxOutputBytes: o.maxOutputBytes,
    onOutput: (stream, chunk) => (stream === 'stdout' ? process.stdout : process.stderr).write(chunk),
  }).catch((err: unknown) => {
    if (!(err instanceof ConfigError) || typeof err.fields.field !== 'string') throw err;
    const field = err.fields.field;
    throw new ConfigError(err.message.replace(`sandbox: ${field}`, `sandbox exec ${flagOf(field)}`), {
      fields: err.fields,
      cause: err,
    });
  });
  if (result.truncated) process.stderr.write('clawray: output limit reached; the command was killed\n');
  if (result.limitExceeded) {
    const { bytes, files } = result.workspaceUsage;
    process.stderr.write(
      `clawray: the workspace went past ${LIMIT_FLAGS[result.limitExceeded]} (it holds ${files} files, ${Math.ceil(bytes / 1024 / 1024)} MiB); the command ${result.signal === 'SIGKILL' ? 'was killed' : 'failed'}\n`,
    );
    if (result.exitCode === null && result.signal === null) {
      process.exitCode = 1;
      return;
    }
  }
  if (result.timedOut) {
    process.stderr.write(`clawray: timed out after ${o.timeoutMs} ms; the command was killed\n`);
    process.exitCode = EXIT_TIMEOUT;
    return;
  }
  if (result.exitCode !== null) process.exitCode = result.exitCode;
  else process.exitCode = 128 + (result.signal ? (osConstants.signals[result.signal] ?? 9) : 9);
}
