/**
 * Escape attempts against the agent sandbox, each shown contained. Runs where bubblewrap is
 * installed (CI installs it); as root the command runs as uid 65534.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type Server } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { distEntry } from '../../../common/package-root.js';
import { runSandboxed, SANDBOX_UID } from './sandbox.js';

const hasBwrap = spawnSync('bwrap', ['--version']).status === 0;
const asRoot = process.getuid?.() === 0;
const sandboxUid = asRoot ? SANDBOX_UID : process.getuid?.();
// The process-counting tests run as a uid of their own: other suites' sandboxes (65534) may be
// running at the same time, and RLIMIT_NPROC and the leftover checks count per uid.
const ISOLATED_UID = 61_234;

/** Pids of live processes owned by `uid` (real uid), from /proc. */
function processesOf(uid: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const status = readFileSync(`/proc/${entry}/status`, 'utf8');
      const line = status.split('\n').find((l) => l.startsWith('Uid:'));
      const state = status.split('\n').find((l) => l.startsWith('State:'));
      if (line?.split(/\s+/)[1] === String(uid) && !state?.includes('zombie')) pids.push(Number(entry));
    } catch {}
  }
  return pids;
}

async function waitForNoProcessesOf(uid: number, ms = 3000): Promise<number[]> {
  const deadline = Date.now() + ms;
  let left = processesOf(uid);
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    left = processesOf(uid);
  }
  return left;
}

