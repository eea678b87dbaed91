/**
 * The seccomp filter every sandboxed command runs under (bubblewrap's `--seccomp FD`): a classic
 * BPF program, assembled here so the sandbox needs no libseccomp. It refuses with EPERM what model-
 * written code never needs and what kernel exploits and sandbox escapes start from — creating user
 * namespaces (the door to "root" inside one, and to much of the kernel's attack surface), mounts,
 * ptrace, kernel modules, kexec, bpf, perf events, keyrings, userfaultfd, io_uring, handle-based
 * opens, swap, reboot, accounting, clock setting — close to Docker's default profile and to what
 * Codex and the Terminal-Bench harnesses run agents under.
 *
 * The program, for the one architecture it is built for:
 *   1. the `arch` field of `seccomp_data` must be that architecture, else the process is killed
 *      (a 32-bit `int 0x80` on x86_64 would otherwise reach syscalls by other numbers);
 *   2. on x86_64, x32 syscall numbers (bit 30 set) kill the process for the same reason;
 *   3. clone with any CLONE_NEW* flag and unshare with any → EPERM (fork, threads, `unshare -f`
 *      style calls without namespaces still work); clone3 → ENOSYS, because its flags live in
 *      memory a filter cannot read: glibc and musl then fall back to clone, which is checked;
 *   4. ioctl TIOCSTI / TIOCLINUX (typing into the controlling terminal) → EPERM;
 *   5. each syscall of DENIED → EPERM; everything else is allowed.
 *
 * `struct sock_filter` is 8 bytes: u16 code, u8 jt, u8 jf, u32 k (host byte order; both
 * architectures here are little-endian). `struct seccomp_data`: u32 nr @0, u32 arch @4,
 * u64 instruction_pointer @8, u64 args[6] @16.
 */
import { ConfigError } from '../../../common/errors.js';

export type SeccompArch = 'x64' | 'arm64';

// Opcodes (linux/filter.h, linux/bpf_common.h).
const BPF_LD_W_ABS = 0x00 | 0x00 | 0x20; // BPF_LD | BPF_W | BPF_ABS
const BPF_JEQ_K = 0x05 | 0x10 | 0x00; // BPF_JMP | BPF_JEQ | BPF_K
const BPF_JGE_K = 0x05 | 0x30 | 0x00; // BPF_JMP | BPF_JGE | BPF_K
const BPF_JSET_K = 0x05 | 0x40 | 0x00; // BPF_JMP | BPF_JSET | BPF_K
const BPF_RET_K = 0x06 | 0x00; // BPF_RET | BPF_K

// Return values (linux/seccomp.h) and errnos.
export const SECCOMP_RET_KILL_PROCESS = 0x80000000;
export const SECCOMP_RET_ERRNO = 0x00050000;
export const SECCOMP_RET_ALLOW = 0x7fff0000;
export const EPERM = 1;
export const ENOSYS = 38;

// seccomp_data offsets; the low 32 bits of a u64 argument come first on little-endian machines.
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
const argLow = (i: number) => 16 + 8 * i;

/** AUDIT_ARCH_* (linux/audit.h). */
export const AUDIT_ARCH: Record<SeccompArch, number> = { x64: 0xc000003e, arm64: 0xc00000b7 };
const X32_SYSCALL_BIT = 0x40000000;

/** Every CLONE_NEW* flag that clone(2) takes (NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET). */
export const CLONE_NAMESPACE_FLAGS =
  0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000;
/** unshare(2) also takes CLONE_NEWTIME. */
const UNSHARE_NAMESPACE_FLAGS = CLONE_NAMESPACE_FLAGS | 0x00000080;
const TIOCSTI = 0x5412;
const TIOCLINUX = 0x541c;

/**
 * Syscall numbers per architecture (arch/x86/entry/syscalls/syscall_64.tbl; arm64 uses the generic
 * table, include/uapi/asm-generic/unistd.h). seccomp.test.ts checks them against the installed
 * kernel headers.
 */
