/**
 * `npm run bench -- train`: training tokens/s of one PolicyTrainer step (RL loss, AdamW) per
 * TensorFlow.js backend available here, on the `tiny` and `small` presets.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PresetName } from '../actors/models/model-config.js';
import { loadModelDir } from '../actors/models/model-dir.js';
import { initRandomModel } from '../actors/models/model-init.js';
import { selectBackend, type TfjsBackendName } from '../actors/models/tfjs-backend.js';
import { TfjsDecoder } from '../actors/models/tfjs-decoder.js';
import { PolicyTrainer, type TrainSample } from '../actors/trainer/policy-trainer.js';

const log = (line: string) => process.stderr.write(`${line}\n`);

function batch(count: number, length: number, response: number): TrainSample[] {
  return Array.from({ length: count }, (_, i) => ({
    tokenIds: Array.from({ length }, (_, j) => (i * 31 + j * 7) % 384),
    responseStart: length - response,
    oldLogprobs: new Array(response).fill(-5.9),
    advantages: i % 2 === 0 ? 1 : -1,
  }));
}

const SHAPES = [
  { samples: 8, tokens: 64 },
  { samples: 16, tokens: 256 },
];

export async function runTrainBench(): Promise<Record<string, unknown>> {
  const root = mkdtempSync(join(tmpdir(), 'clawray-bench-train-'));
  const results: Array<Record<string, unknown>> = [];
  try {
    for (const preset of ['tiny', 'small'] as PresetName[]) {
      initRandomModel({ preset, outDir: join(root, preset), seed: 1 });
      const model = loadModelDir(join(root, preset));
      for (const wanted of ['wasm', 'cpu'] as TfjsBackendName[]) {
        const backend = await selectBackend(wanted);
        if (backend !== wanted) continue;
        log(`${preset} on ${backend}`);
        const decoder = new TfjsDecoder(model.config, model.weights, {
          embedding: backend === 'wasm' ? 'onehot' : 'gather',
        });
        const trainer = new PolicyTrainer(decoder, { method: 'rl', optimizer: { lr: 1e-5 } });
        // The short batch, and on wasm an agent-shaped one (the gui/swe examples' prompts are
        // ~230 tokens, where attention's share of a step grows).
        const shapes = backend === 'wasm' ? SHAPES : SHAPES.slice(0, 1);
        for (const { samples: count, tokens: length } of shapes) {
          const samples = batch(count, length, 48);
          await trainer.step(samples);
          const steps = preset === 'tiny' && length <= 64 ? 5 : 2;
          const started = performance.now();
          let tokens = 0;
          for (let i = 0; i < steps; i++) tokens += (await trainer.step(samples)).tokens;
          const seconds = (performance.now() - started) / 1000;
          results.push({
            preset,
            backend,
            samples: count,
            tokens: length,
            tokensPerSecond: Math.round((tokens / seconds) * 10) / 10,
            stepSeconds: Math.round((seconds / steps) * 1000) / 1000,
          });
        }
        decoder.dispose();
      }
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  return {
    bench: 'train',
    results,
    method:
      'RL (PPO clip) steps with AdamW on `samples` samples of `tokens` tokens (48 response tokens each), after one warm-up step',
    machine: { cpus: cpus().length, node: process.version },
  };
}
