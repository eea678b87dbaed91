/**
 * The device runner end to end: its worker thread opens a WebGPU session on the weights the
 * engine's thread holds (shared, not copied), and admits, decodes, drops and scores like a
 * recompute on the CPU, while the engine's event loop keeps turning. On lavapipe here and in CI.
 */
import { describe, expect, it } from 'vitest';
import { dims } from '../models/model-config.js';
import { randomWeights } from '../models/model-init.js';
import { exportDecoderExternal } from '../models/onnx-export.js';
import { DeviceRunner, DeviceRunnerError } from './device-runner.js';
import { OnnxDecoder } from './onnx-decoder.js';
import { runRunnerContract } from './runner.contract.js';
import { presetConfig } from './test-model.js';
import { webgpuUnavailable } from './webgpu-probe.test-support.js';

const config = presetConfig('tiny');
const d = dims(config);
const layout = { layers: d.layers, kvHeads: d.kvHeads, headDim: d.headDim, vocab: d.vocab };
const weights = randomWeights(d, 9);
const noAdapter = await webgpuUnavailable();
if (noAdapter) console.warn(`WebGPU cases skipped: ${noAdapter}`);

async function lastLogits(cpu: OnnxDecoder, tokens: readonly number[]): Promise<Float32Array> {
  const n = tokens.length;
  const out = await cpu.step({
    batch: 1,
    seq: n,
    past: 0,
    inputIds: BigInt64Array.from(tokens, BigInt),
    attentionMask: new BigInt64Array(n).fill(1n),
    positionIds: BigInt64Array.from(tokens, (_, i) => BigInt(i)),
    pastKv: Array.from({ length: 2 * d.layers }, () => new Float32Array(0)),
  });
  return out.logits.slice((n - 1) * d.vocab, n * d.vocab);
}

const maxDiff = (a: Float32Array, b: Float32Array) =>
  a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);

describe.skipIf(noAdapter !== null)('DeviceRunner (a worker thread, WebGPU)', () => {
  it('runs the batch off the event loop and matches a CPU recompute; a released runner refuses by name', async () => {
    const cpu = await OnnxDecoder.load(exportDecoderExternal(config, weights), layout, 'cpu');
    const gqa = exportDecoderExternal(config, weights, { attention: 'gqa' });
    const runner = await DeviceRunner.load({ ...gqa, layout, provider: 'webgpu', prefillChunkTokens: 3 });
    try {
      const rows = [
        [2, 4, 6, 8],
        [1, 3],
      ];
      let turns = 0;
      const ticking = setInterval(() => turns++, 0);
      const first = await runner.admit(rows, 16);
      clearInterval(ticking);
      // The engine's thread was free while the worker ran the step.
      expect(turns).toBeGreaterThan(0);
      for (let b = 0; b < 2; b++)
        expect(
          maxDiff(first.subarray(b * d.vocab, (b + 1) * d.vocab), await lastLogits(cpu, rows[b])),
        ).toBeLessThan(1e-4);
      expect(runner.rows).toBe(2);
      expect(runner.cacheBytes).toBe(2 * 4 * d.layers * 2 * d.kvHeads * d.headDim * 4);
      const long = [9, 8, 7, 6, 5, 4, 3];
      await runner.admit([long], 16);
      rows.push(long);
      for (const r of rows) r.push(11);
      const step = await runner.decode([11, 11, 11]);
      for (let b = 0; b < 3; b++)
        expect(
          maxDiff(step.subarray(b * d.vocab, (b + 1) * d.vocab), await lastLogits(cpu, rows[b])),
        ).toBeLessThan(1e-4);
      expect(await runner.drop([1])).toEqual([0, 2]);
      expect(runner.rows).toBe(2);
      const scored: number[] = [];
      await runner.score([5, 6, 7, 8, 9, 10, 11], 2, (p, logits) => {
        scored.push(p);
        expect(logits.length).toBe(d.vocab);
      });
      expect(scored).toEqual([2, 3, 4, 5, 6]);
      expect(runner.stepTimes.steps).toBe(3);
      expect(runner.stepTimes.deviceMs).toBeGreaterThan(0);
    } finally {
      await runner.release();
      await cpu.release();
    }
    await expect(runner.decode([1, 1])).rejects.toBeInstanceOf(DeviceRunnerError);
  }, 120_000);
});

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
