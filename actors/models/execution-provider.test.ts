import { afterEach, describe, expect, it } from 'vitest';
import { gpuDeviceCount, holdsGpu, providerAttempts, webgpuByDefault } from './execution-provider.js';

describe('execution provider order', () => {
  const saved = process.env.CUDA_VISIBLE_DEVICES;
  afterEach(() => {
    if (saved === undefined) delete process.env.CUDA_VISIBLE_DEVICES;
    else process.env.CUDA_VISIBLE_DEVICES = saved;
  });

  it('a provider named is the only one tried', () => {
    process.env.CUDA_VISIBLE_DEVICES = '0';
    expect(providerAttempts('webgpu')).toEqual(['webgpu']);
    expect(providerAttempts('cpu')).toEqual(['cpu']);
  });

  it('auto goes straight to the CPU in a process the cluster gave no GPU', () => {
    for (const none of ['', '-1']) {
      process.env.CUDA_VISIBLE_DEVICES = none;
      expect(holdsGpu()).toBe(false);
      expect(providerAttempts('auto')).toEqual(['cpu']);
    }
  });

  it("auto tries CUDA, then WebGPU only on the machine's one GPU, then the CPU", () => {
    process.env.CUDA_VISIBLE_DEVICES = '1';
    expect(holdsGpu()).toBe(true);
    // A declared GPU without a driver (this test's machine, unless it has a GPU) never starts
    // WebGPU, which a software Vulkan driver would otherwise answer; nor does a machine of
    // several GPUs, where Vulkan would not keep to the ids the head assigned.
    const one = gpuDeviceCount() === 1;
    expect(webgpuByDefault()).toBe(one);
    expect(providerAttempts('auto')).toEqual(one ? ['cuda', 'webgpu', 'cpu'] : ['cuda', 'cpu']);
  });
});