export const SYSCALLS: Record<SeccompArch, Record<string, number>> = {
  x64: {
    ioctl: 16,
    ptrace: 101,
    syslog: 103,
    uselib: 134,
    vhangup: 153,
    pivot_root: 155,
    _sysctl: 156,
    acct: 163,
    settimeofday: 164,
    mount: 165,
    umount2: 166,
    swapon: 167,
    swapoff: 168,
    reboot: 169,
    sethostname: 170,
    setdomainname: 171,
    iopl: 172,
    ioperm: 173,
    create_module: 174,
    init_module: 175,
    delete_module: 176,
    get_kernel_syms: 177,
    query_module: 178,
    quotactl: 179,
    nfsservctl: 180,
    lookup_dcookie: 212,
    clock_settime: 227,
    add_key: 248,
    request_key: 249,
    keyctl: 250,
    kexec_load: 246,
    unshare: 272,
    clone: 56,
    perf_event_open: 298,
    fanotify_init: 300,
    open_by_handle_at: 304,
    clock_adjtime: 305,
    setns: 308,
    process_vm_readv: 310,
    process_vm_writev: 311,
    kcmp: 312,
    finit_module: 313,
    kexec_file_load: 320,
    bpf: 321,
    userfaultfd: 323,
    io_uring_setup: 425,
    io_uring_enter: 426,
    io_uring_register: 427,
    open_tree: 428,
    move_mount: 429,
    fsopen: 430,
    fsconfig: 431,
    fsmount: 432,
    fspick: 433,
    clone3: 435,
    pidfd_getfd: 438,
    mount_setattr: 442,
    quotactl_fd: 443,
  },
  arm64: {
    lookup_dcookie: 18,
    ioctl: 29,
    umount2: 39,
    mount: 40,
    pivot_root: 41,
    nfsservctl: 42,
    vhangup: 58,
    quotactl: 60,
    acct: 89,
    unshare: 97,
    kexec_load: 104,
    init_module: 105,
    delete_module: 106,
    clock_settime: 112,
    syslog: 116,
    ptrace: 117,
    reboot: 142,
    sethostname: 161,
    setdomainname: 162,
    settimeofday: 170,
    add_key: 217,
    request_key: 218,
    keyctl: 219,
    clone: 220,
    swapon: 224,
    swapoff: 225,
    perf_event_open: 241,
    fanotify_init: 262,
    open_by_handle_at: 265,
    clock_adjtime: 266,
    setns: 268,
    process_vm_readv: 270,
    process_vm_writev: 271,
    kcmp: 272,
    finit_module: 273,
    bpf: 280,
    userfaultfd: 282,
    kexec_file_load: 294,
    io_uring_setup: 425,
    io_uring_enter: 426,
    io_uring_register: 427,
    open_tree: 428,
    move_mount: 429,
    fsopen: 430,
    fsconfig: 431,
    fsmount: 432,
    fspick: 433,
    clone3: 435,
    pidfd_getfd: 438,
    mount_setattr: 442,
    quotactl_fd: 443,
  },
};

/**
 * Refused outright with EPERM. Names missing from an architecture's table (iopl on arm64, the
 * long-gone module syscalls) do not exist there and need no rule.
 */
export const DENIED: readonly string[] = [
  // namespaces: entering one (creating them is checked on clone/unshare's flags)
  'setns',
  // mounts, old and new API
  'mount',
  'umount2',
  'pivot_root',
  'open_tree',
  'move_mount',
  'fsopen',
  'fsconfig',
  'fsmount',
  'fspick',
  'mount_setattr',
  // reading or writing other processes
  'ptrace',
  'process_vm_readv',
  'process_vm_writev',
  'kcmp',
  'pidfd_getfd',
  // the kernel itself
  'init_module',
  'finit_module',
  'delete_module',
  'create_module',
  'get_kernel_syms',
  'query_module',
  'kexec_load',
  'kexec_file_load',
  'bpf',
  'perf_event_open',
  'userfaultfd',
  'io_uring_setup',
  'io_uring_enter',
  'io_uring_register',
  'keyctl',
  'add_key',
  'request_key',
  'lookup_dcookie',
  'syslog',
  '_sysctl',
  'uselib',
  'nfsservctl',
  // file handles open anything on a file system, past the mount namespace (the "shocker" escape)
  'open_by_handle_at',
  'fanotify_init',
  // the machine
  'reboot',
  'swapon',
  'swapoff',
  'acct',
  'quotactl',
  'quotactl_fd',
  'vhangup',
  'iopl',
  'ioperm',
  'settimeofday',
  'clock_settime',
  'clock_adjtime',
  'sethostname',
  'setdomainname',
];

interface Instruction {
  code: number;
  /** A label, resolved to an offset from the next instruction. */
  jt?: string;
  jf?: string;
  k: number;
}

