/**
 * The seccomp filter: its syscall numbers against the kernel headers, its decisions run through a
 * classic-BPF interpreter for both architectures, and real sandboxes where the refused calls get
 * EPERM (and, with `seccomp: false`, do not).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { runSandboxed } from './sandbox.js';
import {
  AUDIT_ARCH,
  buildSeccompFilter,
  DENIED,
  ENOSYS,
  EPERM,
  SECCOMP_RET_ALLOW,
  SECCOMP_RET_ERRNO,
  SECCOMP_RET_KILL_PROCESS,
  type SeccompArch,
  SYSCALLS,
} from './seccomp.js';

const HEADERS: Record<SeccompArch, string> = {
  x64: '/usr/include/x86_64-linux-gnu/asm/unistd_64.h',
  arm64: '/usr/include/asm-generic/unistd.h',
};

describe.each(['x64', 'arm64'] as const)('syscall numbers for %s', (arch) => {
  it.skipIf(!existsSync(HEADERS[arch]))('match the kernel headers', () => {
    const text = readFileSync(HEADERS[arch], 'utf8');
    for (const [name, nr] of Object.entries(SYSCALLS[arch])) {
      const m = new RegExp(`#define __NR_${name}\\s+(\\d+)\\b`).exec(text);
      expect(m, name).not.toBeNull();
      expect(Number(m?.[1]), name).toBe(nr);
    }
  });
});

/** Runs a classic-BPF seccomp program on one `seccomp_data`, as the kernel would. */
function evaluate(program: Buffer, data: { nr: number; arch: number; args?: number[] }): number {
  const mem = Buffer.alloc(64);
  mem.writeUInt32LE(data.nr >>> 0, 0);
  mem.writeUInt32LE(data.arch >>> 0, 4);
  for (const [i, a] of (data.args ?? []).entries()) {
    mem.writeBigUInt64LE(BigInt.asUintN(64, BigInt(a)), 16 + 8 * i);
  }
  let acc = 0;
  for (let pc = 0; pc < program.length / 8; ) {
    const code = program.readUInt16LE(pc * 8);
    const jt = program.readUInt8(pc * 8 + 2);
    const jf = program.readUInt8(pc * 8 + 3);
    const k = program.readUInt32LE(pc * 8 + 4);
    pc += 1;
    switch (code) {
      case 0x20:
        acc = mem.readUInt32LE(k);
        break;
      case 0x15:
        pc += acc === k ? jt : jf;
        break;
      case 0x35:
        pc += acc >= k ? jt : jf;
        break;
      case 0x45:
        pc += (acc & k) !== 0 ? jt : jf;
        break;
      case 0x06:
        return k;
      default:
        throw new Error(`unknown opcode ${code}`);
    }
  }
  throw new Error('fell off the end of the program');
}

describe.each(['x64', 'arm64'] as const)('the %s filter', (arch) => {
  const program = buildSeccompFilter(arch);
  const nr = SYSCALLS[arch];
  const run = (name: string | number, args: number[] = [], a = AUDIT_ARCH[arch]) =>
    evaluate(program, { nr: typeof name === 'number' ? name : nr[name], arch: a, args });
  const eperm = SECCOMP_RET_ERRNO | EPERM;
  const CLONE_NEWUSER = 0x10000000;
  const SIGCHLD = 17;

  it('refuses every denied syscall with EPERM and allows the rest', () => {
    for (const name of DENIED) if (nr[name] !== undefined) expect(run(name), name).toBe(eperm);
    const denied = new Set(DENIED.map((n) => nr[n]).filter((n) => n !== undefined));
    const special = new Set([nr.clone, nr.unshare, nr.clone3, nr.ioctl]);
    for (let n = 0; n < 460; n++) {
      if (!denied.has(n) && !special.has(n)) expect(run(n), String(n)).toBe(SECCOMP_RET_ALLOW);
    }
  });

  it('refuses namespaces on clone and unshare, nothing else of them', () => {
    expect(run('clone', [CLONE_NEWUSER | SIGCHLD])).toBe(eperm);
    expect(run('clone', [0x40000000 | SIGCHLD])).toBe(eperm); // CLONE_NEWNET
    expect(run('clone', [0x00020000])).toBe(eperm); // CLONE_NEWNS
    // fork and pthread_create
    expect(run('clone', [SIGCHLD])).toBe(SECCOMP_RET_ALLOW);
    expect(run('clone', [0x003d0f00])).toBe(SECCOMP_RET_ALLOW);
    expect(run('unshare', [CLONE_NEWUSER])).toBe(eperm);
    expect(run('unshare', [0x80])).toBe(eperm); // CLONE_NEWTIME
    expect(run('unshare', [0x400])).toBe(SECCOMP_RET_ALLOW); // CLONE_FILES
    expect(run('clone3', [0, 88])).toBe(SECCOMP_RET_ERRNO | ENOSYS);
  });

  it('refuses typing into the terminal (TIOCSTI) and allows other ioctls', () => {
    expect(run('ioctl', [0, 0x5412])).toBe(eperm);
    expect(run('ioctl', [0, 0x5401])).toBe(SECCOMP_RET_ALLOW); // TCGETS
  });

  it('kills a process calling with another architecture', () => {
    expect(run(0, [], 0x40000003)).toBe(SECCOMP_RET_KILL_PROCESS); // i386
    const other = arch === 'x64' ? AUDIT_ARCH.arm64 : AUDIT_ARCH.x64;
    expect(run(0, [], other)).toBe(SECCOMP_RET_KILL_PROCESS);
    if (arch === 'x64') expect(run(0x40000000)).toBe(SECCOMP_RET_KILL_PROCESS); // x32
  });
});

