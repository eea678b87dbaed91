/**
 * The GPUs a container runtime gave this process. Kubernetes cannot pass extended resources
 * such as `nvidia.com/gpu` through the downward API, but the NVIDIA device plugin makes the
 * allocation visible inside the container: it sets NVIDIA_VISIBLE_DEVICES to the allocated
 * devices (indices or UUIDs, or with the volume-mounts strategy a directory holding one entry
 * per device) and the runtime mounts only those /dev/nvidiaN. CUDA numbers what it can see
 * 0..N-1, so the count is all a worker needs; KubeRay turns the pod's GPU limit into
 * `--num-gpus` for the same reason.
 */
import { readdirSync } from 'node:fs';

export interface ContainerGpus {
  ids: number[];
  /** Where the count came from, for the worker's start line and logs. */
  source: string;
}

export interface GpuAllocationProbe {
  env: NodeJS.ProcessEnv;
  /** Entry names of a directory; [] when it does not exist. */
  listDir(path: string): string[];
}

export function listDirOrEmpty(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}

const systemProbe: GpuAllocationProbe = { env: process.env, listDir: listDirOrEmpty };

/** The runtime's values that expose no GPU (`void` and empty: plain runc; `none`: driver only). */
const NO_GPU_VALUES = new Set(['', 'void', 'none']);

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/**
 * The container's GPUs, or undefined when nothing says the process runs under the NVIDIA
 * container runtime (then the caller asks nvidia-smi, as on a bare machine).
 */
export function containerGpus(probe: GpuAllocationProbe = systemProbe): ContainerGpus | undefined {
  const raw = probe.env.NVIDIA_VISIBLE_DEVICES;
  if (raw === undefined) return undefined;
  const value = raw.trim();
  const source = `NVIDIA_VISIBLE_DEVICES=${value || '""'}`;
  if (NO_GPU_VALUES.has(value)) return { ids: [], source };
  if (value === 'all') {
    // CUDA images set `all` themselves; with CDI injection (or a node without GPUs) the device
    // files are what the container really has.
    const devices = probe.listDir('/dev').filter((name) => /^nvidia\d+$/.test(name));
    return { ids: range(devices.length), source: `${devices.length} /dev/nvidiaN (${source})` };
  }
  if (value.startsWith('/')) {
    const entries = probe.listDir(value).filter((name) => !name.startsWith('.'));
    return { ids: range(entries.length), source: `${entries.length} entries of ${value}` };
  }
  const devices = new Set(
    value
      .split(',')
      .map((d) => d.trim())
      .filter(Boolean),
  );
  return { ids: range(devices.size), source };
}
