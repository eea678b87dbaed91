import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCollectiveGroup } from '../actors/collective/index.js';
import { initRandomModel } from '../actors/models/model-init.js';
import { releaseWebgpu, webgpuUnavailable } from '../actors/models/tfjs-backend.js';
import type { TrainSample } from '../actors/trainer/policy-trainer.js';
import type { TrainerShard } from '../actors/trainer/trainer-shard.js';
import type { ActorHandle, Cluster } from '../runtime/index.js';
import { TestCluster, within } from './helpers/processes.js';

const samples: TrainSample[] = Array.from({ length: 8 }, (_, i) => {
  const tokenIds = Array.from({ length: 6 + (i % 3) }, (_, j) => (i * 17 + j * 5) % 384);
  const responseLength = 2 + (i % 3);
  return {
    tokenIds,
    responseStart: tokenIds.length - responseLength,
    oldLogprobs: new Array(responseLength).fill(-5.95),
    advantages: i % 2 === 0 ? 1 : -0.5,
  };
});
const globalTokens = samples.reduce((n, s) => n + s.tokenIds.length - s.responseStart, 0);

// TensorFlow.js on WebGPU (Dawn over Vulkan: lavapipe in CI) in the shards' own processes.
const noAdapter = await webgpuUnavailable();
await releaseWebgpu();
if (noAdapter) console.warn(`WebGPU trainer shard cases skipped: ${noAdapter}`);

describe('TrainerShard actors: data parallelism through the real runtime', () => {
  const tc = new TestCluster();
  const root = mkdtempSync(join(tmpdir(), 'clawray-shards-'));
  const modelDir = join(root, 'tiny');
  let cluster: Cluster;

  const shard = (backend: 'cpu' | 'webgpu' = 'cpu', checkpointDir = join(root, 'ckpt')) =>
    cluster.createActor<TrainerShard>({
      module: 'clawray/trainer',
      className: 'TrainerShard',
      args: [
        {
          modelDir,
          method: 'rl',
          optimizer: { lr: 1e-3, weightDecay: 0.01 },
          backend,
          checkpointDir,
        },
      ],
    });

  async function train(shards: ActorHandle<TrainerShard>[], steps: number) {
    const per = samples.length / shards.length;
    for (let step = 0; step < steps; step++) {
      await within(
        60_000,
        `step ${step} on ${shards.length} shards`,
        Promise.all(
          shards.map((s, r) => s.remote.trainStep(samples.slice(r * per, (r + 1) * per), { globalTokens })),
        ),
      );
    }
  }

  const maxDiff = (a: Record<string, Float32Array>, b: Record<string, Float32Array>) => {
    let max = 0;
    for (const [name, w] of Object.entries(a))
      for (let i = 0; i < w.length; i++) max = Math.max(max, Math.abs(w[i] - b[name][i]));
    return max;
  };

  beforeAll(async () => {
    initRandomModel({ preset: 'tiny', outDir: modelDir, seed: 8 });
    await tc.startHead();
    await tc.startWorker({ cpus: 16, poolSize: 4 });
    cluster = await tc.connect();
  });
  afterAll(async () => {
    await tc.teardown();
    rmSync(root, { recursive: true, force: true });
  });

  it('2 and 4 shards on one global batch end with the weights 1 shard computes, bit-identical across ranks', async () => {
    const single = await shard();
    expect((await single.remote.ready()).backend).toBe('cpu');
    await train([single], 2);
    const reference = await single.remote.readWeights();
    for (const n of [2, 4]) {
      const group = await Promise.all(Array.from({ length: n }, () => shard()));
      await createCollectiveGroup(cluster, group, `dp${n}`);
      await train(group, 2);
      const digests = await Promise.all(group.map((s) => s.remote.weightsDigest()));
      expect(new Set(digests).size).toBe(1);
      expect(maxDiff(reference, await group[0].remote.readWeights())).toBeLessThan(1e-6);
      await Promise.all(group.map((s) => cluster.killActor(s)));
    }
  }, 180_000);

  it('checkpoints and resumes exactly', async () => {
    const a = await shard();
    await train([a], 1);
    await a.remote.saveCheckpoint();
    await train([a], 1);
    const continued = await a.remote.readWeights();
    const b = await shard();
    expect(await b.remote.resume()).toBe(1);
    await train([b], 1);
    expect(maxDiff(continued, await b.remote.readWeights())).toBe(0);
  }, 120_000);

  it.skipIf(noAdapter !== null)(
    'two webgpu shards all-reduce per bucket over the ring: the cpu shard’s weights, identical ranks, a checkpoint any backend resumes',
    async () => {
      const ckpt = join(root, 'ckpt-webgpu');
      const single = await shard('cpu', ckpt);
      await train([single], 2);
      const reference = await single.remote.readWeights();
      const group = await Promise.all([0, 1].map(() => shard('webgpu', ckpt)));
      const info = await group[0].remote.ready();
      expect(info).toMatchObject({ backend: 'webgpu', update: 'device', skipped: [] });
      expect(info.device).toMatch(/Vulkan/);
      await createCollectiveGroup(cluster, group, 'dp-webgpu');
      await train(group, 2);
      const digests = await Promise.all(group.map((s) => s.remote.weightsDigest()));
      expect(new Set(digests).size).toBe(1);
      const got = await group[0].remote.readWeights();
      const scale = Math.max(...Object.values(reference).map((w) => Math.max(...w.map(Math.abs))));
      expect(maxDiff(reference, got) / scale).toBeLessThan(1e-4);
      // Its checkpoint (weights and AdamW's moments read back from the device) resumes on cpu.
      await group[0].remote.saveCheckpoint();
      await train(group, 1);
      const continued = await group[0].remote.readWeights();
      await single.remote.resume(2);
      await train([single], 1);
      expect(maxDiff(continued, await single.remote.readWeights()) / scale).toBeLessThan(1e-4);
      await Promise.all([single, ...group].map((s) => cluster.killActor(s)));
    },
    180_000,
  );

  it('trains LoRA adapters data-parallel and publishes merged weights', async () => {
    const lora = { rank: 2, alpha: 4, dropout: 0, targetModules: ['q_proj', 'o_proj'] };
    const group = await Promise.all(
      [0, 1].map(() =>
        cluster.createActor<TrainerShard>({
          module: 'clawray/trainer',
          className: 'TrainerShard',
          args: [
            {
              modelDir,
              method: 'rl',
              optimizer: { lr: 1e-2, weightDecay: 0 },
              backend: 'cpu',
              lora,
              seed: 3,
            },
          ],
        }),
      ),
    );
    const before = await group[0].remote.readWeights();
    await createCollectiveGroup(cluster, group, 'lora');
    await train(group, 2);
    const digests = await Promise.all(group.map((s) => s.remote.weightsDigest()));
    expect(new Set(digests).size).toBe(1);
    const after = await group[0].remote.readWeights();
    const q = 'model.layers.0.self_attn.q_proj.weight';
    const up = 'model.layers.0.mlp.up_proj.weight';
    expect(maxDiff({ [q]: before[q] }, { [q]: after[q] })).toBeGreaterThan(0);
    expect(maxDiff({ [up]: before[up] }, { [up]: after[up] })).toBe(0);
  }, 120_000);
});
