/**
 * Picks the TensorFlow.js backend for this process: the native `tensorflow` backend
 * (`@tensorflow/tfjs-node-gpu`, then `@tensorflow/tfjs-node`) when one of them is installed,
 * TensorFlow.js's WebGPU backend on Dawn (the optional `webgpu` package: Vulkan on Linux) for a
 * process that holds a GPU, else the WebAssembly backend (XNNPACK kernels, several times faster
 * than plain JS), else the pure-JS `cpu` backend, which always works. The choice is
 * process-wide (TensorFlow.js has one engine per process).
 *
 * The wasm backend lacks some gradient kernels (`UnsortedSegmentSum`, so `tf.gather` has no
 * gradient there): code that differentiates through an embedding uses the one-hot path of
 * `TfjsDecoder`.
 *
 * WebGPU in Node: tfjs-backend-webgpu registers itself at import only when
 * `globalThis.navigator.gpu` exists, and its own device request (4.22) passes a feature as a
 * nested array, so the backend is registered here on a device this module requested from Dawn.
 * Node has no OffscreenCanvas: nothing may read a WebGPU tensor synchronously (`dataSync`);
 * reads are `await data()`.
 */
import { createRequire } from 'node:module';
import { dirname, sep } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { ConfigError, registerErrorClass } from '../../common/errors.js';

export type TfjsBackendName = 'tensorflow' | 'webgpu' | 'wasm' | 'cpu';

/** What a trainer may ask for (`train.backend`): one backend, or `auto` (chooseBackend). */
export type BackendRequest = 'auto' | TfjsBackendName;

/** A backend in use: its name, what it computes on, and why the ones before it were passed over. */
export interface BackendChoice {
  backend: TfjsBackendName;
  /** 'NVIDIA H200 (nvidia hopper, Vulkan)', 'CPU (WebAssembly, XNNPACK)', … */
  device: string;
  /** One line per backend tried before it and not used: 'webgpu: no Vulkan adapter answered …'. */
  skipped: string[];
}

/** Where WebGPU tensors may not exceed one storage binding (lavapipe: 128 MiB). */
export interface WebgpuLimits {
  maxStorageBufferBindingSize: number;
  maxBufferSize: number;
}

const DEFAULT_ORDER: TfjsBackendName[] = ['tensorflow', 'wasm', 'cpu'];

/** Native bindings, best first. Neither is a dependency; they are used when an image has one. */
const NATIVE_GPU_PACKAGE = '@tensorflow/tfjs-node-gpu';
const NATIVE_CPU_PACKAGE = '@tensorflow/tfjs-node';

type Probe = { ok: true; device: string; software?: boolean } | { ok: false; reason: string };

/** The little of WebGPU's API (as Dawn gives it) this module touches: no DOM types needed. */
interface DawnAdapterInfo {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  isFallbackAdapter?: boolean;
}
interface DawnDevice {
  destroy(): void;
}
interface DawnAdapter {
  readonly info: DawnAdapterInfo;
  readonly limits: Record<string, number>;
  requestDevice(descriptor: { requiredLimits: Record<string, number> }): Promise<DawnDevice>;
}
interface DawnGpu {
  requestAdapter(options: { powerPreference: 'high-performance' }): Promise<DawnAdapter | null>;
}

let nativeLoaded: Promise<{ pkg: string } | { reason: string }> | undefined;
let wasmRegistered: Promise<boolean> | undefined;
let webgpuRegistered: Promise<Probe> | undefined;
let webgpu:
  | { device: DawnDevice; limits: WebgpuLimits; gpu: DawnGpu; create(flags: string[]): DawnGpu }
  | undefined;

async function loadNative(): Promise<{ pkg: string } | { reason: string }> {
  nativeLoaded ??= (async () => {
    const reasons: string[] = [];
    for (const pkg of [NATIVE_GPU_PACKAGE, NATIVE_CPU_PACKAGE]) {
      try {
        // A variable specifier: these packages are optional and absent from type checking.
        const specifier: string = pkg;
        await import(specifier);
        if (tf.findBackendFactory('tensorflow') != null) return { pkg };
        reasons.push(`${pkg} registered no backend`);
      } catch (err) {
        // not installed or its native library does not load here: try the next one
        reasons.push(`${pkg}: ${firstLine(err)}`);
      }
    }
    return { reason: reasons.join('; ') };
  })();
  return nativeLoaded;
}

