/**
 * The sandbox's limits, safe by default for model-written code: every limit is on unless the
 * caller raises it, each has a bound, and a bad value is a ConfigError naming the field. Options
 * are compiled here once (defaults applied, ranges checked); runSandboxed trusts the result.
 *
 * What holds each limit (see sandbox.ts for the mechanics):
 *   maxProcesses       RLIMIT_NPROC of the sandbox uid (as root: uid 65534, shared by every
 *                      sandbox of that uid running at once; pass `uid` to isolate one)
 *   memoryMb           RLIMIT_AS of each process (address space: JVMs need -Xmx or more)
 *   maxFileMb          RLIMIT_FSIZE: a larger write fails (EFBIG / SIGXFSZ)
 *   cpuSeconds         RLIMIT_CPU, off unless set (the wall clock bounds a run anyway)
 *   tmpSizeMb          size of the private /tmp, a tmpfs (host memory)
 *   tmpMaxFiles        inodes of that tmpfs (as root; bwrap has no inode option for its own)
 *   workspaceMaxMb     disk used by the workspace (allocated blocks), measured during the run
 *   workspaceMaxFiles  files + directories of the workspace, likewise; past either, the run is
 *                      killed and fails
 *   seccomp            the syscall filter of seccomp.ts
 */
import { ConfigError } from '../../../common/errors.js';

export interface SandboxLimitOptions {
  /** Wall clock for the whole run, ms (default 30 000); the whole process tree is killed at it. */
  timeoutMs?: number;
  /** stdout + stderr kept (default 1 MiB); past it the output is cut and the run killed. */
  maxOutputBytes?: number;
  /** RLIMIT_CPU in seconds (SIGXCPU at the limit, SIGKILL a second later); default: none. */
  cpuSeconds?: number;
  /** RLIMIT_AS in MiB: the address space of each process (default 2048). */
  memoryMb?: number;
  /** RLIMIT_NPROC: processes of the sandbox uid, counted host-wide for that uid (default 256). */
  maxProcesses?: number;
  /** RLIMIT_FSIZE in MiB: the largest file the command may write (default 256). */
  maxFileMb?: number;
  /** Size of the private /tmp (tmpfs, in host memory), MiB (default 64). */
  tmpSizeMb?: number;
  /** Files and directories the private /tmp may hold (default 16 384; enforced when run as root). */
  tmpMaxFiles?: number;
  /** Disk the workspace may use, MiB (default 2048); checked while the command runs and after. */
  workspaceMaxMb?: number;
  /** Files and directories the workspace may hold (default 50 000); checked likewise. */
  workspaceMaxFiles?: number;
  /**
   * The seccomp filter (default true): user namespaces, mount, ptrace, bpf, kernel modules, … are
   * refused with EPERM. Turn it off only for trusted commands that need one of those (a debugger
   * under ptrace, a nested container runtime); the other limits stay.
   */
  seccomp?: boolean;
}

export type SandboxLimits = Required<Omit<SandboxLimitOptions, 'cpuSeconds'>> & { cpuSeconds?: number };

export const SANDBOX_DEFAULTS: Readonly<Omit<SandboxLimits, 'cpuSeconds'>> = {
  timeoutMs: 30_000,
  maxOutputBytes: 1024 * 1024,
  memoryMb: 2048,
  maxProcesses: 256,
  maxFileMb: 256,
  tmpSizeMb: 64,
  tmpMaxFiles: 16_384,
  workspaceMaxMb: 2048,
  workspaceMaxFiles: 50_000,
  seccomp: true,
};

const MIB_MAX = 16 * 1024 * 1024; // 16 TiB in MiB: past anything a machine has

/** [min, max, what the number counts], for the messages. */
const BOUNDS: Record<Exclude<keyof SandboxLimitOptions, 'seccomp'>, [number, number, string]> = {
  timeoutMs: [1, 7 * 24 * 3600 * 1000, 'milliseconds of wall clock, at most a week'],
  maxOutputBytes: [1, 1024 * 1024 * 1024, 'bytes of output kept, at most 1 GiB (it is held in memory)'],
  cpuSeconds: [1, 7 * 24 * 3600, 'CPU seconds, at most a week'],
  // Below 64 MiB not even a shell starts reliably (the loader maps its libraries).
  memoryMb: [64, MIB_MAX, 'MiB of address space per process'],
  maxProcesses: [1, 4_194_304, 'processes (the kernel pid limit)'],
  maxFileMb: [1, MIB_MAX, 'MiB per file'],
  tmpSizeMb: [1, MIB_MAX, 'MiB of tmpfs'],
  tmpMaxFiles: [16, 1_000_000_000, 'inodes of the /tmp tmpfs'],
  workspaceMaxMb: [1, MIB_MAX, 'MiB of disk'],
  workspaceMaxFiles: [1, 1_000_000_000, 'files and directories'],
};

/** The option names, for refusing unknown ones. */
export const LIMIT_FIELDS: readonly string[] = [...Object.keys(BOUNDS), 'seccomp'];

function wholeNumber(field: keyof typeof BOUNDS, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const [min, max, what] = BOUNDS[field];
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(
      `sandbox: ${field} must be a whole number from ${min} to ${max} (${what}), got ${String(value)}`,
      { fields: { field } },
    );
  }
  return value;
}

/** Defaults applied and every field checked; a bad one is a ConfigError naming it. */
export function compileSandboxLimits(options: SandboxLimitOptions): SandboxLimits {
  const d = SANDBOX_DEFAULTS;
  const seccomp = options.seccomp ?? d.seccomp;
  if (typeof seccomp !== 'boolean') {
    throw new ConfigError(`sandbox: seccomp must be true or false, got ${String(seccomp)}`, {
      fields: { field: 'seccomp' },
    });
  }
  const cpuSeconds = wholeNumber('cpuSeconds', options.cpuSeconds);
  return {
    timeoutMs: wholeNumber('timeoutMs', options.timeoutMs) ?? d.timeoutMs,
    maxOutputBytes: wholeNumber('maxOutputBytes', options.maxOutputBytes) ?? d.maxOutputBytes,
    ...(cpuSeconds === undefined ? {} : { cpuSeconds }),
    memoryMb: wholeNumber('memoryMb', options.memoryMb) ?? d.memoryMb,
    maxProcesses: wholeNumber('maxProcesses', options.maxProcesses) ?? d.maxProcesses,
    maxFileMb: wholeNumber('maxFileMb', options.maxFileMb) ?? d.maxFileMb,
    tmpSizeMb: wholeNumber('tmpSizeMb', options.tmpSizeMb) ?? d.tmpSizeMb,
    tmpMaxFiles: wholeNumber('tmpMaxFiles', options.tmpMaxFiles) ?? d.tmpMaxFiles,
    workspaceMaxMb: wholeNumber('workspaceMaxMb', options.workspaceMaxMb) ?? d.workspaceMaxMb,
    workspaceMaxFiles: wholeNumber('workspaceMaxFiles', options.workspaceMaxFiles) ?? d.workspaceMaxFiles,
    seccomp,
  };
}
