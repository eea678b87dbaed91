import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import {
  cgroupCpuQuota,
  countCores,
  cpuCores,
  parseCpuList,
  physicalCores,
  type SystemFileReader,
} from './cpu-cores.js';

/** A machine of `cores` cores × `smt` threads each (CPU c is core ⌊c / smt⌋), allowed `allowed`. */
function machine(
  cores: number,
  smt: number,
  allowed: string,
  extra: Record<string, string> = {},
): SystemFileReader {
  const files: Record<string, string> = {
    '/proc/self/status': `Name:\tnode\nCpus_allowed_list:\t${allowed}\n`,
    ...extra,
  };
  for (let cpu = 0; cpu < cores * smt; cpu++) {
    files[`/sys/devices/system/cpu/cpu${cpu}/topology/physical_package_id`] = '0\n';
    files[`/sys/devices/system/cpu/cpu${cpu}/topology/core_id`] = `${Math.floor(cpu / smt)}\n`;
  }
  return (path) => files[path];
}

describe('cpuCores', () => {
  it('parses cpulists', () => {
    expect(parseCpuList('0-3,8,10-11\n')).toEqual([0, 1, 2, 3, 8, 10, 11]);
    expect(parseCpuList('5')).toEqual([5]);
  });

  it('counts physical cores among the allowed CPUs, SMT siblings once', () => {
    expect(countCores(machine(8, 2, '0-15'), 16)).toBe(8);
    expect(countCores(machine(8, 2, '0-3'), 4)).toBe(2);
    expect(countCores(machine(2, 1, '0-1'), 2)).toBe(2);
  });

  it("caps them by the cgroup's CPU quota (v2 and v1), rounding a fraction up", () => {
    expect(cgroupCpuQuota(machine(1, 1, '0', { '/sys/fs/cgroup/cpu.max': 'max 100000\n' }))).toBeUndefined();
    expect(countCores(machine(32, 2, '0-63', { '/sys/fs/cgroup/cpu.max': '400000 100000\n' }), 64)).toBe(4);
    expect(countCores(machine(32, 2, '0-63', { '/sys/fs/cgroup/cpu.max': '150000 100000\n' }), 64)).toBe(2);
    const v1 = {
      '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '300000\n',
      '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000\n',
    };
    expect(countCores(machine(32, 2, '0-63', v1), 64)).toBe(3);
    expect(countCores(machine(32, 2, '0-63', { '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '-1\n' }), 64)).toBe(
      32,
    );
  });

  it('falls back to the logical CPUs without a readable topology, and is at least 1', () => {
    expect(physicalCores([0, 1], () => undefined)).toBeUndefined();
    expect(countCores(() => undefined, 6)).toBe(6);
    expect(countCores(machine(1, 1, '0', { '/sys/fs/cgroup/cpu.max': '10000 100000' }), 1)).toBe(1);
  });

  it('gives a whole number of cores within what this machine has', () => {
    const n = cpuCores();
    expect(Number.isInteger(n) && n >= 1 && n <= availableParallelism()).toBe(true);
    expect(cpuCores()).toBe(countCores());
  });
});