async function registerWasm(): Promise<boolean> {
  wasmRegistered ??= (async () => {
    try {
      const wasm = await import('@tensorflow/tfjs-backend-wasm');
      try {
        // In Node the .wasm binaries are read from the package's dist/ folder; naming it
        // explicitly keeps that working when this module is bundled or run from elsewhere.
        const require = createRequire(import.meta.url);
        wasm.setWasmPaths(dirname(require.resolve('@tensorflow/tfjs-backend-wasm')) + sep);
      } catch {
        // already initialised, or the package cannot be resolved as a file: use its default
      }
      return true;
    } catch {
      return false;
    }
  })();
  return wasmRegistered;
}

/** A CPU rasteriser posing as a GPU (Mesa's lavapipe): correct, and slower than wasm. */
function isSoftware(info: DawnAdapterInfo): boolean {
  return info.isFallbackAdapter === true || info.architecture === 'software';
}

/** 'NVIDIA H200 (nvidia hopper, Vulkan)'; lavapipe says it is a software renderer. */
function describeAdapter(info: DawnAdapterInfo): string {
  const name = info.description || info.device || info.vendor || 'unknown adapter';
  const kind = [info.vendor, info.architecture].filter((s) => s).join(' ');
  return `${name} (${kind ? `${kind}, ` : ''}Vulkan${isSoftware(info) ? ', a software renderer' : ''})`;
}

/** The first line of an error's message (Dawn's errors run on with stack lines). */
function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0].trim();
}

/**
 * Dawn (the `webgpu` package) on this machine's Vulkan driver: requests the adapter and a device
 * with the adapter's full buffer limits, and registers TensorFlow.js's WebGPU backend on it.
 * Once per process; the result says what it runs on or why it cannot run here.
 */
async function registerWebgpu(): Promise<Probe> {
  webgpuRegistered ??= (async (): Promise<Probe> => {
    let dawn: { create(flags: string[]): DawnGpu; globals: object };
    try {
      // Optional (optionalDependencies): a variable specifier keeps an install without it working.
      const specifier: string = 'webgpu';
      dawn = (await import(specifier)) as typeof dawn;
    } catch (err) {
      return {
        ok: false,
        reason: `the optional package 'webgpu' (Dawn for Node) is not installed or does not load here (${firstLine(err)}): npm install webgpu`,
      };
    }
    try {
      // GPUBufferUsage, GPUMapMode, … : the backend names them as globals, as in a browser.
      for (const [key, value] of Object.entries(dawn.globals)) {
        if (!(key in globalThis))
          Object.defineProperty(globalThis, key, { value, configurable: true, writable: true });
      }
      const gpu = dawn.create([]);
      const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
      if (!adapter) {
        return {
          ok: false,
          reason:
            "no Vulkan adapter answered (Dawn found no Vulkan driver: install the GPU driver's Vulkan ICD and libvulkan1)",
        };
      }
      const L = adapter.limits;
      const limits: WebgpuLimits = {
        maxStorageBufferBindingSize: L.maxStorageBufferBindingSize,
        maxBufferSize: L.maxBufferSize,
      };
      const device = await adapter.requestDevice({
        requiredLimits: {
          maxComputeWorkgroupStorageSize: L.maxComputeWorkgroupStorageSize,
          maxComputeWorkgroupsPerDimension: L.maxComputeWorkgroupsPerDimension,
          maxStorageBufferBindingSize: L.maxStorageBufferBindingSize,
          maxBufferSize: L.maxBufferSize,
          maxComputeWorkgroupSizeX: L.maxComputeWorkgroupSizeX,
          maxComputeInvocationsPerWorkgroup: L.maxComputeInvocationsPerWorkgroup,
        },
      });
      // The backend's constructor checks for navigator.gpu, as a browser has it.
      const global = globalThis as { navigator?: object };
      global.navigator ??= {};
      const nav = global.navigator as { gpu?: DawnGpu };
      Object.defineProperty(nav, 'gpu', { value: gpu, configurable: true, writable: true });
      const { WebGPUBackend } = await import('@tensorflow/tfjs-backend-webgpu');
      // Imported with navigator.gpu present it registered a factory of its own (whose device
      // request fails on Dawn): ours replaces it under the same name, where its kernels are.
      if (tf.findBackendFactory('webgpu') != null) tf.removeBackend('webgpu');
      const info = adapter.info;
      // The backend's types are the DOM's GPUDevice; Dawn's object is one.
      tf.registerBackend('webgpu', () => new WebGPUBackend(device as never, info as never), 0);
      webgpu = { device, limits, gpu, create: dawn.create };
      return { ok: true, device: describeAdapter(info), software: isSoftware(info) };
    } catch (err) {
      return { ok: false, reason: `Dawn could not open a WebGPU device here: ${firstLine(err)}` };
    }
  })();
  return webgpuRegistered;
}

