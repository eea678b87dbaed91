/**
 * The job's bring-up: its model directory and chat codecs, its actors (placed in the job's
 * placement groups), and the parts over them the phases use — the rollout engines as a pool
 * that publishes weights, the frozen judge engines, the trainer shards as one trainer group,
 * and the trajectory ledger over the job's streams. Logs what came up and on what it computes
 * (with a warning where a GPU job fell back to the CPU).
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Registry } from 'prom-client';
import { CONFIG_FILE } from '../../actors/models/model-dir.js';
import type { RolloutEngine } from '../../actors/rollout/rollout-engine-actor.js';
import { WeightPublisher } from '../../actors/trainer/weight-publisher.js';
import { ConfigError } from '../../common/errors.js';
import { pluginLocation } from '../../common/plugin-module.js';
import type { ActorHandle, Cluster } from '../../runtime/index.js';
import type { TrajectoryBuffer } from '../buffer/types.js';
import type { RLJobManifest, RLJobSpec } from '../manifest/schema.js';
import { type ActorSet, createActorSet } from './actor-set.js';
import { ChatCodec } from './chat-codec.js';
import { EnginePool } from './engine-pool.js';
import type { JobContext } from './job-context.js';
import type { CheckpointBase } from './job-state.js';
import { prepareModelDir } from './model-source.js';
import { TrainerGroup } from './trainer-group.js';
import { TrajectoryLedger } from './trajectory-ledger.js';

type Engines = EnginePool<ActorHandle<RolloutEngine>>;

export interface BringUpPorts {
  cluster: Cluster;
  manifest: RLJobManifest;
  /** Where the manifest's relative paths (model, tasks, plugins) resolve. */
  workingDir: string;
  /** Where an initialised model (spec.model.init) is kept. */
  dataDir: string;
  /** The submission's checkpoint directory (the trainer shards save there). */
  checkpointDir: string;
  buffers: { rollouts: TrajectoryBuffer; judged: TrajectoryBuffer };
  registry?: Registry;
  /** The trainer step of the job's newest checkpoint (a trainer group's recovery falls back to it). */
  lastCheckpointStep(): number | null;
  /** Places the job's actors (default createActorSet). */
  createActors?: typeof createActorSet;
}

/** The job's parts, up and running. */
export interface JobParts {
  /** The policy's model directory (its chat template in place). */
  modelDir: string;
  /** What the job's checkpoints are a checkpoint of. */
  baseModel: CheckpointBase;
  /** The policy's chat codec. */
  codec: ChatCodec;
  /** The absolute task path of the env pools, or 'builtin'. */
  tasksPath: string;
  actors: ActorSet;
  engines: Engines;
  /** The in-job judge engines (never updated: the judge, and a frozen teacher, stay the initial model). */
  judge: { engines: Engines; codec: ChatCodec };
  trainers: TrainerGroup;
  ledger: TrajectoryLedger;
  /** Stops the pools and removes the actors. */
  close(): Promise<void>;
}

