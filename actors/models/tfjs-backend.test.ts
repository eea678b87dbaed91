/**
 * How a trainer picks its TensorFlow.js backend (`train.backend`): the `auto` order with fake
 * probes (what is installed, whether a Vulkan adapter answers and whether it is hardware), a
 * named backend that cannot run refused with its reason, and the real thing in a child process
 * whose Vulkan loader finds no driver: `auto` on a shard that holds a GPU falls back to wasm and
 * says why.
 */
import { execFile } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { distEntry } from '../../common/package-root.js';
import {
  type BackendProbes,
  BackendUnavailableError,
  chooseBackend,
  type TfjsBackendName,
} from './tfjs-backend.js';

const execFileAsync = promisify(execFile);

/** Probes of a machine: what each backend answers, and which native package is installed. */
function machine(
  answers: Partial<Record<TfjsBackendName, string | { device: string; software?: boolean }>>,
  nativePackage?: string,
): BackendProbes & { tried: string[] } {
  const tried: string[] = [];
  return {
    tried,
    nativePackage: async () => nativePackage,
    trySet: async (name, options) => {
      tried.push(name);
      const answer = answers[name];
      if (answer === undefined || typeof answer === 'string') {
        return { ok: false, reason: answer ?? `${name} is not here` };
      }
      if (answer.software && options?.allowSoftware === false) {
        return {
          ok: false,
          reason: `the only Vulkan adapter is ${answer.device}, which trains slower than wasm`,
        };
      }
      return { ok: true, device: answer.device, software: answer.software };
    },
  };
}

const WASM = { device: 'CPU (WebAssembly, XNNPACK)' };
const H200 = { device: 'NVIDIA H200 (nvidia hopper, Vulkan)' };
const LAVAPIPE = { device: 'llvmpipe (mesa software, Vulkan, a software renderer)', software: true };

describe('chooseBackend', () => {
  it('auto on a GPU shard: tfjs-node-gpu when installed, before WebGPU', async () => {
    const probes = machine(
      { tensorflow: { device: 'libtensorflow' }, webgpu: H200, wasm: WASM },
      '@tensorflow/tfjs-node-gpu',
    );
    expect(await chooseBackend('auto', { holdsGpu: true }, probes)).toEqual({
      backend: 'tensorflow',
      device: 'libtensorflow',
      skipped: [],
    });
  });

  it('auto on a GPU shard without tfjs-node-gpu: WebGPU on a hardware adapter', async () => {
    const probes = machine({ webgpu: H200, wasm: WASM });
    const choice = await chooseBackend('auto', { holdsGpu: true }, probes);
    expect(choice).toEqual({
      backend: 'webgpu',
      device: H200.device,
      skipped: ['tensorflow: @tensorflow/tfjs-node-gpu is not installed'],
    });
  });

  it('auto on a GPU shard with no adapter, or only lavapipe, or no Dawn package: wasm, saying why', async () => {
    for (const [webgpu, why] of [
      ['no Vulkan adapter answered', /webgpu: no Vulkan adapter answered/],
      [LAVAPIPE, /webgpu: the only Vulkan adapter is llvmpipe .* slower than wasm/],
      ["the optional package 'webgpu' (Dawn for Node) is not installed", /npm|webgpu' \(Dawn/],
    ] as const) {
      const choice = await chooseBackend('auto', { holdsGpu: true }, machine({ webgpu, wasm: WASM }));
      expect(choice.backend).toBe('wasm');
      expect(choice.skipped.join('; ')).toMatch(why);
    }
  });

  it('auto on a GPU shard with tfjs-node (CPU) only: WebGPU first, then tfjs-node', async () => {
    const cpuNative = { tensorflow: { device: 'CPU (libtensorflow)' }, wasm: WASM };
    expect(
      (
        await chooseBackend(
          'auto',
          { holdsGpu: true },
          machine({ ...cpuNative, webgpu: H200 }, '@tensorflow/tfjs-node'),
        )
      ).backend,
    ).toBe('webgpu');
    const noGpu = await chooseBackend(
      'auto',
      { holdsGpu: true },
      machine(cpuNative, '@tensorflow/tfjs-node'),
    );
    expect(noGpu.backend).toBe('tensorflow');
  });

  it('auto on a shard without a GPU never opens WebGPU', async () => {
    const probes = machine({ webgpu: H200, wasm: WASM });
    expect((await chooseBackend('auto', { holdsGpu: false }, probes)).backend).toBe('wasm');
    expect(probes.tried).not.toContain('webgpu');
  });

  it('a named backend runs (lavapipe too) or is refused with its reason, never swapped', async () => {
    expect((await chooseBackend('webgpu', { holdsGpu: false }, machine({ webgpu: LAVAPIPE }))).device).toBe(
      LAVAPIPE.device,
    );
    const refused = chooseBackend(
      'webgpu',
      { holdsGpu: true },
      machine({ webgpu: 'no Vulkan adapter answered', wasm: WASM }),
    );
    await expect(refused).rejects.toBeInstanceOf(BackendUnavailableError);
    await expect(refused).rejects.toThrow(
      /train\.backend webgpu cannot run here: no Vulkan adapter answered; set train\.backend: auto/,
    );
  });
});

describe('chooseBackend in a process whose Vulkan loader finds no driver', () => {
  it('auto on a GPU shard trains on wasm and names the reason; webgpu by name is refused', async () => {
    const url = pathToFileURL(distEntry('actors/models/tfjs-backend')).href;
    const script = `
      const { chooseBackend } = await import(${JSON.stringify(url)});
      const auto = await chooseBackend('auto', { holdsGpu: true });
      let named;
      try { await chooseBackend('webgpu', { holdsGpu: true }); } catch (err) { named = err.message; }
      console.log(JSON.stringify({ auto, named }));
      process.exit(0);`;
    const { stdout } = await execFileAsync(process.execPath, ['--input-type=module', '-e', script], {
      env: {
        ...process.env,
        VK_ICD_FILENAMES: '/nonexistent/icd.json',
        VK_DRIVER_FILES: '/nonexistent/icd.json',
      },
      timeout: 60_000,
    });
    const { auto, named } = JSON.parse(stdout.trim().split('\n').at(-1)!);
    expect(auto.backend).toBe('wasm');
    expect(auto.device).toBe('CPU (WebAssembly, XNNPACK)');
    // Either no adapter answered, or (an install without the optional package) Dawn is absent.
    expect(auto.skipped.join('; ')).toMatch(
      /webgpu: (no Vulkan adapter answered|the optional package 'webgpu')/,
    );
    expect(named).toMatch(/^train\.backend webgpu cannot run here: /);
  });
});
