/**
 * The sandbox every agent command runs in: bubblewrap (`bwrap`) with fresh pid/ipc/uts/net/cgroup
 * namespaces, a read-only /usr (+ the /bin, /lib… links or binds), a generated /etc, a private
 * /proc, /dev and /tmp, and one read-write directory at /workspace. Nothing else of the host is
 * visible: not $HOME, not /root (the cluster token file ~/.clawray), not the repository, and no
 * host environment variable (the environment is built from scratch; CLAWRAY_TOKEN never leaks).
 *
 * Safe by default (sandbox-limits.ts has the limits, their defaults and bounds): every run gets
 * RLIMIT_NPROC, RLIMIT_AS and RLIMIT_FSIZE (applied by `prlimit` right before the command), a
 * bounded /tmp, a workspace disk and inode budget, and the seccomp filter of seccomp.ts (user
 * namespaces, mount, ptrace, bpf, kernel modules… refused with EPERM; bwrap `--seccomp 3`).
 *
 * Limits hold when the cluster runs as root: the command runs as an unprivileged uid (65534,
 * `nobody`, by default) in the host's own user namespace — bwrap runs privileged without a user
 * namespace, keeps only CAP_SETUID/CAP_SETGID for its child, and `setpriv` drops to the uid with no
 * capabilities left — so RLIMIT_NPROC is counted for that uid (root would be exempt) and a fork
 * bomb stops at `maxProcesses`. bwrap itself starts inside `unshare --mount` after a tmpfs with
 * `size=` and `nr_inodes=` is mounted there for /tmp (private to that namespace: the host never
 * sees it, and it is gone with the run). As a non-root user bwrap uses an unprivileged user
 * namespace instead (`--unshare-all`), the command runs as the caller's own uid (NPROC then counts
 * all of that user's processes) and /tmp is bwrap's own `--size` tmpfs (bytes bounded, not inodes).
 *
 * The workspace is a host directory that outlives the run, so no mount bounds it: it is measured
 * while the command runs and after (workspace-usage.ts); past its budget the run is killed and
 * fails, naming the limit.
 *
 * The wall-clock timeout, and output past `maxOutputBytes`, SIGKILL bwrap's process group;
 * bwrap's pid-1 inside the sandbox dies with it (`--die-with-parent`), and the kernel kills every
 * other process of the pid namespace, so no process of the sandbox outlives a run.
 *
 * Needs: bubblewrap ≥ 0.6 (`apt-get install bubblewrap`), util-linux (`setpriv`, `prlimit`,
 * `unshare`) and, as root, `mount`.
 */