describe.skipIf(!hasBwrap)('runSandboxed', () => {
  let workspace: string;
  const cleanup: string[] = [];

  beforeEach(() => {
    workspace = mkdtempSync(join(tmpdir(), 'clawray-sbx-ws-'));
    cleanup.push(workspace);
  });
  afterAll(() => {
    for (const dir of cleanup) rmSync(dir, { recursive: true, force: true });
  });

  it('runs as the unprivileged sandbox uid with a clean environment', async () => {
    const r = await runSandboxed({ command: ['sh', '-c', 'id -u; id -g; pwd'], workspace });
    expect(r.exitCode).toBe(0);
    expect(r.stdout.split('\n').slice(0, 3)).toEqual([String(sandboxUid), expect.any(String), '/workspace']);
    if (asRoot) expect(r.stdout.split('\n')[1]).toBe('65534');
    expect(r.timedOut).toBe(false);
    expect(r.truncated).toBe(false);
  });

  describe('host environment', () => {
    const saved = process.env.CLAWRAY_TOKEN;
    afterEach(() => {
      if (saved === undefined) delete process.env.CLAWRAY_TOKEN;
      else process.env.CLAWRAY_TOKEN = saved;
    });

    it('leaks no host variable, CLAWRAY_TOKEN included; passes the given env', async () => {
      process.env.CLAWRAY_TOKEN = 'host-secret-token-xyz';
      const r = await runSandboxed({ command: 'env', workspace, env: { FOO: 'bar' } });
      expect(r.exitCode).toBe(0);
      expect(r.stdout).not.toContain('host-secret-token-xyz');
      expect(r.stdout).not.toContain('CLAWRAY_TOKEN');
      expect(r.stdout).toContain('FOO=bar');
      const keys = r.stdout
        .trim()
        .split('\n')
        .map((l) => l.slice(0, l.indexOf('=')))
        .sort();
      // Only what runSandboxed sets, plus what the shell adds itself.
      const allowed = [
        'FOO',
        'HOME',
        'LANG',
        'LOGNAME',
        'PATH',
        'TERM',
        'USER',
        'PWD',
        'SHLVL',
        '_',
        'OLDPWD',
      ];
      for (const key of keys) expect(allowed, key).toContain(key);
    });
  });

  it.each([
    ['touch /etc/x', '/etc/x'],
    ['touch /usr/x', '/usr/x'],
    ['echo > /root/x', '/root/x'],
    ['touch /x', '/x'],
    ['mkdir /workspace/../escape', '/escape'],
  ])('cannot write outside the workspace: %s', async (command, hostPath) => {
    expect(existsSync(hostPath)).toBe(false);
    const r = await runSandboxed({ command, workspace });
    expect(r.exitCode).not.toBe(0);
    expect(existsSync(hostPath)).toBe(false);
  });

  it('sees none of the host files: home, /root, the repository, the cluster token, host /tmp', async () => {
    const secretDir = mkdtempSync(join(homedir(), '.clawray-sbx-secret-'));
    cleanup.push(secretDir);
    const secretFile = join(secretDir, 'token');
    writeFileSync(secretFile, 'top-secret-value');
    const outside = mkdtempSync(join(tmpdir(), 'clawray-sbx-outside-'));
    cleanup.push(outside);
    writeFileSync(join(outside, 'secret'), 'top-secret-value');
    const targets = [
      secretFile,
      join(outside, 'secret'),
      join(homedir(), '.clawray', 'token'),
      '/root/.clawray/token',
      join(process.cwd(), 'package.json'),
    ];
    for (const target of targets) {
      const r = await runSandboxed({ command: ['cat', target], workspace });
      expect(r.exitCode, target).not.toBe(0);
      expect(r.stdout).not.toContain('top-secret-value');
    }
    const ls = await runSandboxed({ command: 'ls -a / /root /home /etc 2>&1; true', workspace });
    expect(ls.stdout).not.toContain('.clawray');
    expect(ls.stdout).not.toContain('shadow');
    const shadow = await runSandboxed({ command: 'cat /etc/shadow', workspace });
    expect(shadow.exitCode).not.toBe(0);
  });

  describe('network', () => {
    let server: Server;
    let port: number;
    let connections = 0;
    beforeEach(async () => {
      connections = 0;
      server = createServer((socket) => {
        connections++;
        socket.destroy();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as { port: number }).port;
    });
    afterEach(async () => {
      await new Promise((resolve) => server.close(resolve));
    });

    it('cannot reach a host listener without network', async () => {
      const r = await runSandboxed({
        command: ['bash', '-c', `echo hi > /dev/tcp/127.0.0.1/${port}`],
        workspace,
        timeoutMs: 10_000,
      });
      expect(r.exitCode).not.toBe(0);
      expect(r.timedOut).toBe(false);
      expect(connections).toBe(0);
    });

    it('reaches it with network: true', async () => {
      const r = await runSandboxed({
        command: ['bash', '-c', `echo hi > /dev/tcp/127.0.0.1/${port}`],
        workspace,
        network: true,
        timeoutMs: 10_000,
      });
      expect(r.stderr).toBe('');
      expect(r.exitCode).toBe(0);
      await new Promise((r) => setTimeout(r, 100));
      expect(connections).toBe(1);
    });
  });

  describe('allowHosts', () => {
    // Two loopback addresses of the host stand in for an allowed and a forbidden site.
    const servers: HttpServer[] = [];
    const hits: string[] = [];
    const serve = async (host: string): Promise<number> => {
      const server = createHttpServer((req, res) => {
        // Proxied requests keep their absolute-form target.
        hits.push(`${host} ${new URL(req.url ?? '/', 'http://x').pathname}`);
        res.end(`hello from ${host}`);
      });
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(0, host, resolve));
      return (server.address() as { port: number }).port;
    };
    let allowedPort: number;
    let forbiddenPort: number;
    beforeEach(async () => {
      hits.length = 0;
      allowedPort = await serve('127.0.0.2');
      forbiddenPort = await serve('127.0.0.3');
    });
    afterEach(async () => {
      await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
    });

    it('reaches an allowed host through the proxy and nothing else', async () => {
      const allowHosts = [`127.0.0.2:${allowedPort}`];
      const ok = await runSandboxed({
        command: ['curl', '-sS', '--max-time', '5', `http://127.0.0.2:${allowedPort}/ok`],
        workspace,
        allowHosts,
      });
      expect(ok.stderr).toBe('');
      expect(ok.stdout).toBe('hello from 127.0.0.2');
      const python = await runSandboxed({
        command: [
          'python3',
          '-c',
          `import urllib.request; print(urllib.request.urlopen('http://127.0.0.2:${allowedPort}/py', timeout=5).read().decode())`,
        ],
        workspace,
        allowHosts,
      });
      expect(python.stdout.trim()).toBe('hello from 127.0.0.2');
      // CONNECT, as HTTPS clients use it.
      const tunnelled = await runSandboxed({
        command: ['curl', '-sS', '-p', '--max-time', '5', `http://127.0.0.2:${allowedPort}/tunnel`],
        workspace,
        allowHosts,
      });
      expect(tunnelled.stdout).toBe('hello from 127.0.0.2');
      const denied = await runSandboxed({
        command: ['curl', '-sS', '--max-time', '5', `http://127.0.0.3:${forbiddenPort}/no`],
        workspace,
        allowHosts,
      });
      expect(denied.stdout).toContain(`127.0.0.3:${forbiddenPort} is not in the allow-list`);
      const tunnel = await runSandboxed({
        command: ['curl', '-sS', '-p', '--max-time', '5', `http://127.0.0.3:${forbiddenPort}/tunnel`],
        workspace,
        allowHosts,
      });
      expect(tunnel.exitCode).not.toBe(0);
      // Around the proxy: a direct connection finds only the sandbox's own loopback.
      const direct = await runSandboxed({
        command: ['bash', '-c', `echo GET / > /dev/tcp/127.0.0.2/${allowedPort}`],
        workspace,
        allowHosts,
      });
      expect(direct.exitCode).not.toBe(0);
      expect(hits).toEqual([`127.0.0.2 /ok`, `127.0.0.2 /py`, `127.0.0.2 /tunnel`]);
    });

    it('keeps the limits on the command and its exit status', async () => {
      const r = await runSandboxed({
        command: 'ulimit -v; exit 7',
        workspace,
        allowHosts: ['example.com'],
        memoryMb: 64,
      });
      expect(r.stdout.trim()).toBe(String(64 * 1024));
      expect(r.exitCode).toBe(7);
    });

    it('rejects bad patterns and allowHosts with network: true', async () => {
      await expect(runSandboxed({ command: 'true', workspace, allowHosts: ['http://x'] })).rejects.toThrow(
        /allowHosts entry 'http:\/\/x'/,
      );
      await expect(
        runSandboxed({ command: 'true', workspace, allowHosts: ['example.com'], network: true }),
      ).rejects.toThrow(/network: true/);
    });
  });

  it.skipIf(!asRoot)('contains a fork bomb, and no process of the sandbox uid survives', async () => {
    expect(processesOf(ISOLATED_UID)).toEqual([]);
    const r = await runSandboxed({
      command: ['bash', '-c', ':(){ :|:& };:; sleep 100'],
      workspace,
      uid: ISOLATED_UID,
      gid: ISOLATED_UID,
      maxProcesses: 64,
      timeoutMs: 3000,
    });
    expect(r.timedOut).toBe(true);
    expect(r.durationMs).toBeLessThan(10_000);
    expect(await waitForNoProcessesOf(ISOLATED_UID)).toEqual([]);
    // The host still forks.
    expect(execFileSync('sh', ['-c', 'echo ok']).toString()).toBe('ok\n');
  });

  it('cuts endless output at maxOutputBytes and ends the run', async () => {
    const r = await runSandboxed({
      command: ['yes'],
      workspace,
      maxOutputBytes: 100_000,
      timeoutMs: 20_000,
      ...(asRoot ? { uid: ISOLATED_UID, gid: ISOLATED_UID } : {}),
    });
    expect(r.truncated).toBe(true);
    expect(r.timedOut).toBe(false);
    expect(r.stdout.length + r.stderr.length).toBe(100_000);
    expect(r.stdout.startsWith('y\ny\n')).toBe(true);
    expect(r.exitCode).toBeNull();
    expect(r.durationMs).toBeLessThan(10_000);
    if (asRoot) expect(await waitForNoProcessesOf(ISOLATED_UID)).toEqual([]);
  });

  it('kills the whole tree at the timeout', async () => {
    const r = await runSandboxed({
      command: ['sh', '-c', 'sleep 1000 & sleep 1000'],
      workspace,
      timeoutMs: 1000,
      ...(asRoot ? { uid: ISOLATED_UID, gid: ISOLATED_UID } : {}),
    });
    expect(r.timedOut).toBe(true);
    expect(r.exitCode).toBeNull();
    expect(r.signal).toBe('SIGKILL');
    expect(r.durationMs).toBeGreaterThanOrEqual(900);
    expect(r.durationMs).toBeLessThan(5000);
    if (asRoot) expect(await waitForNoProcessesOf(ISOLATED_UID)).toEqual([]);
  });

  it('holds the memory limit', async () => {
    const r = await runSandboxed({
      command: ['bash', '-c', 'head -c 1073741824 /dev/zero | tail -n 1 > /dev/null'],
      workspace,
      memoryMb: 256,
      timeoutMs: 20_000,
    });
    expect(r.timedOut).toBe(false);
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toMatch(/memory/i);
  });

  it.skipIf(!existsSync('/usr/bin/python3'))('holds the memory limit for python', async () => {
    const small = await runSandboxed({
      command: ['python3', '-c', 'x = bytearray(2**26); print(len(x))'],
      workspace,
      memoryMb: 256,
    });
    expect(small.exitCode).toBe(0);
    const big = await runSandboxed({
      command: ['python3', '-c', 'x = bytearray(2**30)'],
      workspace,
      memoryMb: 256,
    });
    expect(big.exitCode).not.toBe(0);
    expect(big.stderr).toContain('MemoryError');
  });

  it('holds the CPU limit', async () => {
    const r = await runSandboxed({
      command: ['bash', '-c', 'while true; do :; done'],
      workspace,
      cpuSeconds: 1,
      timeoutMs: 20_000,
    });
    expect(r.timedOut).toBe(false);
    expect(r.exitCode).not.toBe(0);
    expect(['SIGXCPU', 'SIGKILL']).toContain(r.signal);
    expect(r.durationMs).toBeLessThan(10_000);
  });

  it('keeps the workspace writable and persistent between runs', async () => {
    mkdirSync(join(workspace, 'seed'));
    writeFileSync(join(workspace, 'seed', 'a.txt'), 'seeded\n');
    const first = await runSandboxed({
      command: 'echo one > f && echo more >> seed/a.txt && mkdir -p d && echo two > d/g',
      workspace,
    });
    expect(first.stderr).toBe('');
    expect(first.exitCode).toBe(0);
    const second = await runSandboxed({ command: 'cat f d/g seed/a.txt', workspace });
    expect(second.stdout).toBe('one\ntwo\nseeded\nmore\n');
    expect(readFileSync(join(workspace, 'f'), 'utf8')).toBe('one\n');
  });

  it('feeds stdin', async () => {
    const r = await runSandboxed({ command: ['tr', 'a-z', 'A-Z'], workspace, stdin: 'hello' });
    expect(r.stdout).toBe('HELLO');
  });

  it('reports a missing bwrap as a ConfigError naming the package', async () => {
    await expect(
      runSandboxed({ command: 'true', workspace, bwrapPath: '/nonexistent/bwrap' }),
    ).rejects.toThrow(/apt-get install bubblewrap/);
  });
});

