/**
 * Finds the node's GPUs with `nvidia-smi`; a machine without it (or without GPUs) has none. The
 * worker registers them; a rollout engine whose KV cache lives on its GPU sizes its memory
 * budget by the one it holds.
 */
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

/**
 * The memory of the first GPU this process may use (CUDA_VISIBLE_DEVICES' first id, an index
 * or a UUID; else GPU 0), in bytes; undefined where nvidia-smi does not answer for it.
 */
export async function heldGpuMemoryBytes(timeoutMs = 5000): Promise<number | undefined> {
  const first = (process.env.CUDA_VISIBLE_DEVICES ?? '0').split(',')[0].trim();
  const gpus = await discoverGpus(timeoutMs);
  const gpu = gpus.find((g) => String(g.index) === first || g.uuid === first);
  return gpu && Number.isFinite(gpu.memoryMb) ? gpu.memoryMb * 2 ** 20 : undefined;
}