import { spawn } from 'node:child_process';
import { accessSync, closeSync, constants, lstatSync, openSync, readlinkSync, statSync } from 'node:fs';
import { chmod, lchown, lstat, mkdir, mkdtemp, readdir, realpath, rm, writeFile } from 'node:fs/promises';
import { constants as osConstants, tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { ConfigError } from '../../../common/errors.js';
import { startEgressProxy } from './egress-proxy.js';
import {
  compileSandboxLimits,
  LIMIT_FIELDS,
  SANDBOX_DEFAULTS,
  type SandboxLimitOptions,
} from './sandbox-limits.js';
import { buildSeccompFilter, hostSeccompArch } from './seccomp.js';
import {
  measureWorkspace,
  overBudget,
  type WorkspaceBudget,
  type WorkspaceUsage,
} from './workspace-usage.js';

export const SANDBOX_UID = 65534;
export const SANDBOX_GID = 65534;
export const DEFAULT_TIMEOUT_MS = SANDBOX_DEFAULTS.timeoutMs;
export const DEFAULT_MAX_OUTPUT_BYTES = SANDBOX_DEFAULTS.maxOutputBytes;
export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface SandboxOptions extends SandboxLimitOptions {
  /** argv (run directly) or a string (run by `/bin/sh -c`). */
  command: string[] | string;
  /** Host directory mounted read-write at /workspace, the working directory. */
  workspace: string;
  /** Share the host's network (default false: a fresh network namespace with only loopback). */
  network?: boolean;
  /**
   * Hosts the command may reach through an HTTP(S) proxy while it has no network otherwise:
   * `example.com`, `*.example.com`, optionally `:port` (see egress-proxy.ts). Tools that honour
   * HTTP_PROXY / HTTPS_PROXY (pip, npm, git, curl) work; everything else stays offline.
   * Needs `network: false` and Node.js under /usr (it runs the in-sandbox forwarder).
   */
  allowHosts?: string[];
  /** The command's whole environment, on top of PATH/HOME/USER/LANG/TERM defaults. */
  env?: Record<string, string>;
  /** Written to the command's stdin, which is then closed (default: /dev/null). */
  stdin?: string | Uint8Array;
  /** uid/gid the command runs as when the caller is root (default 65534/65534). */
  uid?: number;
  gid?: number;
  /**
   * When the caller is root, how the sandbox uid gets to write the workspace: 'chown' (the
   * default; recursively, never following links) for a workspace made for the sandbox,
   * 'chmod' (its top directory made 0777), or 'keep' (left exactly as it is, for a directory
   * of the user's: the sandbox user then writes only where its modes let it).
   */
  workspaceAccess?: 'chown' | 'chmod' | 'keep';
  /** The bwrap binary (default: `bwrap` on PATH). */
  bwrapPath?: string;
  /** Called with each chunk of output as it is kept (within maxOutputBytes), for streaming. */
  onOutput?: (stream: 'stdout' | 'stderr', chunk: Buffer) => void;
}

export interface SandboxResult {
  /** The command's exit code; null when the run was killed (timeout or output limit). */
  exitCode: number | null;
  /**
   * The signal that ended the run: SIGKILL when clawray killed it, else the signal that ended the
   * command as bwrap reports it (exit status 128+n; a command that itself exits with 129–192 reads
   * the same).
   */
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** The output reached maxOutputBytes and was cut there. */
  truncated: boolean;
  timedOut: boolean;
  /**
   * The workspace budget the run went past, by the option that sets it: the run was killed (or,
   * done before a sample caught it, failed with exitCode null) and stderr ends with why.
   */
  limitExceeded?: 'workspaceMaxMb' | 'workspaceMaxFiles';
  /** The workspace's use when the run ended . */
  workspaceUsage: WorkspaceUsage;
  durationMs: number;
}

/** Every option runSandboxed knows; anything else is refused rather than ignored. */
const OPTION_FIELDS = new Set<string>([
  ...LIMIT_FIELDS,
  'command',
  'workspace',
  'network',
  'allowHosts',
  'env',
  'stdin',
  'uid',
  'gid',
  'workspaceAccess',
  'bwrapPath',
  'onOutput',
]);

const MIB = 1024 * 1024;
/** The fd bwrap finds the seccomp program on. */
const SECCOMP_CHILD_FD = 3;
/** How often the workspace is measured while a command runs, at the least… */
const WORKSPACE_SAMPLE_MS = 250;
/** …and at most this share of the wall clock goes to measuring a large workspace. */
const WORKSPACE_SAMPLE_DUTY = 0.2;

function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {}
  }
  return undefined;
}

/** The bwrap binary, or a ConfigError saying how to install it. */
export function findBwrap(explicit?: string): string {
  const found = explicit ?? findOnPath('bwrap');
  if (!found) {
    throw new ConfigError(
      'bubblewrap (bwrap) is not installed; the sandbox needs it: apt-get install bubblewrap',
    );
  }
  try {
    accessSync(found, constants.X_OK);
  } catch {
    throw new ConfigError(`bwrap at ${found} is not executable; apt-get install bubblewrap`);
  }
  return found;
}

function requireTool(path: string, pkg: string): void {
  try {
    accessSync(path, constants.X_OK);
  } catch {
    throw new ConfigError(`${path} is missing; the sandbox needs it: apt-get install ${pkg}`);
  }
}

/** Top-level directories bound read-only: a link on merged-/usr systems, a directory otherwise. */
const SYSTEM_DIRS = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/** Host /etc entries the programs need; everything else of /etc stays hidden. */
const ETC_ENTRIES = [
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'alternatives',
  'ssl',
  'ca-certificates',
  'ca-certificates.conf',
  'localtime',
  'mime.types',
  'protocols',
  'services',
  'bash.bashrc',
  'inputrc',
];

function systemMounts(): string[] {
  const args = ['--ro-bind', '/usr', '/usr'];
  for (const dir of SYSTEM_DIRS) {
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(dir);
    } catch {
      continue;
    }
    if (st.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
    else if (st.isDirectory()) args.push('--ro-bind', dir, dir);
  }
  return args;
}

