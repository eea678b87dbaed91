/**
 * The device-resident decoder (GQA graph, cache kept in WebGPU buffers and moved on the device)
 * against an oracle that knows nothing of caches: the CPU provider running the standard graph on
 * each row's whole token sequence at once. On Mesa's lavapipe here and in CI; skipped, with a
 * warning, where no WebGPU adapter answers.
 */
import { describe, expect, it } from 'vitest';
import { dims } from '../models/model-config.js';
import { randomWeights } from '../models/model-init.js';
import { exportDecoderExternal } from '../models/onnx-export.js';
import { DeviceDecoder } from './device-decoder.js';
import { OnnxDecoder } from './onnx-decoder.js';
import { maxAbsDiff, recomputeLastLogits } from './recompute.test-support.js';
import { presetConfig } from './test-model.js';
import { webgpuUnavailable } from './webgpu-probe.test-support.js';

const config = presetConfig('tiny');
const d = dims(config);
const layout = { layers: d.layers, kvHeads: d.kvHeads, headDim: d.headDim, vocab: d.vocab };
const weights = randomWeights(d, 7);
const noAdapter = await webgpuUnavailable();
if (noAdapter) console.warn(`WebGPU cases skipped: ${noAdapter}`);

const oracle = recomputeLastLogits;
const maxDiff = maxAbsDiff;

describe.skipIf(noAdapter !== null)('DeviceDecoder on WebGPU', () => {
  it('admits grouped and chunked prompts, decodes, drops rows and scores like a recompute on the CPU', async () => {
    const cpu = await OnnxDecoder.load(exportDecoderExternal(config, weights), layout, 'cpu');
    const gqa = exportDecoderExternal(config, weights, { attention: 'gqa' });
    const device = await DeviceDecoder.load({ ...gqa, layout, provider: 'webgpu', chunkTokens: 4 });
    try {
      const rows: number[][] = [
        [5, 9, 11, 3, 7],
        [12, 13],
      ];
      const check = async (logits: Float32Array, which: number[][]) => {
        for (let b = 0; b < which.length; b++) {
          const want = await oracle(cpu, which[b]);
          expect(maxDiff(logits.subarray(b * d.vocab, (b + 1) * d.vocab), want)).toBeLessThan(1e-4);
        }
      };
      // Two short prompts in one right-padded step.
      await check((await device.admit(rows)).logits, rows);
      expect(device.rows).toBe(2);
      for (let step = 0; step < 3; step++) {
        const tokens = rows.map((r, b) => (r.at(-1)! * 7 + b + step) % d.vocab);
        for (const [b, r] of rows.entries()) r.push(tokens[b]);
        await check((await device.decode(tokens)).logits, rows);
      }
      // A longer prompt in chunks of 4 joins the batch (the cache is moved on the device).
      const long = [40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50];
      await check((await device.admit([long])).logits, [long]);
      rows.push(long);
      const tokens = [1, 2, 3];
      for (const [b, r] of rows.entries()) r.push(tokens[b]);
      await check((await device.decode(tokens)).logits, rows);
      // The first row leaves; the others keep their order and their caches.
      expect(await device.drop([0])).toEqual([1, 2]);
      rows.shift();
      for (const r of rows) r.push(8);
      await check((await device.decode([8, 8])).logits, rows);
      // Scoring a sequence alone, chunk by chunk, leaves the batch as it was.
      const scored = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3];
      device.scoreStart(scored, 5);
      const seen: number[] = [];
      for (let done = false; !done; ) {
        const part = await device.scoreNext();
        const count = part.logits.length / d.vocab;
        for (let i = 0; i < count; i++) {
          const p = part.first + i;
          if (p < 5) continue;
          seen.push(p);
          const want = await oracle(cpu, scored.slice(0, p + 1));
          expect(maxDiff(part.logits.subarray(i * d.vocab, (i + 1) * d.vocab), want)).toBeLessThan(1e-4);
        }
        done = part.done;
      }
      expect(seen).toEqual([5, 6, 7, 8, 9]);
      for (const r of rows) r.push(2);
      await check((await device.decode([2, 2])).logits, rows);
      expect(await device.drop([0, 1])).toEqual([]);
      expect(device.rows).toBe(0);
    } finally {
      await device.release();
      await cpu.release();
    }
  }, 120_000);
});
