/**
 * The sandbox's default limits, each shown holding in a real bubblewrap run with no option set
 * (processes, memory, file size, /tmp bytes and inodes, workspace disk and inodes), raisable by
 * the caller, and validated with messages naming the field.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../common/errors.js';
import { runSandboxed } from './sandbox.js';
import { compileSandboxLimits, SANDBOX_DEFAULTS } from './sandbox-limits.js';
import { measureWorkspace } from './workspace-usage.js';

const hasBwrap = spawnSync('bwrap', ['--version']).status === 0;
const asRoot = process.getuid?.() === 0;
// A uid of this file's own, so that RLIMIT_NPROC and the leftover check count only its processes.
const ISOLATED_UID = 61_235;
const MIB = 1024 * 1024;

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

describe('compileSandboxLimits', () => {
  it('applies the defaults: every limit on', () => {
    const limits = compileSandboxLimits({});
    expect(limits).toEqual(SANDBOX_DEFAULTS);
    expect(limits.seccomp).toBe(true);
  });

  it.each([
    [{ memoryMb: 0 }, /memoryMb must be a whole number from 64/],
    [{ maxProcesses: 1.5 }, /maxProcesses must be a whole number/],
    [{ maxFileMb: -1 }, /maxFileMb/],
    [{ tmpMaxFiles: 3 }, /tmpMaxFiles must be a whole number from 16/],
    [{ workspaceMaxMb: Number.NaN }, /workspaceMaxMb/],
    [{ workspaceMaxFiles: 2e9 }, /workspaceMaxFiles .* to 1000000000/],
    [{ timeoutMs: '5' as unknown as number }, /timeoutMs .* got 5/],
    [{ seccomp: 'no' as unknown as boolean }, /seccomp must be true or false/],
  ])('refuses %o naming the field', (options, message) => {
    expect(() => compileSandboxLimits(options)).toThrow(ConfigError);
    expect(() => compileSandboxLimits(options)).toThrow(message);
  });
});

describe.skipIf(!hasBwrap)('default limits in a real sandbox', () => {
  let workspace: string;
  beforeEach(() => {
    workspace = mkdtempSync(join(tmpdir(), 'clawray-sbx-limits-'));
  });
  afterEach(() => {
    rmSync(workspace, { recursive: true, force: true });
  });

  it('refuses an unknown option rather than ignoring it', async () => {
    await expect(
      runSandboxed({ command: 'true', workspace, memoryMB: 10 } as unknown as Parameters<
        typeof runSandboxed
      >[0]),
    ).rejects.toThrow(/unknown option 'memoryMB'/);
  });

  it.skipIf(!asRoot)('stops a fork loop at maxProcesses (256)', async () => {
    const r = await runSandboxed({
      command: [
        'perl',
        '-e',
        'for my $i (1..1000) { my $p = fork; if (!defined $p) { print "$i\\n"; exit 0 } if ($p == 0) { sleep 30; exit } } print "none\\n"',
      ],
      workspace,
      uid: ISOLATED_UID,
      gid: ISOLATED_UID,
      timeoutMs: 20_000,
    });
    expect(r.exitCode).toBe(0);
    const failedAt = Number(r.stdout.trim());
    // The perl itself (and prlimit before it) count: the 256th process cannot be forked.
    expect(failedAt).toBeGreaterThan(200);
    expect(failedAt).toBeLessThanOrEqual(SANDBOX_DEFAULTS.maxProcesses);
    // The sleeping children died with the sandbox's pid namespace.
    const deadline = Date.now() + 3000;
    while (processesOf(ISOLATED_UID).length > 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    expect(processesOf(ISOLATED_UID)).toEqual([]);
  });

  it('fails a 4 GiB allocation (memoryMb 2048) and allows a small one', async () => {
    const alloc = (mb: number) =>
      runSandboxed({
        command: ['perl', '-e', `my $x = "\\0" x (${mb} * 1024 * 1024); print "allocated\\n"`],
        workspace,
      });
    const small = await alloc(64);
    expect(small.stdout).toBe('allocated\n');
    const big = await alloc(4096);
    expect(big.exitCode).not.toBe(0);
    expect(big.stdout).toBe('');
    expect(big.stderr).toMatch(/out of memory/i);
  });

  it.skipIf(!existsSync('/usr/bin/python3'))('fails a 4 GiB allocation in python', async () => {
    const r = await runSandboxed({ command: ['python3', '-c', 'x = bytearray(4 * 2**30)'], workspace });
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain('MemoryError');
  });

  it('fails a 1 GiB file (maxFileMb 256); a raised limit allows a bigger one', async () => {
    const r = await runSandboxed({ command: 'head -c 1073741824 /dev/zero > big', workspace });
    expect(r.exitCode).not.toBe(0);
    expect(statSync(join(workspace, 'big')).size).toBe(SANDBOX_DEFAULTS.maxFileMb * MIB);
    rmSync(join(workspace, 'big'));
    const allocate = 'fallocate -l 300M f && stat -c %s f';
    const refused = await runSandboxed({ command: allocate, workspace });
    expect(refused.exitCode).not.toBe(0);
    const raised = await runSandboxed({ command: allocate, workspace, maxFileMb: 512 });
    expect(raised.stderr).toBe('');
    expect(raised.stdout).toBe(`${300 * MIB}\n`);
  });

  it('bounds /tmp: 64 MiB of bytes, and (as root) 16 384 inodes', async () => {
    const bytes = await runSandboxed({ command: 'head -c 100000000 /dev/zero > /tmp/x', workspace });
    expect(bytes.exitCode).not.toBe(0);
    expect(bytes.stderr).toMatch(/No space left on device/);
    if (!asRoot) return;
    const files = await runSandboxed({
      command: [
        'perl',
        '-e',
        'for (1..100000) { open my $f, ">", "/tmp/f$_" or die "stopped at $_: $!\\n"; close $f }',
      ],
      workspace,
    });
    expect(files.exitCode).not.toBe(0);
    expect(files.stderr).toMatch(/stopped at \d+: No space left on device/);
    expect(Number(/stopped at (\d+)/.exec(files.stderr)?.[1])).toBeLessThanOrEqual(
      SANDBOX_DEFAULTS.tmpMaxFiles,
    );
  });

  it('fails a run that leaves 100 000 files in the workspace (workspaceMaxFiles 50 000)', async () => {
    const r = await runSandboxed({
      command: ['perl', '-e', 'for (1..100000) { open my $f, ">", "f$_" or die "$_: $!"; close $f }'],
      workspace,
    });
    expect(r.limitExceeded).toBe('workspaceMaxFiles');
    expect(r.exitCode).toBeNull();
    expect(r.stderr).toMatch(/past workspaceMaxFiles=50000 files/);
    expect(r.workspaceUsage.files).toBeGreaterThan(SANDBOX_DEFAULTS.workspaceMaxFiles);
  });

  it('fails a run that fills the disk past workspaceMaxMb (2048), and one that was already over', async () => {
    const r = await runSandboxed({
      command: 'for i in 1 2 3 4 5 6 7 8 9; do fallocate -l 250M f$i || exit; done; sleep 5',
      workspace,
    });
    expect(r.limitExceeded).toBe('workspaceMaxMb');
    expect(r.exitCode).toBeNull();
    expect(r.signal).toBe('SIGKILL');
    expect(r.stderr).toMatch(/past workspaceMaxMb=2048 MiB; the run was killed/);
    // Cleaning up brings the workspace back under its budget, and the runs work again.
    const clean = await runSandboxed({ command: 'rm f1 f2 f3 f4 f5 f6 f7 f8 f9; echo ok', workspace });
    expect(clean.limitExceeded).toBeUndefined();
    expect(clean.stdout).toBe('ok\n');
    expect((await measureWorkspace(workspace)).bytes).toBeLessThan(MIB);
    // A raised budget allows what the default refused.
    const raised = await runSandboxed({
      command: 'for i in 1 2 3 4 5 6 7 8 9; do fallocate -l 250M f$i || exit; done',
      workspace,
      workspaceMaxMb: 4096,
    });
    expect(raised.stderr).toBe('');
    expect(raised.exitCode).toBe(0);
  });

  it('runs ordinary programs under the defaults: shell, perl, node, git, a C compiler', async () => {
    const cc = existsSync('/usr/bin/cc');
    const r = await runSandboxed({
      command: [
        'sh',
        '-c',
        [
          'set -e',
          'echo hi | tr a-z A-Z',
          "perl -e 'print 6 * 7, qq{\\n}'",
          `node -e "console.log(require('os').cpus().length > 0)"`,
          'git init -q r && git -C r -c user.name=a -c user.email=a@b commit -q --allow-empty -m msg && git -C r log --format=%s',
          cc
            ? 'printf \'#include <stdio.h>\\nint main(){puts("c");}\' > m.c && cc -o m m.c && ./m'
            : 'echo c',
        ].join('\n'),
      ],
      workspace,
      env: { HOME: '/tmp' },
      timeoutMs: 60_000,
    });
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('HI\n42\ntrue\nmsg\nc\n');
    expect(r.exitCode).toBe(0);
  });
});