const hasBwrap = spawnSync('bwrap', ['--version']).status === 0;
const hostArch = process.arch === 'x64' || process.arch === 'arm64' ? process.arch : undefined;

describe.skipIf(!hasBwrap || !hostArch)('in a sandbox', () => {
  const nr = SYSCALLS[hostArch ?? 'x64'];
  let workspace: string;
  const dirs: string[] = [];
  beforeEach(() => {
    workspace = mkdtempSync(join(tmpdir(), 'clawray-seccomp-'));
    dirs.push(workspace);
  });
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  /** Each probe's errno (or `ok`) from raw syscalls made by perl (perl-base is in every Debian). */
  const probe = async (seccomp: boolean, calls: Record<string, [number, ...number[]]>) => {
    const script = Object.entries(calls)
      .map(([name, [n, ...args]]) => {
        const list = [n, ...args, ...Array(Math.max(0, 5 - args.length)).fill(0)].join(', ');
        return `{ my $r = syscall(${list}); print "${name}=", ($r == -1 ? $! + 0 : "ok"), "\\n"; }`;
      })
      .join('\n');
    const r = await runSandboxed({ command: ['perl', '-e', script], workspace, seccomp });
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    return Object.fromEntries(
      r.stdout
        .trim()
        .split('\n')
        .map((l) => l.split('=')),
    );
  };

  it('refuses user namespaces: unshare -U fails with EPERM', async () => {
    for (const command of [
      ['unshare', '-U', 'true'],
      ['unshare', '--user', '--map-root-user', 'true'],
    ]) {
      const r = await runSandboxed({ command, workspace });
      expect(r.exitCode, command.join(' ')).not.toBe(0);
      expect(r.stderr).toContain('Operation not permitted');
    }
  });

  it('refuses mount, ptrace, keyrings, bpf, modules and the rest with EPERM; clone3 with ENOSYS', async () => {
    const calls: Record<string, [number, ...number[]]> = {
      mount: [nr.mount],
      umount2: [nr.umount2],
      pivot_root: [nr.pivot_root],
      ptrace: [nr.ptrace], // PTRACE_TRACEME
      keyctl: [nr.keyctl, 0, -3], // KEYCTL_GET_KEYRING_ID of the session keyring
      add_key: [nr.add_key],
      bpf: [nr.bpf],
      perf_event_open: [nr.perf_event_open],
      userfaultfd: [nr.userfaultfd],
      setns: [nr.setns],
      unshare: [nr.unshare, 0x10000000],
      init_module: [nr.init_module],
      finit_module: [nr.finit_module],
      delete_module: [nr.delete_module],
      kexec_load: [nr.kexec_load],
      open_by_handle_at: [nr.open_by_handle_at],
      swapon: [nr.swapon],
      reboot: [nr.reboot],
      acct: [nr.acct],
      io_uring_setup: [nr.io_uring_setup],
      fsopen: [nr.fsopen],
    };
    const on = await probe(true, { ...calls, clone3: [nr.clone3] });
    for (const name of Object.keys(calls)) expect(on[name], name).toBe(String(EPERM));
    expect(on.clone3).toBe(String(ENOSYS));
    // The filter is what refuses: without it the same calls get the kernel's own answers.
    const off = await probe(false, {
      mount: [nr.mount],
      ptrace: [nr.ptrace],
      keyctl: [nr.keyctl, 0, -3],
      clone3: [nr.clone3],
    });
    expect(off.mount).toBe('14'); // EFAULT: the NULL target is looked at before any permission
    expect(off.ptrace).toBe('ok');
    expect(off.keyctl).toBe('ok');
    expect(off.clone3).not.toBe(String(ENOSYS));
  });

  it('keeps ordinary programs working: fork, threads, node, git, perl', async () => {
    const r = await runSandboxed({
      command: [
        'sh',
        '-c',
        [
          'set -e',
          'echo a | cat | tr a b',
          "perl -e 'my $p = fork; if ($p == 0) { exit 3 } waitpid($p, 0); print $? >> 8, qq{\\n}'",
          `node -e "const {execFileSync} = require('child_process'); const {Worker} = require('worker_threads'); new Worker('1', {eval: true}).on('exit', () => console.log('worker', execFileSync('echo', ['ok']).toString().trim()))"`,
          'git init -q r && cd r && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m m && git log --format=%s',
        ].join('\n'),
      ],
      workspace,
      env: { HOME: '/tmp' },
    });
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('b\n3\nworker ok\nm\n');
    expect(r.exitCode).toBe(0);
  });
});
