/**
 * The onnxruntime execution providers clawray's sessions (rollout decoders, PRM judges) ask for,
 * and the order 'auto' tries them in. onnxruntime-node for Linux x64 builds WebGPU in (Dawn over
 * the GPU driver's Vulkan); CUDA is a separate library its installer fetches, so a GPU machine
 * whose install could not fetch it still computes on the GPU through WebGPU.
 */
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export const EXECUTION_PROVIDERS = ['cuda', 'webgpu', 'cpu'] as const;
export type ExecutionProvider = (typeof EXECUTION_PROVIDERS)[number];

function list(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/**
 * GPUs whose driver device nodes this machine has (a container sees only the ones it was
 * given): NVIDIA's /dev/nvidiaN, AMD's render nodes beside /dev/kfd, WSL's /dev/dxg as one.
 */
export function gpuDeviceCount(): number {
  const dev = list('/dev');
  const nvidia = dev.filter((n) => /^nvidia\d+$/.test(n)).length;
  if (nvidia > 0) return nvidia;
  if (dev.includes('kfd')) return list('/dev/dri').filter((n) => n.startsWith('renderD')).length;
  return dev.includes('dxg') ? 1 : 0;
}

/**
 * Whether this process may use a GPU: CUDA_VISIBLE_DEVICES when set (a worker sets it on every
 * actor to the ids the head assigned, empty for none), else whether the machine has one (a
 * `clawray serve` started by hand on a GPU box).
 */
export function holdsGpu(): boolean {
  const visible = process.env.CUDA_VISIBLE_DEVICES;
  if (visible !== undefined) return visible !== '' && visible !== '-1';
  return gpuDeviceCount() > 0;
}

/**
 * Whether WebGPU may be chosen without being named: this process holds a GPU and it is the
 * machine's only one. Vulkan ignores CUDA_VISIBLE_DEVICES, so on a machine of several GPUs it
 * could compute on another actor's; and a worker that declares GPUs it does not have (tests, the
 * CPU overlay) would start it on a software Vulkan driver such as Mesa's lavapipe, far slower
 * than the CPU.
 */
export function webgpuByDefault(): boolean {
  return holdsGpu() && gpuDeviceCount() === 1;
}

/**
 * The providers to try, in order: the one named, or for 'auto' CUDA then WebGPU (where
 * `webgpuByDefault`) when this process holds a GPU, and the CPU last.
 */
export function providerAttempts(provider: ExecutionProvider | 'auto'): ExecutionProvider[] {
  if (provider !== 'auto') return [provider];
  if (!holdsGpu()) return ['cpu'];
  return webgpuByDefault() ? ['cuda', 'webgpu', 'cpu'] : ['cuda', 'cpu'];
}

/**
 * Whether onnxruntime-node's CUDA execution provider is installed: it ships as a separate library
 * beside the binding (the GPU image fetches it), which a plain npm install here does not have.
 */
export function cudaProviderInstalled(): boolean {
  try {
    const require = createRequire(import.meta.url);
    const binRoot = join(dirname(require.resolve('onnxruntime-node')), '..', 'bin');
    const stack = [binRoot];
    while (stack.length > 0) {
      const d = stack.pop()!;
      for (const e of readdirSync(d, { withFileTypes: true })) {
        if (e.isDirectory()) stack.push(join(d, e.name));
        else if (e.name.startsWith('libonnxruntime_providers_cuda')) return true;
      }
    }
  } catch {
    // no binding folder to look in: treat as CPU only
  }
  return false;
}