/**
 * The names of every adapter Dawn can open here (once the webgpu backend is registered; else
 * empty). WebGPU hands out one adapter, and Vulkan does not honour CUDA_VISIBLE_DEVICES: on a
 * machine with several GPUs every process opens the same first one. Dawn lists them all when
 * asked for an adapter by a name none has.
 */
export async function webgpuAdapterNames(): Promise<string[]> {
  if (!webgpu) return [];
  try {
    await webgpu
      .create(['adapter=\u0001clawray: list the adapters'])
      .requestAdapter({ powerPreference: 'high-performance' });
    return [];
  } catch (err) {
    const text = err instanceof Error ? err.message : String(err);
    return [...text.matchAll(/^ \* backend: '[^']*', name: '(.*)'$/gm)].map((m) => m[1]);
  }
}

/** The WebGPU device's buffer limits, once the webgpu backend is registered (else undefined). */
export function webgpuLimits(): WebgpuLimits | undefined {
  return webgpu?.limits;
}

/**
 * Whether Dawn finds a Vulkan adapter here (null) or why not: what a WebGPU test file skips on.
 * Registers the webgpu backend without selecting it.
 */
export async function webgpuUnavailable(): Promise<string | null> {
  const probe = await registerWebgpu();
  return probe.ok ? null : probe.reason;
}

async function trySet(name: TfjsBackendName, { allowSoftware = true } = {}): Promise<Probe> {
  let device: string;
  if (name === 'tensorflow') {
    const native = await loadNative();
    if ('reason' in native)
      return { ok: false, reason: `neither ${NATIVE_GPU_PACKAGE} nor ${NATIVE_CPU_PACKAGE} loads here` };
    device =
      native.pkg === NATIVE_GPU_PACKAGE
        ? 'libtensorflow (CUDA when a GPU is visible)'
        : 'CPU (libtensorflow)';
  } else if (name === 'webgpu') {
    const probe = await registerWebgpu();
    if (!probe.ok) return probe;
    if (probe.software && !allowSoftware) {
      return {
        ok: false,
        reason: `the only Vulkan adapter is ${probe.device}, which trains slower than wasm`,
      };
    }
    device = probe.device;
  } else if (name === 'wasm') {
    if (!(await registerWasm()))
      return { ok: false, reason: '@tensorflow/tfjs-backend-wasm does not load here' };
    device = 'CPU (WebAssembly, XNNPACK)';
  } else {
    device = 'CPU (JavaScript)';
  }
  if (tf.getBackend() === name) return { ok: true, device };
  try {
    // setBackend logs and resolves false (rather than throwing) when initialisation fails.
    if (await tf.setBackend(name)) return { ok: true, device };
    return { ok: false, reason: `TensorFlow.js could not initialise the ${name} backend` };
  } catch (err) {
    return { ok: false, reason: `TensorFlow.js could not initialise the ${name} backend: ${firstLine(err)}` };
  }
}

/**
 * Selects and initialises a backend and returns its name. `preferred` is tried first; when it
 * cannot be used here the usual order (tensorflow, wasm, cpu) follows, so the result says what
 * was really chosen. WebGPU is used only when preferred (see chooseBackend for a trainer's rule).
 */
export async function selectBackend(preferred?: TfjsBackendName): Promise<TfjsBackendName> {
  const order =
    preferred === undefined ? DEFAULT_ORDER : [preferred, ...DEFAULT_ORDER.filter((n) => n !== preferred)];
  for (const name of order) {
    if ((await trySet(name)).ok) {
      await tf.ready();
      return name;
    }
  }
  // cpu is built into @tensorflow/tfjs and cannot fail to initialise
  throw new Error(`no TensorFlow.js backend could be initialised (tried ${order.join(', ')})`);
}

/** The backends `auto` tries, in order, for a process that holds GPUs or not. */
export function autoOrder(holdsGpu: boolean): Array<TfjsBackendName | 'tensorflow-gpu'> {
  // tfjs-node-gpu first (CUDA), then WebGPU on the GPU, then tfjs-node on the CPU, wasm, cpu.
  return holdsGpu ? ['tensorflow-gpu', 'webgpu', 'tensorflow', 'wasm', 'cpu'] : ['tensorflow', 'wasm', 'cpu'];
}

/** The collaborators chooseBackend asks (real ones by default; tests pass fakes). */
export interface BackendProbes {
  /**
   * Initialises and selects a backend, or says why it cannot run here; `allowSoftware: false`
   * refuses a WebGPU adapter that is a CPU rasteriser (lavapipe).
   */
  trySet(name: TfjsBackendName, options?: { allowSoftware?: boolean }): Promise<Probe>;
  /** Which native package provides `tensorflow` (undefined: none loads). */
  nativePackage(): Promise<string | undefined>;
}

const realProbes: BackendProbes = {
  trySet,
  nativePackage: async () => {
    const native = await loadNative();
    return 'pkg' in native ? native.pkg : undefined;
  },
};

/**
 * A trainer's backend (`train.backend`). `auto`: tfjs-node-gpu when installed; else, in a process
 * that holds a GPU, WebGPU when a hardware Vulkan adapter answers (not lavapipe, a CPU
 * rasteriser; `webgpu` by name takes it, as CI does); else tfjs-node; else wasm; else cpu —
 * each backend passed over is named with why. A named backend that cannot run here is refused
 * (the error says why and what to install), never swapped for another.
 */
export async function chooseBackend(
  request: BackendRequest,
  { holdsGpu }: { holdsGpu: boolean },
  probes: BackendProbes = realProbes,
): Promise<BackendChoice> {
  if (request !== 'auto') {
    const probe = await probes.trySet(request);
    if (!probe.ok) throw new BackendUnavailableError(request, probe.reason);
    await tf.ready();
    return { backend: request, device: probe.device, skipped: [] };
  }
  const skipped: string[] = [];
  for (const step of autoOrder(holdsGpu)) {
    if (step === 'tensorflow-gpu' || step === 'tensorflow') {
      const pkg = await probes.nativePackage();
      const wanted = step === 'tensorflow-gpu' ? NATIVE_GPU_PACKAGE : NATIVE_CPU_PACKAGE;
      // tfjs-node-gpu found at the first step has been taken; tfjs-node alone at the second.
      if (pkg !== wanted) {
        if (step === 'tensorflow-gpu') skipped.push(`tensorflow: ${NATIVE_GPU_PACKAGE} is not installed`);
        continue;
      }
    }
    const name: TfjsBackendName = step === 'tensorflow-gpu' ? 'tensorflow' : step;
    // auto wants the GPU the shard holds: a software Vulkan adapter is no such thing.
    const probe = await probes.trySet(name, name === 'webgpu' ? { allowSoftware: false } : undefined);
    if (probe.ok) {
      await tf.ready();
      return { backend: name, device: probe.device, skipped };
    }
    skipped.push(`${name}: ${probe.reason}`);
  }
  throw new Error(`no TensorFlow.js backend could be initialised (${skipped.join('; ')})`);
}

/** A backend named in `train.backend` cannot run in this process. */
export class BackendUnavailableError extends ConfigError {
  constructor(backend: TfjsBackendName, reason: string) {
    super(
      `train.backend ${backend} cannot run here: ${reason}; set train.backend: auto to train on the best backend that does`,
      { fields: { field: 'train.backend', backend, reason } },
    );
  }
}
registerErrorClass(BackendUnavailableError);

/**
 * Drops the WebGPU device (a process that keeps Dawn's GPU object referenced does not exit):
 * for tests and benches that end while the process goes on.
 */
export async function releaseWebgpu(): Promise<void> {
  if (!webgpu) return;
  if (tf.getBackend() === 'webgpu') await selectBackend('cpu');
  if (tf.findBackend('webgpu') != null || tf.findBackendFactory('webgpu') != null) tf.removeBackend('webgpu');
  webgpu.device.destroy();
  const nav = (globalThis as { navigator?: { gpu?: DawnGpu } }).navigator;
  if (nav?.gpu === webgpu.gpu) delete nav.gpu;
  webgpu = undefined;
  webgpuRegistered = undefined;
}