describe.skipIf(!hasBwrap)('clawray sandbox exec', () => {
  const exec = (args: string[], cwd?: string) =>
    spawnSync(process.execPath, [distEntry('cli/main'), 'sandbox', 'exec', ...args], {
      encoding: 'utf8',
      cwd,
    });

  it('runs a command with the workspace and exits with its code', () => {
    const workspace = mkdtempSync(join(tmpdir(), 'clawray-sbx-cli-'));
    try {
      // As root a directory of the user's is writable by the sandbox user only when asked.
      const ok = exec([
        '--workspace',
        workspace,
        '--chown-workspace',
        '--',
        'sh',
        '-c',
        'echo hi > f; cat f',
      ]);
      expect(ok.stderr).toBe('');
      expect(ok.stdout).toBe('hi\n');
      expect(ok.status).toBe(0);
      expect(readFileSync(join(workspace, 'f'), 'utf8')).toBe('hi\n');
      expect(exec(['--workspace', workspace, '--', 'sh', '-c', 'exit 7']).status).toBe(7);
      const slow = exec(['--workspace', workspace, '--timeout-ms', '500', '--', 'sleep', '100']);
      expect(slow.status).toBe(124);
      expect(slow.stderr).toContain('timed out');
    } finally {
      rmSync(workspace, { recursive: true, force: true });
    }
  });

  it("runs in a fresh workspace of its own by default, and never chowns the user's directories", () => {
    const cwd = mkdtempSync(join(tmpdir(), 'clawray-sbx-cwd-'));
    try {
      writeFileSync(join(cwd, 'mine'), 'x');
      const before = [statSync(cwd), statSync(join(cwd, 'mine'))].map((s) => [s.uid, s.gid, s.mode]);
      // The fresh workspace is writable by the sandbox user and empty: not the current directory.
      const fresh = exec(['--', 'sh', '-c', 'ls -A; echo ok > f; cat f; pwd'], cwd);
      expect(fresh.stderr).toBe('');
      expect(fresh.stdout).toBe('ok\n/workspace\n');
      expect(fresh.status).toBe(0);
      // Named with --workspace, the directory keeps its owner and modes (the command may fail
      // to write it as uid 65534: that is the point).
      exec(['--workspace', cwd, '--', 'true'], cwd);
      const after = [statSync(cwd), statSync(join(cwd, 'mine'))].map((s) => [s.uid, s.gid, s.mode]);
      expect(after).toEqual(before);
      expect(readdirSync(cwd)).toEqual(['mine']);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });

  it('sets the limits by flag, names a bad one, and turns the seccomp filter off only when asked', () => {
    const bad = exec(['--memory-mb', '10', '--', 'true']);
    expect(bad.stderr).toContain('--memory-mb must be a whole number from 64');
    expect(bad.status).not.toBe(0);
    const bigFile = exec(['--max-file-mb', '1', '--', 'sh', '-c', 'head -c 2000000 /dev/zero > f']);
    expect(bigFile.status).not.toBe(0);
    const files = exec(['--workspace-max-files', '5', '--', 'sh', '-c', 'touch a b c d e f g']);
    expect(files.stderr).toMatch(/went past --workspace-max-files \(it holds 8 files/);
    expect(files.status).toBe(1);
    const probe = ['--', 'perl', '-e', 'syscall(SYS, 0, 0, 0, 0, 0); print $! + 0'];
    const mountNr = String(process.arch === 'arm64' ? 40 : 165);
    const on = exec(probe.map((a) => a.replace('SYS', mountNr)));
    expect(on.stdout).toBe('1'); // EPERM from the filter
    const off = exec(['--no-seccomp', ...probe.map((a) => a.replace('SYS', mountNr))]);
    expect(off.stdout).toBe('14'); // EFAULT from the kernel
  });

  it('keeps the fresh workspace with --keep-workspace and says where', () => {
    const kept = exec(['--keep-workspace', '--', 'sh', '-c', 'echo data > out']);
    expect(kept.status).toBe(0);
    const path = /kept at (\S+)/.exec(kept.stderr)?.[1];
    expect(path).toBeDefined();
    try {
      expect(readFileSync(join(path!, 'out'), 'utf8')).toBe('data\n');
    } finally {
      rmSync(path!, { recursive: true, force: true });
    }
  });
});