async function writeEtc(dir: string, uid: number, gid: number, network: boolean): Promise<string[]> {
  const files: Record<string, string> = {
    passwd:
      'root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n' +
      (uid === 0 ? '' : `sandbox:x:${uid}:${gid}:sandbox:/workspace:/bin/sh\n`),
    group: 'root:x:0:\n' + (gid === 0 ? '' : `sandbox:x:${gid}:\n`),
    hosts: '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n',
    hostname: 'sandbox\n',
    'nsswitch.conf': 'passwd: files\ngroup: files\nhosts: files dns\n',
  };
  const args: string[] = ['--tmpfs', '/etc'];
  for (const [name, content] of Object.entries(files)) {
    const path = join(dir, name);
    await writeFile(path, content, { mode: 0o644 });
    await chmod(path, 0o644);
    args.push('--ro-bind', path, `/etc/${name}`);
  }
  for (const name of ETC_ENTRIES) args.push('--ro-bind-try', `/etc/${name}`, `/etc/${name}`);
  if (network) args.push('--ro-bind-try', '/etc/resolv.conf', '/etc/resolv.conf');
  args.push('--remount-ro', '/etc');
  return args;
}

async function chownTree(path: string, uid: number, gid: number): Promise<void> {
  await lchown(path, uid, gid);
  const st = await lstat(path);
  if (!st.isDirectory()) return;
  for (const entry of await readdir(path)) await chownTree(join(path, entry), uid, gid);
}

function signalName(n: number): NodeJS.Signals | null {
  for (const [name, value] of Object.entries(osConstants.signals)) {
    if (value === n) return name as NodeJS.Signals;
  }
  return null;
}