/**
 * A tiny assembler: instructions with symbolic jump targets; `label()` marks the next instruction.
 * Classic BPF jumps only forward, by at most 255 instructions; `assemble` checks both.
 */
class Program {
  private readonly code: Instruction[] = [];
  private readonly labels = new Map<string, number>();

  label(name: string): this {
    if (this.labels.has(name)) throw new Error(`seccomp: label ${name} defined twice`);
    this.labels.set(name, this.code.length);
    return this;
  }
  load(offset: number): this {
    this.code.push({ code: BPF_LD_W_ABS, k: offset });
    return this;
  }
  /** if (A == k) goto jt else goto jf; an absent target means the next instruction. */
  jeq(k: number, jt?: string, jf?: string): this {
    this.code.push({ code: BPF_JEQ_K, k, jt, jf });
    return this;
  }
  jge(k: number, jt?: string, jf?: string): this {
    this.code.push({ code: BPF_JGE_K, k, jt, jf });
    return this;
  }
  /** if (A & k) goto jt else goto jf */
  jset(k: number, jt?: string, jf?: string): this {
    this.code.push({ code: BPF_JSET_K, k, jt, jf });
    return this;
  }
  ret(k: number): this {
    this.code.push({ code: BPF_RET_K, k });
    return this;
  }

  assemble(): Buffer {
    const out = Buffer.alloc(this.code.length * 8);
    this.code.forEach((ins, i) => {
      const offset = (label: string | undefined): number => {
        if (label === undefined) return 0;
        const target = this.labels.get(label);
        if (target === undefined) throw new Error(`seccomp: undefined label ${label}`);
        const delta = target - (i + 1);
        if (delta < 0 || delta > 255) throw new Error(`seccomp: jump to ${label} out of range (${delta})`);
        return delta;
      };
      out.writeUInt16LE(ins.code, i * 8);
      out.writeUInt8(offset(ins.jt), i * 8 + 2);
      out.writeUInt8(offset(ins.jf), i * 8 + 3);
      out.writeUInt32LE(ins.k >>> 0, i * 8 + 4);
    });
    return out;
  }
}

/** The host's architecture as the filter names it, or a ConfigError for one it has no table for. */
export function hostSeccompArch(arch: string = process.arch): SeccompArch {
  if (arch === 'x64' || arch === 'arm64') return arch;
  throw new ConfigError(
    `sandbox: no seccomp filter for the ${arch} architecture (x64 and arm64 only); pass seccomp: false (--no-seccomp) to run without one`,
    { fields: { arch } },
  );
}

/** The compiled filter for `arch`: an array of `struct sock_filter`, as `bwrap --seccomp FD` reads it. */
export function buildSeccompFilter(arch: SeccompArch = hostSeccompArch()): Buffer {
  const nr = SYSCALLS[arch];
  const eperm = SECCOMP_RET_ERRNO | EPERM;
  const p = new Program();
  p.load(OFFSET_ARCH).jeq(AUDIT_ARCH[arch], undefined, 'kill');
  p.load(OFFSET_NR);
  if (arch === 'x64') p.jge(X32_SYSCALL_BIT, 'kill');
  p.jeq(nr.clone, 'clone');
  p.jeq(nr.unshare, 'unshare');
  p.jeq(nr.clone3, 'enosys');
  p.jeq(nr.ioctl, 'ioctl');
  for (const name of DENIED) {
    const n = nr[name];
    if (n !== undefined) p.jeq(n, 'eperm');
  }
  p.ret(SECCOMP_RET_ALLOW);
  // clone(flags, …): flags is the first argument on both architectures.
  p.label('clone').load(argLow(0)).jset(CLONE_NAMESPACE_FLAGS, 'eperm').ret(SECCOMP_RET_ALLOW);
  p.label('unshare').load(argLow(0)).jset(UNSHARE_NAMESPACE_FLAGS, 'eperm').ret(SECCOMP_RET_ALLOW);
  p.label('ioctl').load(argLow(1)).jeq(TIOCSTI, 'eperm').jeq(TIOCLINUX, 'eperm').ret(SECCOMP_RET_ALLOW);
  p.label('eperm').ret(eperm);
  p.label('enosys').ret(SECCOMP_RET_ERRNO | ENOSYS);
  p.label('kill').ret(SECCOMP_RET_KILL_PROCESS);
  return p.assemble();
}
