/** Finds the node's GPUs with `nvidia-smi`; a machine without it (or without GPUs) has none. */
import { execFile } from 'node:child_process';

export interface GpuDevice {
  index: number;
  uuid: string;
  name: string;
  memoryMb: number;
}

export function parseNvidiaSmi(csv: string): GpuDevice[] {
  return csv
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
    .map((line) => {
      const [index, uuid, name, memory] = line.split(',').map((s) => s.trim());
      return { index: Number(index), uuid, name, memoryMb: Number.parseFloat(memory) };
    })
    .filter((g) => Number.isInteger(g.index));
}

export function discoverGpus(timeoutMs = 5000): Promise<GpuDevice[]> {
  return new Promise((resolve) => {
    execFile(
      'nvidia-smi',
      ['--query-gpu=index,uuid,name,memory.total', '--format=csv,noheader,nounits'],
      { timeout: timeoutMs },
      (err, stdout) => resolve(err ? [] : parseNvidiaSmi(stdout)),
    );
  });
}