/** Runs one command in a fresh sandbox and collects its output. */
export async function runSandboxed(options: SandboxOptions): Promise<SandboxResult> {
  for (const key of Object.keys(options)) {
    if (!OPTION_FIELDS.has(key)) {
      throw new ConfigError(`sandbox: unknown option '${key}' (known: ${[...OPTION_FIELDS].join(', ')})`, {
        fields: { field: key },
      });
    }
  }
  const bwrap = findBwrap(options.bwrapPath);
  const limits = compileSandboxLimits(options);
  const network = options.network ?? false;
  const allowHosts = options.allowHosts ?? [];
  if (allowHosts.length > 0 && network) {
    throw new ConfigError(
      'sandbox: allowHosts limits a sandbox without network; with network: true every host is reachable',
    );
  }
  const command =
    typeof options.command === 'string' ? ['/bin/sh', '-c', options.command] : [...options.command];
  if (command.length === 0) throw new ConfigError('sandbox: empty command');

  let workspace: string;
  try {
    workspace = await realpath(options.workspace);
  } catch {
    throw new ConfigError(`sandbox: workspace ${options.workspace} does not exist`);
  }
  if (!statSync(workspace).isDirectory())
    throw new ConfigError(`sandbox: workspace ${workspace} is not a directory`);
  if (workspace === '/') throw new ConfigError('sandbox: the workspace cannot be /');

  const asRoot = process.getuid?.() === 0;
  const uid = asRoot ? (options.uid ?? SANDBOX_UID) : (process.getuid?.() ?? SANDBOX_UID);
  const gid = asRoot ? (options.gid ?? SANDBOX_GID) : (process.getgid?.() ?? SANDBOX_GID);
  requireTool('/usr/bin/prlimit', 'util-linux');
  if (asRoot) {
    requireTool('/usr/bin/setpriv', 'util-linux');
    requireTool('/usr/bin/unshare', 'util-linux');
    requireTool('/usr/bin/mount', 'mount');
    if (uid === 0) throw new ConfigError('sandbox: refusing to run the command as root (uid 0)');
    const access = options.workspaceAccess ?? 'chown';
    if (access === 'chown') await chownTree(workspace, uid, gid);
    else if (access === 'chmod') await chmod(workspace, 0o777);
  } else if (options.tmpMaxFiles !== undefined) {
    throw new ConfigError(
      'sandbox: tmpMaxFiles is enforced only when the sandbox runs as root (bwrap cannot bound the inodes of its own tmpfs); leave it unset',
      { fields: { field: 'tmpMaxFiles' } },
    );
  }
  const seccomp = limits.seccomp ? buildSeccompFilter(hostSeccompArch()) : undefined;
  const rlimits = [
    `--as=${limits.memoryMb * MIB}`,
    `--nproc=${limits.maxProcesses}`,
    `--fsize=${limits.maxFileMb * MIB}`,
  ];
  if (limits.cpuSeconds !== undefined) rlimits.push(`--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`);

  if (allowHosts.length > 0 && !process.execPath.startsWith('/usr/')) {
    throw new ConfigError(
      `sandbox: allowHosts runs a forwarder with this Node.js, but ${process.execPath} is not under /usr, which is all the sandbox sees`,
    );
  }
  const egress = allowHosts.length > 0 ? await startEgressProxy(allowHosts, process.execPath) : undefined;
  const etcDir = await mkdtemp(join(tmpdir(), 'clawray-sandbox-etc-'));
  let seccompFd: number | undefined;
  try {
    const env: Record<string, string> = {
      PATH: DEFAULT_PATH,
      HOME: '/workspace',
      USER: 'sandbox',
      LOGNAME: 'sandbox',
      LANG: 'C.UTF-8',
      TERM: 'dumb',
      ...egress?.env,
      ...options.env,
    };
    // As root, /tmp is a tmpfs we mount (bytes and inodes bounded) in a mount namespace of its
    // own, which bwrap then binds; it vanishes with the namespace's last process. bwrap's own
    // `--size` bounds only the bytes, so that is what a non-root run gets.
    const tmpMount = join(etcDir, 'tmp');
    const tmpArgs = asRoot
      ? ['--bind', tmpMount, '/tmp']
      : ['--perms', '1777', '--size', String(limits.tmpSizeMb * MIB), '--tmpfs', '/tmp'];
    const args: string[] = [
      '--die-with-parent',
      '--new-session',
      ...(asRoot
        ? ['--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try']
        : ['--unshare-all']),
      ...(network ? (asRoot ? [] : ['--share-net']) : asRoot ? ['--unshare-net'] : []),
      '--hostname',
      'sandbox',
      ...systemMounts(),
      ...(await writeEtc(etcDir, uid, gid, network)),
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      ...tmpArgs,
      ...(egress?.mountArgs ?? []),
      '--bind',
      workspace,
      '/workspace',
      '--chdir',
      '/workspace',
      '--clearenv',
    ];
    for (const [key, value] of Object.entries(env)) args.push('--setenv', key, value);
    if (asRoot) args.push('--cap-add', 'CAP_SETUID,CAP_SETGID');
    if (seccomp) {
      // bwrap reads the compiled filter from this fd and installs it right before the command.
      const file = join(etcDir, 'seccomp.bpf');
      await writeFile(file, seccomp, { mode: 0o600 });
      seccompFd = openSync(file, 'r');
      args.push('--seccomp', String(SECCOMP_CHILD_FD));
    }
    args.push('--');
    if (asRoot) {
      args.push(
        '/usr/bin/setpriv',
        `--reuid=${uid}`,
        `--regid=${gid}`,
        '--clear-groups',
        '--inh-caps=-all',
        '--bounding-set=-all',
      );
    }
    // The forwarder runs before prlimit: the limits are for the command, not for our plumbing.
    if (egress) args.push(...egress.commandPrefix);
    args.push('/usr/bin/prlimit', ...rlimits, '--', ...command);

    let file = bwrap;
    let argv = args;
    if (asRoot) {
      await mkdir(tmpMount, { mode: 0o700 });
      const tmpfsOptions = `size=${limits.tmpSizeMb * MIB},nr_inodes=${limits.tmpMaxFiles},mode=1777,nosuid,nodev`;
      file = '/usr/bin/unshare';
      argv = [
        '--mount',
        '--propagation',
        'private',
        '--',
        '/bin/sh',
        '-c',
        'mount -t tmpfs -o "$1" clawray-sandbox-tmp "$2" && shift 2 && exec "$@"',
        'sh',
        tmpfsOptions,
        tmpMount,
        bwrap,
        ...args,
      ];
    }
    const budget: WorkspaceBudget = {
      maxBytes: limits.workspaceMaxMb * MIB,
      maxFiles: limits.workspaceMaxFiles,
    };
    return await spawnAndCollect(file, argv, {
      timeoutMs: limits.timeoutMs,
      maxOutputBytes: limits.maxOutputBytes,
      stdin: options.stdin,
      onOutput: options.onOutput,
      seccompFd,
      workspace,
      budget,
    });
  } finally {
    if (seccompFd !== undefined) closeSync(seccompFd);
    await rm(etcDir, { recursive: true, force: true });
    await egress?.close();
  }
}

interface CollectOptions {
  timeoutMs: number;
  maxOutputBytes: number;
  stdin?: string | Uint8Array;
  onOutput?: (stream: 'stdout' | 'stderr', chunk: Buffer) => void;
  /** Given to the child as fd 3 (the seccomp program). */
  seccompFd?: number;
  workspace: string;
  budget: WorkspaceBudget;
}

