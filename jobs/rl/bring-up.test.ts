import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { Cluster } from '../../runtime/index.js';
import { MemoryTrajectoryBuffer } from '../buffer/memory-buffer.js';
import { parseManifest } from '../manifest/load.js';
import type { ActorSet, ActorSetPaths } from './actor-set.js';
import { bringUp } from './bring-up.js';
import { testContext } from './fakes.test-support.js';

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0)) await c();
});
// One data dir for the file: the tiny model is initialised once.
const dataDir = mkdtempSync(join(tmpdir(), 'clawray-bringup-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const manifest = (resources: string) =>
  parseManifest(
    `apiVersion: clawray.dev/v1
kind: RLJob
metadata: { name: m }
spec:
  track: toolcall
  method: rl
  model: { path: ./absent, init: { preset: tiny, seed: 0 } }
${resources}`,
    'job.yaml',
  );

/** Brings a job up on a fake actor set (a tiny random model in a temp data dir). */
async function setup(resources: string, runtime: ActorSet['runtime'], trainerSkipped: string[] = []) {
  const rollouts = new MemoryTrajectoryBuffer({ name: 'rollouts' });
  const judged = new MemoryTrajectoryBuffer({ name: 'judged' });
  cleanup.push(
    () => rollouts.close(),
    () => judged.close(),
  );
  const m = manifest(resources);
  const t = testContext(m.spec);
  let placed: ActorSetPaths | undefined;
  let closed = false;
  const handle = {} as never;
  const parts = await bringUp(t.ctx, {
    cluster: {} as Cluster,
    manifest: m,
    workingDir: dataDir,
    dataDir,
    checkpointDir: join(dataDir, 'ckpt', 'm-1'),
    buffers: { rollouts, judged },
    lastCheckpointStep: () => null,
    createActors: async (_cluster, _manifest, paths, jobId) => {
      placed = paths;
      expect(jobId).toBe('m-1');
      return {
        plan: {} as ActorSet['plan'],
        engines: runtime.rollout.map(() => handle),
        trainers: runtime.trainer.map(() => handle),
        pools: [handle],
        voters: [handle],
        judgeEngines: [],
        runtime,
        trainerSkipped,
        rebuildRing: async () => {},
        close: async () => {
          closed = true;
        },
      };
    },
  });
  return { ...t, parts, placed: () => placed, closed: () => closed };
}

describe('bringUp', () => {
  it('places the actors on the prepared model and says what came up and on what it computes', async () => {
    const t = await setup('', {
      rollout: ['onnxruntime/cpu', 'onnxruntime/cpu'],
      trainer: ['tfjs/wasm on CPU'],
    });
    const modelDir = join(dataDir, 'models', 'tiny-seed0');
    expect(t.placed()).toMatchObject({
      modelDir,
      tasks: 'builtin',
      checkpointDir: join(dataDir, 'ckpt', 'm-1'),
    });
    expect(t.parts).toMatchObject({ modelDir, baseModel: { dir: modelDir }, tasksPath: 'builtin' });
    expect(t.parts.engines.engines).toHaveLength(2);
    expect(t.parts.trainers.shards).toHaveLength(1);
    expect(t.parts.judge.codec).toBe(t.parts.codec);
    expect(t.lines).toEqual([
      `job m (m-1): toolcall / rl, model ${modelDir}`,
      'actors ready: 2 rollout engine(s), 1 trainer shard(s), 1 env pool(s), 1 judge voter(s)',
      'runtime: rollout onnxruntime/cpu ×2; trainer tfjs/wasm on CPU',
    ]);
    expect(t.ctx.run.runtime).toBe('rollout onnxruntime/cpu ×2; trainer tfjs/wasm on CPU');
    await t.parts.close();
    expect(t.closed()).toBe(true);
  });

  it('warns when actors that hold GPUs compute on the CPU', async () => {
    const t = await setup(
      '  resources: { rollout: { gpus: 1 }, trainer: { gpus: 1 } }\n',
      { rollout: ['onnxruntime/cpu'], trainer: ['tfjs/wasm on CPU'] },
      ['tensorflow: not installed'],
    );
    expect(t.lines.slice(3)).toEqual([
      "warning: rollout engines hold 1 GPU(s) each but run on the CPU (neither onnxruntime's CUDA provider nor its WebGPU one started there)",
      "warning: trainer shards hold 1 GPU(s) each but run on tfjs/wasm on CPU: tensorflow: not installed (on a GPU: npm install webgpu and the GPU's Vulkan driver, or @tensorflow/tfjs-node-gpu)",
    ]);
    await t.parts.close();
  });
});
