/**
 * Picks the TensorFlow.js backend for this process: the native `tensorflow` backend
 * (`@tensorflow/tfjs-node-gpu`, then `@tensorflow/tfjs-node`) when one of them is installed,
 * else the WebAssembly backend (XNNPACK kernels, several times faster than plain JS), else the
 * pure-JS `cpu` backend, which always works. The choice is process-wide (TensorFlow.js has
 * one engine per process).
 *
 * The wasm backend lacks some gradient kernels (`UnsortedSegmentSum`, so `tf.gather` has no
 * gradient there): code that differentiates through an embedding uses the one-hot path of
 * `TfjsDecoder`.
 */
import { createRequire } from 'node:module';
import { dirname, sep } from 'node:path';
import * as tf from '@tensorflow/tfjs';

export type TfjsBackendName = 'tensorflow' | 'wasm' | 'cpu';

const DEFAULT_ORDER: TfjsBackendName[] = ['tensorflow', 'wasm', 'cpu'];

/** Native bindings, best first. Neither is a dependency; they are used when an image has one. */
const NATIVE_PACKAGES = ['@tensorflow/tfjs-node-gpu', '@tensorflow/tfjs-node'];

let nativeLoaded: Promise<boolean> | undefined;
let wasmRegistered: Promise<boolean> | undefined;

async function loadNative(): Promise<boolean> {
  nativeLoaded ??= (async () => {
    for (const pkg of NATIVE_PACKAGES) {
      try {
        // A variable specifier: these packages are optional and absent from type checking.
        const specifier: string = pkg;
        await import(specifier);
        if (tf.findBackendFactory('tensorflow') != null) {
          return true;
        }
      } catch {
        // not installed or its native library does not load here: try the next one
      }
    }
    return false;
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

async function trySet(name: TfjsBackendName): Promise<boolean> {
  if (tf.getBackend() === name) return true;
  if (name === 'tensorflow' && !(await loadNative())) return false;
  if (name === 'wasm' && !(await registerWasm())) return false;
  try {
    // setBackend logs and resolves false (rather than throwing) when initialisation fails.
    return await tf.setBackend(name);
  } catch {
    return false;
  }
}

/**
 * Selects and initialises a backend and returns its name. `preferred` is tried first; when it
 * cannot be used here the usual order (tensorflow, wasm, cpu) follows, so the result says what
 * was really chosen.
 */
export async function selectBackend(preferred?: TfjsBackendName): Promise<TfjsBackendName> {
  const order =
    preferred === undefined ? DEFAULT_ORDER : [preferred, ...DEFAULT_ORDER.filter((n) => n !== preferred)];
  for (const name of order) {
    if (await trySet(name)) {
      await tf.ready();
      return name;
    }
  }
  // cpu is built into @tensorflow/tfjs and cannot fail to initialise
  throw new Error(`no TensorFlow.js backend could be initialised (tried ${order.join(', ')})`);
}