function spawnAndCollect(file: string, args: string[], o: CollectOptions): Promise<SandboxResult> {
  const started = performance.now();
  return new Promise<SandboxResult>((resolve, reject) => {
    const child = spawn(file, args, {
      detached: true,
      env: {},
      stdio: [
        o.stdin === undefined ? 'ignore' : 'pipe',
        'pipe',
        'pipe',
        ...(o.seccompFd === undefined ? [] : [o.seccompFd]),
      ],
    });
    const chunks: { stdout: Buffer[]; stderr: Buffer[] } = { stdout: [], stderr: [] };
    let total = 0;
    let truncated = false;
    let timedOut = false;
    let killed = false;
    let exited = false;
    let limitExceeded: SandboxResult['limitExceeded'];
    let usage: WorkspaceUsage = { bytes: 0, files: 0 };
    const killTree = () => {
      if (killed || exited || child.pid === undefined) return;
      killed = true;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killTree();
    }, o.timeoutMs);

    // The workspace watchdog: measure, kill past the budget, sleep, repeat. A large tree is
    // sampled less often, so measuring never takes more than WORKSPACE_SAMPLE_DUTY of the time.
    let sampleTimer: NodeJS.Timeout | undefined;
    let sampling: Promise<void> = Promise.resolve();
    const sample = async () => {
      const t0 = performance.now();
      usage = await measureWorkspace(o.workspace);
      const over = overBudget(usage, o.budget);
      if (over && !limitExceeded) {
        limitExceeded = over;
        killTree();
      }
      if (exited || limitExceeded) return;
      const walkMs = performance.now() - t0;
      sampleTimer = setTimeout(schedule, Math.max(WORKSPACE_SAMPLE_MS, walkMs / WORKSPACE_SAMPLE_DUTY));
    };
    const schedule = () => {
      sampling = sample().catch(() => {});
    };
    sampleTimer = setTimeout(schedule, WORKSPACE_SAMPLE_MS);

    const collect = (which: 'stdout' | 'stderr') => (data: Buffer) => {
      if (truncated) return;
      const room = o.maxOutputBytes - total;
      if (data.length > room) {
        if (room > 0) {
          chunks[which].push(data.subarray(0, room));
          o.onOutput?.(which, data.subarray(0, room));
        }
        total = o.maxOutputBytes;
        truncated = true;
        child.stdout?.destroy();
        child.stderr?.destroy();
        killTree();
        return;
      }
      chunks[which].push(data);
      total += data.length;
      o.onOutput?.(which, data);
    };
    child.stdout?.on('data', collect('stdout'));
    child.stderr?.on('data', collect('stderr'));
    if (child.stdin) {
      child.stdin.on('error', () => {});
      child.stdin.end(o.stdin);
    }
    child.on('error', (err) => {
      exited = true;
      clearTimeout(timer);
      clearTimeout(sampleTimer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      exited = true;
      clearTimeout(timer);
      clearTimeout(sampleTimer);
      void finish(code, signal);
    });

    const finish = async (code: number | null, signal: NodeJS.Signals | null) => {
      await sampling;
      // The last word: what the command left behind, whether or not a sample caught it running.
      if (!limitExceeded) {
        try {
          usage = await measureWorkspace(o.workspace);
          limitExceeded = overBudget(usage, o.budget);
        } catch {}
      }
      let exitCode = code;
      let endSignal: NodeJS.Signals | null = signal;
      if (killed) {
        exitCode = null;
        endSignal = 'SIGKILL';
      } else if (limitExceeded) {
        exitCode = null;
      } else if (code !== null && code > 128 && code <= 128 + 64) {
        endSignal = signalName(code - 128);
      }
      let stderr = Buffer.concat(chunks.stderr).toString('utf8');
      if (limitExceeded) {
        const limit =
          limitExceeded === 'workspaceMaxFiles'
            ? `${o.budget.maxFiles} files`
            : `${o.budget.maxBytes / MIB} MiB`;
        const held =
          limitExceeded === 'workspaceMaxFiles'
            ? `${usage.files} files`
            : `${Math.ceil(usage.bytes / MIB)} MiB`;
        stderr += `${stderr === '' || stderr.endsWith('\n') ? '' : '\n'}clawray sandbox: the workspace holds ${held}, past ${limitExceeded}=${limit}; the run ${killed ? 'was killed' : 'failed'}\n`;
      }
      resolve({
        exitCode,
        signal: endSignal,
        stdout: Buffer.concat(chunks.stdout).toString('utf8'),
        stderr,
        truncated,
        timedOut,
        ...(limitExceeded ? { limitExceeded } : {}),
        workspaceUsage: usage,
        durationMs: Math.round(performance.now() - started),
      });
    };
  });
}
