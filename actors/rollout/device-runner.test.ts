/**
 * The device runner end to end: its worker thread opens a WebGPU session on the weights the
 * engine's thread holds, passes the runner contract (admits, decodes, drops and scores like a
 * recompute on the CPU), keeps the engine's event loop free while it steps, splits each step's
 * time, and refuses work by name once its thread is gone. On lavapipe here and in CI.
 */
import { describe, expect, it } from 'vitest';
import { dims } from '../models/model-config.js';
import { randomWeights } from '../models/model-init.js';
import { exportDecoderExternal } from '../models/onnx-export.js';
import { DeviceRunner, DeviceRunnerError } from './device-runner.js';
import { runRunnerContract } from './runner.contract.js';
import { presetConfig } from './test-model.js';
import { webgpuUnavailable } from './webgpu-probe.test-support.js';

const noAdapter = await webgpuUnavailable();
if (noAdapter) console.warn(`WebGPU cases skipped: ${noAdapter}`);

if (noAdapter === null) {
  runRunnerContract('device (WebGPU, cache in device memory)', (m) => {
    const gqa = exportDecoderExternal(m.config, m.weights, { attention: 'gqa' });
    return DeviceRunner.load({
      ...gqa,
      layout: m.layout,
      provider: 'webgpu',
      prefillChunkTokens: m.prefillChunkTokens,
    });
  });
}

describe.skipIf(noAdapter !== null)('DeviceRunner (a worker thread, WebGPU)', () => {
  it('steps off the event loop, splits its time, and refuses by name once released', async () => {
    const config = presetConfig('tiny');
    const d = dims(config);
    const layout = { layers: d.layers, kvHeads: d.kvHeads, headDim: d.headDim, vocab: d.vocab };
    const gqa = exportDecoderExternal(config, randomWeights(d, 9), { attention: 'gqa' });
    const runner = await DeviceRunner.load({ ...gqa, layout, provider: 'webgpu', prefillChunkTokens: 3 });
    try {
      let turns = 0;
      const ticking = setInterval(() => turns++, 0);
      await runner.admit(
        [
          [2, 4, 6, 8],
          [1, 3],
        ],
        16,
      );
      clearInterval(ticking);
      // The engine's thread was free while the worker ran the step.
      expect(turns).toBeGreaterThan(0);
      // Two rows padded to the longest (4 slots), every layer's keys and values in float32.
      expect(runner.cacheBytes).toBe(2 * 4 * d.layers * 2 * d.kvHeads * d.headDim * 4);
      await runner.decode([5, 5]);
      expect(runner.stepTimes.steps).toBe(2);
      expect(runner.stepTimes.deviceMs).toBeGreaterThan(0);
      expect(runner.stepTimes.hostMs).toBeGreaterThanOrEqual(0);
    } finally {
      await runner.release();
    }
    await expect(runner.decode([1, 1])).rejects.toBeInstanceOf(DeviceRunnerError);
  }, 120_000);
});
