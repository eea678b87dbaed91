/**
 * Memory shared between the processes of one host, for the same-host all-reduce
 * (shm-allreduce.ts): an anonymous memory file (`memfd_create`) mapped with `mmap(MAP_SHARED)`
 * into every rank, its pages seen as one Float32Array in each.
 *
 * Node cannot map memory itself; this calls libc through koffi (an optional dependency that
 * ships prebuilt N-API binaries, so nothing compiles or downloads at install). Where koffi or
 * `memfd_create` is missing (not Linux), `sharedMemory()` says why and the group keeps its
 * sockets.
 *
 * Why a memfd and not a file in /dev/shm: nothing is left behind when a rank dies (the memory
 * goes with the last mapping), and it is not bounded by /dev/shm's size (64 MiB in a default
 * container); it counts against the processes' memory limit like any other memory. Its pages
 * are reserved up front (`posix_fallocate`), so a host short of memory refuses the region at
 * creation rather than killing a rank with SIGBUS on its first write. A peer opens it through
 * `/proc/<pid>/fd/<fd>` of the creating rank (same user, same PID namespace: what ranks that
 * one node agent spawned are).
 */
import { closeSync, fstatSync, openSync } from 'node:fs';

/** One mapping of a shared region in this process. */
export interface SharedRegion {
  /** The whole region. Never touch it after `close`: the pages are unmapped. */
  readonly floats: Float32Array;
  /** What a peer passes to `open` (the creating rank's `/proc/<pid>/fd/<fd>`). */
  readonly path: string;
  readonly bytes: number;
  /** The creator stops sharing it (closes its descriptor); the mappings stay. */
  seal(): void;
  /** Unmaps the region in this process. */
  close(): void;
}

/** Creates and opens regions; a test can hand a group one that fails. */
export interface SharedMemory {
  create(bytes: number, name: string): SharedRegion;
  open(path: string, bytes: number): SharedRegion;
}

interface Libc {
  memfdCreate(name: string, flags: number): number;
  fallocate(fd: number, offset: number, len: number): number;
  mmap(addr: null, len: number, prot: number, flags: number, fd: number, offset: number): unknown;
  munmap(addr: unknown, len: number): number;
  address(pointer: unknown): bigint;
  view(pointer: unknown, len: number): ArrayBuffer;
  errno(): number;
}

const MFD_CLOEXEC = 1;
const PROT_READ_WRITE = 3;
const MAP_SHARED = 0x01;
/** Fault every page in at mmap time: touching a fresh mapping page by page runs at < 1 GB/s. */
const MAP_POPULATE = 0x8000;
const MAP_FAILED = 0xffffffffffffffffn;

let loaded: Promise<Libc | string> | undefined;

async function loadLibc(): Promise<Libc | string> {
  if (process.platform !== 'linux') return `memfd_create needs Linux (this is ${process.platform})`;
  let koffi: typeof import('koffi')['default'];
  try {
    koffi = (await import('koffi')).default;
  } catch (err) {
    return `the optional dependency koffi is not installed (${(err as Error).message.split('\n')[0]})`;
  }
  try {
    const libc = koffi.load('libc.so.6');
    const memfdCreate = libc.func('int memfd_create(const char *name, unsigned int flags)');
    const fallocate = libc.func('int posix_fallocate(int fd, int64_t offset, int64_t len)');
    const mmap = libc.func('void *mmap(void *addr, size_t len, int prot, int flags, int fd, int64_t off)');
    const munmap = libc.func('int munmap(void *addr, size_t len)');
    return {
      memfdCreate: (name, flags) => memfdCreate(name, flags) as number,
      fallocate: (fd, offset, len) => fallocate(fd, offset, len) as number,
      mmap: (addr, len, prot, flags, fd, offset) => mmap(addr, len, prot, flags, fd, offset),
      munmap: (addr, len) => munmap(addr, len) as number,
      address: (pointer) => koffi.address(pointer),
      view: (pointer, len) => koffi.view(pointer, len),
      errno: () => koffi.errno(),
    };
  } catch (err) {
    return `cannot call libc through koffi: ${(err as Error).message}`;
  }
}

/** Maps `fd` (`bytes` long) shared; the caller still owns `fd`. */
function mapShared(libc: Libc, fd: number, bytes: number, path: string, onSeal: () => void): SharedRegion {
  const pointer = libc.mmap(null, bytes, PROT_READ_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (libc.address(pointer) === MAP_FAILED)
    throw new Error(`mmap of ${bytes} bytes failed (errno ${libc.errno()})`);
  let mapped = true;
  return {
    floats: new Float32Array(libc.view(pointer, bytes)),
    path,
    bytes,
    seal: onSeal,
    close() {
      onSeal();
      if (!mapped) return;
      mapped = false;
      libc.munmap(pointer, bytes);
    },
  };
}

function bind(libc: Libc): SharedMemory {
  return {
    create(bytes, name) {
      const fd = libc.memfdCreate(name, MFD_CLOEXEC);
      if (fd < 0) throw new Error(`memfd_create failed (errno ${libc.errno()})`);
      let open = true;
      const seal = (): void => {
        if (open) closeSync(fd);
        open = false;
      };
      try {
        // posix_fallocate returns the error number itself.
        const err = libc.fallocate(fd, 0, bytes);
        if (err !== 0) throw new Error(`cannot reserve ${bytes} bytes of shared memory (errno ${err})`);
        return mapShared(libc, fd, bytes, `/proc/${process.pid}/fd/${fd}`, seal);
      } catch (err) {
        seal();
        throw err;
      }
    },
    open(path, bytes) {
      const fd = openSync(path, 'r+');
      try {
        const size = fstatSync(fd).size;
        if (size !== bytes) throw new Error(`${path} holds ${size} bytes, not ${bytes}`);
        return mapShared(libc, fd, bytes, path, () => {});
      } finally {
        // The mapping keeps the memory; the descriptor is not needed past mmap.
        closeSync(fd);
      }
    },
  };
}

/** The host's shared memory, or why there is none (loaded once per process). */
export async function sharedMemory(): Promise<SharedMemory | string> {
  loaded ??= loadLibc();
  const libc = await loaded;
  return typeof libc === 'string' ? libc : bind(libc);
}
