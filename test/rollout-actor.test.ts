import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModelDir } from '../actors/models/model-dir.js';
import { initRandomModel } from '../actors/models/model-init.js';
import type { ChatResult, RolloutEngine } from '../actors/rollout/index.js';
import { bucketize, WeightPublisher } from '../actors/trainer/weight-publisher.js';
import type { ActorHandle, Cluster } from '../runtime/index.js';
import { TestCluster } from './helpers/processes.js';

describe('RolloutEngine as an actor', () => {
  const tc = new TestCluster();
  const root = mkdtempSync(join(tmpdir(), 'clawray-rollout-actor-'));
  const modelDir = join(root, 'tiny');
  let cluster: Cluster;
  let engine: ActorHandle<RolloutEngine>;

  beforeAll(async () => {
    initRandomModel({ preset: 'tiny', outDir: modelDir, seed: 11 });
    await tc.startHead();
    await tc.startWorker({ gpus: 1 });
    cluster = await tc.connect();
    engine = await cluster.createActor<RolloutEngine>({
      module: 'clawray/rollout',
      className: 'RolloutEngine',
      args: [{ modelDir, maxBatchSize: 8 }],
      options: { numGpus: 0.5 },
    });
  });
  afterAll(async () => {
    await tc.teardown();
    rmSync(root, { recursive: true, force: true });
  });

  it('loads the model and reports the execution provider', async () => {
    const ready = await engine.remote.ready();
    // No CUDA build of onnxruntime here: the GPU-holding actor falls back to the CPU provider.
    expect(ready).toMatchObject({ id: 'tiny', provider: 'cpu', weightVersion: 0 });
  });

  it('serves concurrent chats with token ids and logprobs that teacher scoring reproduces', async () => {
    const results = (await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        engine.remote.chat({
          messages: [{ role: 'user', content: `question ${i}` }],
          maxTokens: 12,
          seed: i,
        }),
      ),
    )) as ChatResult[];
    for (const r of results) {
      expect(r.tokenIds.length).toBeGreaterThan(0);
      const scored = await engine.remote.computeLogprobs(
        [...r.promptTokenIds, ...r.tokenIds],
        r.promptTokenIds.length,
      );
      for (let k = 0; k < scored.length; k++) expect(Math.abs(scored[k] - r.logprobs[k])).toBeLessThan(1e-4);
    }
  });

  it('caps maxTokens at the context the prompt leaves, and names a conversation that fills it', async () => {
    // The tiny preset's context is 1024 tokens; each 'x ' is at least one token.
    const long = 'x '.repeat(500);
    const capped = (await engine.remote.chat({
      messages: [{ role: 'user', content: long.slice(0, 1900) }],
      maxTokens: 4096,
      seed: 1,
    })) as ChatResult;
    expect(capped.promptTokenIds.length + capped.tokenIds.length).toBeLessThanOrEqual(1024);
    const err = await engine.remote
      .chat({ messages: [{ role: 'user', content: long.repeat(3) }], maxTokens: 8 })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ remoteName: 'ContextLengthError' });
    expect((err as Error).message).toMatch(/fills the model's context of 1024/);
  });

  it('takes new weights over the wire as typed arrays', async () => {
    const name = 'model.norm.weight';
    const version = await engine.remote.updateWeights(1, { [name]: new Float32Array(64).fill(3) });
    expect(version).toBe(1);
    const out = await engine.remote.generate({ promptTokenIds: [1, 2, 3], maxTokens: 4 });
    expect(out.weightVersion).toBe(1);
  });

  it('receives a published weight version in buckets and serves it after one swap', async () => {
    const weights = loadModelDir(modelDir).weights;
    for (const data of weights.values()) for (let i = 0; i < data.length; i++) data[i] *= 1.5;
    const bucketBytes = 64 * 1024;
    expect(bucketize(weights, bucketBytes).length).toBeGreaterThan(2);
    const before = await engine.remote.generate({ promptTokenIds: [4, 5, 6], maxTokens: 4, temperature: 0 });
    const published = await new WeightPublisher([engine], { bucketBytes }).publish(5, weights);
    expect(published.buckets).toBeGreaterThan(2);
    const after = await engine.remote.generate({ promptTokenIds: [4, 5, 6], maxTokens: 4, temperature: 0 });
    expect(after.weightVersion).toBe(5);
    expect(after.logprobs).not.toEqual(before.logprobs);
    await expect(engine.remote.commitWeights(6)).rejects.toThrow('no buckets of version 6');
  });
});
