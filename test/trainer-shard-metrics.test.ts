/**
 * A trainer shard's step gauges in the process's Prometheus registry (what the node agent
 * exports from a shard's worker): the passes its step took within `passMemoryMiB` and whether
 * they ran with gradient checkpointing, both as the step reported them. The shard runs in this
 * process (vitest gives each file a fresh registry), so the gauges are read directly.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { register } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import { initRandomModel } from '../actors/models/model-init.js';
import type { TrainSample } from '../actors/trainer/policy-trainer.js';
import { TrainerShard } from '../actors/trainer/trainer-shard.js';

const samples: TrainSample[] = [0, 1, 2, 3].map((i) => {
  const tokenIds = Array.from({ length: 24 }, (_, j) => (i * 37 + j * 11) % 384);
  return { tokenIds, responseStart: 12, oldLogprobs: new Array(12).fill(-5.9), advantages: i % 2 ? 1 : -1 };
});

async function gauge(name: string): Promise<number | undefined> {
  const metric = register.getSingleMetric(name);
  return (await metric?.get())?.values[0]?.value;
}

describe('trainer shard step gauges', () => {
  const root = mkdtempSync(join(tmpdir(), 'clawray-shard-metrics-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('exports the passes of the last step and whether it checkpointed, as the step reported them', async () => {
    const modelDir = join(root, 'tiny');
    initRandomModel({ preset: 'tiny', outDir: modelDir, seed: 3 });
    // A pass budget below two samples' activations: one sample per pass.
    const shard = new TrainerShard({
      modelDir,
      method: 'rl',
      optimizer: { lr: 1e-3 },
      backend: 'cpu',
      gradientCheckpointing: 'on',
      passMemoryBytes: 64 * 1024,
    });
    try {
      const step = await shard.trainStep(samples);
      expect(step.gradientCheckpointing).toBe(true);
      expect(step.passes).toBeGreaterThan(1);
      expect(await gauge('clawray_trainer_gradient_checkpointing')).toBe(1);
      expect(await gauge('clawray_trainer_passes')).toBe(step.passes);
    } finally {
      await shard[Symbol.asyncDispose]();
    }
  });
});