export async function bringUp(ctx: JobContext, p: BringUpPorts): Promise<JobParts> {
  const { spec } = ctx;
  const modelDir = prepareModelDir(spec.model, p.workingDir, p.dataDir);
  const baseModel: CheckpointBase = {
    dir: modelDir,
    ...(spec.model.name ? { name: spec.model.name } : {}),
    ...(spec.train.lora ? { lora: spec.train.lora } : {}),
  };
  const codec = new ChatCodec(modelDir);
  const judgeModelDir = judgeModelDirOf(spec, modelDir, p.workingDir);
  const judgeCodec = judgeModelDir && judgeModelDir !== modelDir ? new ChatCodec(judgeModelDir) : codec;
  // Plugins that run in other actors travel as absolute paths (same path on every node).
  const plugin = (path?: string) => {
    if (!path) return undefined;
    const at = pluginLocation(path, p.workingDir);
    return `${at.path}#${at.exportName}`;
  };
  const tasksPath =
    spec.env && spec.env.tasks !== 'builtin' ? resolve(p.workingDir, spec.env.tasks) : 'builtin';
  ctx.log(`job ${ctx.job} (${ctx.submissionId}): ${spec.track} / ${spec.method}, model ${modelDir}`);
  const actors = await (p.createActors ?? createActorSet)(
    p.cluster,
    p.manifest,
    {
      modelDir,
      judgeModelDir,
      tasks: tasksPath,
      checkpointDir: p.checkpointDir,
      environmentModule: plugin(spec.plugins.environment),
      lossModule: plugin(spec.plugins.loss),
    },
    ctx.submissionId,
  );
  reportActors(ctx, actors);
  const publisher = new WeightPublisher(actors.engines, { registry: p.registry });
  const engines = new EnginePool(actors.engines, {
    publish: async (members, version, weights) => {
      await publisher.publish(version, weights, members);
    },
    log: ctx.log,
  });
  const trainers = new TrainerGroup(actors.trainers, {
    rebuildRing: () => actors.rebuildRing(),
    lastCheckpointStep: p.lastCheckpointStep,
    log: ctx.log,
  });
  const ledger = new TrajectoryLedger(p.buffers.rollouts, p.buffers.judged);
  // In-job judge engines never get an update: the judge (and a frozen teacher) stays the initial model.
  const judgeEngines = new EnginePool(actors.judgeEngines, {
    publish: async () => {
      throw new Error('the judge engines are frozen');
    },
    log: (line) => ctx.log(`judge: ${line}`),
  });
  return {
    modelDir,
    baseModel,
    codec,
    tasksPath,
    actors,
    engines,
    judge: { engines: judgeEngines, codec: judgeCodec },
    trainers,
    ledger,
    close: async () => {
      engines.close();
      judgeEngines.close();
      await actors.close();
    },
  };
}

/** The actors-ready and runtime lines (and the run's `runtime`), with a warning for a GPU job on the CPU. */
function reportActors(ctx: JobContext, actors: ActorSet): void {
  const { spec } = ctx;
  ctx.log(
    `actors ready: ${actors.engines.length} rollout engine(s), ${actors.trainers.length} trainer shard(s), ${actors.pools.length} env pool(s), ${actors.judgeEngines.length > 0 ? `${actors.judgeEngines.length} judge engine(s) (${spec.judge.model ?? spec.model.path}, frozen${spec.method !== 'rl' ? `; teacher ${spec.judge.teacher}` : ''})` : `${actors.voters.length} judge voter(s)`}`,
  );
  ctx.run.runtime = `rollout ${tally(actors.runtime.rollout)}; trainer ${tally(actors.runtime.trainer)}`;
  ctx.log(`runtime: ${ctx.run.runtime}`);
  const res = spec.resources;
  if (res.rollout.gpus > 0 && actors.runtime.rollout.some((r) => r.endsWith('/cpu'))) {
    ctx.log(
      `warning: rollout engines hold ${res.rollout.gpus} GPU(s) each but run on the CPU (neither onnxruntime's CUDA provider nor its WebGPU one started there)`,
    );
  }
  if (res.trainer.gpus > 0 && actors.runtime.trainer.some((r) => !/^tfjs\/(tensorflow|webgpu) /.test(r))) {
    const why = actors.trainerSkipped.length > 0 ? `: ${actors.trainerSkipped.join('; ')}` : '';
    ctx.log(
      `warning: trainer shards hold ${res.trainer.gpus} GPU(s) each but run on ${actors.runtime.trainer.join(', ')}${why} (on a GPU: npm install webgpu and the GPU's Vulkan driver, or @tensorflow/tfjs-node-gpu)`,
    );
  }
}

/** The model directory in-job judge engines serve (llm judge without baseURL), if any. */
function judgeModelDirOf(spec: RLJobSpec, policyDir: string, workingDir: string): string | undefined {
  const { judge, model } = spec;
  if (judge.backend !== 'llm' || judge.baseURL) return undefined;
  if (judge.model === undefined || judge.model === model.path) return policyDir;
  const dir = resolve(workingDir, judge.model);
  if (!existsSync(join(dir, CONFIG_FILE))) {
    throw new ConfigError(`spec.judge.model: ${dir} holds no model (no ${CONFIG_FILE})`, {
      fields: { field: 'spec.judge.model', path: dir },
    });
  }
  return dir;
}

/** 'onnxruntime/cpu ×2, onnxruntime/cuda' */
function tally(names: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const n of names) counts.set(n, (counts.get(n) ?? 0) + 1);
  return [...counts].map(([n, c]) => (c > 1 ? `${n} ×${c}` : n)).join(', ') || 'none';
}
