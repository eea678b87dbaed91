/**
 * The sandbox every agent command runs in: bubblewrap (`bwrap`) with fresh pid/ipc/uts/net/cgroup
 * namespaces, a read-only /usr (+ the /bin, /lib… links or binds), a generated /etc, a private
 * /proc, /dev and /tmp, and one read-write directory at /workspace. Nothing else of the host is
 * visible: not $HOME, not /root (the cluster token file ~/.clawray), not the repository, and no
 * host environment variable (the environment is built from scratch; CLAWRAY_TOKEN never leaks).
 *
 * Limits hold when the cluster runs as root: the command runs as an unprivileged uid (65534,
 * `nobody`, by default) in the host's own user namespace — bwrap runs privileged without a user
 * namespace, keeps only CAP_SETUID/CAP_SETGID for its child, and `setpriv` drops to the uid with no
 * capabilities left — so RLIMIT_NPROC is counted for that uid (root would be exempt) and a fork
 * bomb stops at `maxProcesses`. `prlimit` then applies RLIMIT_CPU, RLIMIT_AS and RLIMIT_NPROC.
 * As a non-root user bwrap uses an unprivileged user namespace instead (`--unshare-all`) and the
 * command runs as the caller's own uid; NPROC then counts all of that user's processes.
 *
 * The wall-clock timeout, and output past `maxOutputBytes`, SIGKILL bwrap's process group;
 * bwrap's pid-1 inside the sandbox dies with it (`--die-with-parent`), and the kernel kills every
 * other process of the pid namespace, so no process of the sandbox outlives a run.
 *
 * Needs: bubblewrap ≥ 0.6 (`apt-get install bubblewrap`) and util-linux (`setpriv`, `prlimit`).
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, lstatSync, readlinkSync, statSync } from 'node:fs';
import { chmod, lchown, lstat, mkdtemp, readdir, realpath, rm, writeFile } from 'node:fs/promises';
import { constants as osConstants, tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { ConfigError } from '../../../common/errors.js';
import { startEgressProxy } from './egress-proxy.js';

export const SANDBOX_UID = 65534;
export const SANDBOX_GID = 65534;
export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface SandboxOptions {
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
  /** Wall clock for the whole run (default 30 000); the whole process tree is killed at it. */
  timeoutMs?: number;
  /** RLIMIT_CPU in seconds (SIGXCPU at the limit, SIGKILL a second later). */
  cpuSeconds?: number;
  /** RLIMIT_AS in MiB (address space of each process). */
  memoryMb?: number;
  /** RLIMIT_NPROC: processes of the sandbox uid (counted host-wide for that uid). */
  maxProcesses?: number;
  /** RLIMIT_FSIZE in MiB: the largest file the command may write. */
  maxFileMb?: number;
  /** Size of the private /tmp (tmpfs, in host memory), default 64 MiB. */
  tmpSizeMb?: number;
  /** stdout + stderr kept (default 1 MiB); past it the output is cut and the run killed. */
  maxOutputBytes?: number;
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
  durationMs: number;
}

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

function positiveInt(name: string, value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value <= 0) {
    throw new ConfigError(`sandbox: ${name} must be a whole number > 0, got ${value}`);
  }
  return value;
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
  const bwrap = findBwrap(options.bwrapPath);
  const timeoutMs = positiveInt('timeoutMs', options.timeoutMs) ?? DEFAULT_TIMEOUT_MS;
  const maxOutputBytes = positiveInt('maxOutputBytes', options.maxOutputBytes) ?? DEFAULT_MAX_OUTPUT_BYTES;
  const cpuSeconds = positiveInt('cpuSeconds', options.cpuSeconds);
  const memoryMb = positiveInt('memoryMb', options.memoryMb);
  const maxProcesses = positiveInt('maxProcesses', options.maxProcesses);
  const maxFileMb = positiveInt('maxFileMb', options.maxFileMb);
  const tmpSizeMb = positiveInt('tmpSizeMb', options.tmpSizeMb) ?? 64;
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
  if (asRoot) {
    requireTool('/usr/bin/setpriv', 'util-linux');
    if (uid === 0) throw new ConfigError('sandbox: refusing to run the command as root (uid 0)');
    const access = options.workspaceAccess ?? 'chown';
    if (access === 'chown') await chownTree(workspace, uid, gid);
    else if (access === 'chmod') await chmod(workspace, 0o777);
  }
  const limits: string[] = [];
  if (cpuSeconds !== undefined) limits.push(`--cpu=${cpuSeconds}:${cpuSeconds + 1}`);
  if (memoryMb !== undefined) limits.push(`--as=${memoryMb * 1024 * 1024}`);
  if (maxProcesses !== undefined) limits.push(`--nproc=${maxProcesses}`);
  if (maxFileMb !== undefined) limits.push(`--fsize=${maxFileMb * 1024 * 1024}`);
  if (limits.length > 0) requireTool('/usr/bin/prlimit', 'util-linux');

  if (allowHosts.length > 0 && !process.execPath.startsWith('/usr/')) {
    throw new ConfigError(
      `sandbox: allowHosts runs a forwarder with this Node.js, but ${process.execPath} is not under /usr, which is all the sandbox sees`,
    );
  }
  const egress = allowHosts.length > 0 ? await startEgressProxy(allowHosts, process.execPath) : undefined;
  const etcDir = await mkdtemp(join(tmpdir(), 'clawray-sandbox-etc-'));
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
      '--perms',
      '1777',
      '--size',
      String(tmpSizeMb * 1024 * 1024),
      '--tmpfs',
      '/tmp',
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
    if (limits.length > 0) args.push('/usr/bin/prlimit', ...limits, '--');
    args.push(...command);
    return await spawnAndCollect(bwrap, args, {
      timeoutMs,
      maxOutputBytes,
      stdin: options.stdin,
      onOutput: options.onOutput,
    });
  } finally {
    await rm(etcDir, { recursive: true, force: true });
    await egress?.close();
  }
}

interface CollectOptions {
  timeoutMs: number;
  maxOutputBytes: number;
  stdin?: string | Uint8Array;
  onOutput?: (stream: 'stdout' | 'stderr', chunk: Buffer) => void;
}

function spawnAndCollect(bwrap: string, args: string[], o: CollectOptions): Promise<SandboxResult> {
  const started = performance.now();
  return new Promise<SandboxResult>((resolve, reject) => {
    const child = spawn(bwrap, args, {
      detached: true,
      env: {},
      stdio: [o.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    const chunks: { stdout: Buffer[]; stderr: Buffer[] } = { stdout: [], stderr: [] };
    let total = 0;
    let truncated = false;
    let timedOut = false;
    let killed = false;
    const killTree = () => {
      if (killed || child.pid === undefined) return;
      killed = true;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killTree();
    }, o.timeoutMs);
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
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      let exitCode = code;
      let endSignal: NodeJS.Signals | null = signal;
      if (killed) {
        exitCode = null;
        endSignal = 'SIGKILL';
      } else if (code !== null && code > 128 && code <= 128 + 64) {
        endSignal = signalName(code - 128);
      }
      resolve({
        exitCode,
        signal: endSignal,
        stdout: Buffer.concat(chunks.stdout).toString('utf8'),
        stderr: Buffer.concat(chunks.stderr).toString('utf8'),
        truncated,
        timedOut,
        durationMs: Math.round(performance.now() - started),
      });
    });
  });
}
