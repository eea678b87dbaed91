/**
 * How many cores this process may compute on: the default size of onnxruntime's intra-op pool.
 *
 * onnxruntime's own default is one thread per physical core as its cpuinfo library sees them,
 * and where that library cannot read the topology (measured on a 2-core Firecracker VM) it
 * falls back to a single thread: a decode step there ran on one core of two (a batch-16 step
 * over 1,000 cached slots 8.0 ms against 4.7 ms with two threads). So clawray counts the cores
 * itself, as container-aware runtimes do (Go's automaxprocs, the JVM): physical cores (SMT
 * siblings counted once) among the CPUs the process may run on, capped by its cgroup's CPU
 * quota (a Kubernetes CPU limit), at least 1.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/** Reads a small system file; undefined when it cannot. */
export type SystemFileReader = (path: string) => string | undefined;

const readSystemFile: SystemFileReader = (path) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
};

/** CPU ids of a Linux cpulist ("0-3,8,10-11"). */
export function parseCpuList(list: string): number[] {
  const out: number[] = [];
  for (const part of list.trim().split(',')) {
    if (part === '') continue;
    const [from, to] = part.split('-').map(Number);
    for (let cpu = from; cpu <= (to ?? from); cpu++) out.push(cpu);
  }
  return out;
}

/**
 * The CPU quota of the process's cgroup (v2 `cpu.max`, v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`)
 * in cores, rounded up; undefined when unlimited or unknown.
 */
export function cgroupCpuQuota(read: SystemFileReader = readSystemFile): number | undefined {
  const v2 = read('/sys/fs/cgroup/cpu.max')?.trim().split(/\s+/);
  if (v2 && v2[0] !== 'max') {
    const [quota, period] = v2.map(Number);
    if (quota > 0 && period > 0) return Math.ceil(quota / period);
  }
  const quota = Number(read('/sys/fs/cgroup/cpu/cpu.cfs_quota_us')?.trim());
  const period = Number(read('/sys/fs/cgroup/cpu/cpu.cfs_period_us')?.trim());
  if (quota > 0 && period > 0) return Math.ceil(quota / period);
  return undefined;
}

/**
 * Physical cores among `cpus` (each core's SMT siblings counted once, by package and core id);
 * undefined when the topology cannot be read.
 */
export function physicalCores(
  cpus: readonly number[],
  read: SystemFileReader = readSystemFile,
): number | undefined {
  const cores = new Set<string>();
  for (const cpu of cpus) {
    const base = `/sys/devices/system/cpu/cpu${cpu}/topology`;
    const pkg = read(`${base}/physical_package_id`)?.trim();
    const core = read(`${base}/core_id`)?.trim();
    if (pkg === undefined || core === undefined) return undefined;
    cores.add(`${pkg}:${core}`);
  }
  return cores.size > 0 ? cores.size : undefined;
}

let ownCores: number | undefined;

/** The cores this process may compute on (see the module comment); read once per process (an engine opens a session at every weight update). */
export function cpuCores(): number {
  ownCores ??= countCores();
  return ownCores;
}

/** cpuCores from a given view of the system files and logical CPU count. */
export function countCores(
  read: SystemFileReader = readSystemFile,
  logical: number = availableParallelism(),
): number {
  // The CPUs the process may run on: its affinity as the kernel reports it for this process.
  const allowed = /^Cpus_allowed_list:\s*(\S+)/m.exec(read('/proc/self/status') ?? '')?.[1];
  const cpus = allowed ? parseCpuList(allowed) : [];
  const physical = (cpus.length > 0 ? physicalCores(cpus, read) : undefined) ?? logical;
  return Math.max(1, Math.min(physical, logical, cgroupCpuQuota(read) ?? Number.POSITIVE_INFINITY));
}
