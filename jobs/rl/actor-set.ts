/**
 * The actors of one RL job, placed in the job's placement groups: one group per role, as the
 * manifest's GPU partition planned them (OpenClaw-RL's ACTOR_GPUS / ROLLOUT_GPUS / PRM_GPUS).
 * Trainer shards form a collective group (ring all-reduce of gradients) when there are several.
 * Every actor restarts when its process or node dies (a lost bundle is placed again by the
 * head): the job's pools and trainer group bring a restarted actor back up to date.
 */

import { createCollectiveGroup } from '../../actors/collective/driver.js';
import type { EnvPool } from '../../actors/envs/env-pool.js';
import type { JudgeVoter } from '../../actors/judge/judge-voter.js';
import type { RolloutEngine } from '../../actors/rollout/rollout-engine-actor.js';
import type { TrainerShard } from '../../actors/trainer/trainer-shard.js';
import type { ActorHandle, Cluster, PlacementGroup } from '../../runtime/index.js';
import { type PartitionPlan, planPartition, type Role } from '../manifest/partition.js';
import type { RLJobManifest } from '../manifest/schema.js';
import { engineOptions } from './engine-options.js';

export interface ActorSetPaths {
  modelDir: string;
  /** The model the in-job judge engines serve (llm judge without baseURL). */
  judgeModelDir?: string;
  /** Absolute task path of the env pools, or 'builtin'. */
  tasks: string;
  checkpointDir: string;
  /** Absolute path of a custom environment module (plugins.environment). */
  environmentModule?: string;
  /** Absolute path of a custom loss module (plugins.loss). */
  lossModule?: string;
}

export interface ActorSet {
  plan: PartitionPlan;
  engines: ActorHandle<RolloutEngine>[];
  trainers: ActorHandle<TrainerShard>[];
  pools: ActorHandle<EnvPool>[];
  /** Judge voter actors (rule, onnx-prm and external llm backends); the reaction judge votes in the driver. */
  voters: ActorHandle<JudgeVoter>[];
  /** In-job judge engines (llm without baseURL): rollout engines that never get a weight update. */
  judgeEngines: ActorHandle<RolloutEngine>[];
  /**
   * What each actor computes on, from its `ready()`: 'onnxruntime/<execution provider>' per
   * rollout engine, 'tfjs/<backend> on <device>' per trainer shard (in actor order). A GPU job whose engines
   * say 'cpu' fell back silently in the runtime; the driver says so.
   */
  runtime: { rollout: string[]; trainer: string[] };
  /** The backends trainer shards passed over under `train.backend: auto`, each with why. */
  trainerSkipped: string[];
  /** (Re)builds the trainer shards' collective ring (after a shard restarted, too). */
  rebuildRing(): Promise<void>;
  close(): Promise<void>;
}

/** Places every actor of the job; on any failure removes what was placed and rethrows. */
export async function createActorSet(
  cluster: Cluster,
  manifest: RLJobManifest,
  paths: ActorSetPaths,
  jobId: string,
): Promise<ActorSet> {
  const { spec } = manifest;
  const plan = await planPartition(manifest, cluster);
  const groups = new Map<Role, PlacementGroup>();
  const set: ActorSet = {
    plan,
    engines: [],
    trainers: [],
    pools: [],
    voters: [],
    judgeEngines: [],
    runtime: { rollout: [], trainer: [] },
    trainerSkipped: [],
    rebuildRing: async () => {
      if (set.trainers.length > 1) await createCollectiveGroup(cluster, set.trainers, `${jobId}-trainer`);
    },
    close: async () => {
      // Removing a group kills its actors; the reservation is freed with them.
      await Promise.allSettled([...groups.values()].map((g) => cluster.removePlacementGroup(g)));
    },
  };
  try {
    for (const g of plan.groups) {
      groups.set(
        g.role,
        await cluster.createPlacementGroup({
          name: `${g.name}-${jobId}`,
          bundles: g.bundles,
          strategy: g.strategy,
          timeoutMs: 120_000,
        }),
      );
    }
    const place = (role: Role, index: number, numGpus: number) => ({
      placementGroup: groups.get(role)!,
      bundleIndex: index,
      numGpus,
      maxRestarts: -1,
      // Every actor's process lives in its bundle: env pools and engines are CPU-heavy.
    });
    const r = spec.resources;
    // The policy's engines and the judge's engines serve alike (spec.model's engine settings).
    const engine = engineOptions(spec.model, r.rollout.cpus);
    set.engines = await Promise.all(
      Array.from({ length: r.rollout.replicas }, (_, i) =>
        cluster.createActor<RolloutEngine>({
          module: 'clawray/rollout',
          className: 'RolloutEngine',
          args: [
            {
              modelDir: paths.modelDir,
              ...engine,
            },
          ],
          options: place('rollout', i, r.rollout.gpus),
        }),
      ),
    );
    const t = spec.train;
    set.trainers = await Promise.all(
      Array.from({ length: r.trainer.shards }, (_, i) =>
        cluster.createActor<TrainerShard>({
          module: 'clawray/trainer',
          className: 'TrainerShard',
          args: [
            {
              modelDir: paths.modelDir,
              method: spec.method === 'sft' ? 'sft' : 'rl',
              optimizer: {
                lr: t.lr,
                betas: t.optimizer.betas,
                eps: t.optimizer.eps,
                weightDecay: t.optimizer.weightDecay,
              },
              schedule: {
                schedule: t.schedule,
                warmupSteps: t.lrWarmupSteps,
                totalSteps: t.steps === undefined ? undefined : t.steps + (t.warmup?.steps ?? 0),
                minLr: t.minLr,
              },
              maxGradNorm: t.maxGradNorm,
              clip: t.clip,
              klCoef: t.klCoef,
              entropyCoef: t.entropyCoef,
              microBatchSize: t.microBatchSize,
              passMemoryBytes: t.passMemoryMiB * 2 ** 20,
              gradientCheckpointing: t.gradientCheckpointing,
              distillDirection: t.distillDirection,
              tis: t.tis,
              // Async: the weights of the versions a stale sample may come from, for `mismatch`.
              lagWindow: t.async ? t.maxStaleness : 0,
              seed: t.seed,
              lora: t.lora,
              backend: t.backend,
              checkpointDir: paths.checkpointDir,
              keepLast: spec.checkpoint.keep,
              lossModule: paths.lossModule,
            },
          ],
          options: place('trainer', i, r.trainer.gpus),
        }),
      ),
    );
    if (spec.env) {
      const env = spec.env;
      set.pools = await Promise.all(
        Array.from({ length: r.env.replicas }, (_, i) =>
          cluster.createActor<EnvPool>({
            module: 'clawray/envs',
            className: 'EnvPool',
            args: [
              {
                track: spec.track as Exclude<typeof spec.track, 'personal'>,
                tasks: paths.tasks,
                parallel: env.parallel,
                seed: env.seed,
                settings: env.settings,
                environmentModule: paths.environmentModule,
                allocateTimeoutMs: 600_000,
              },
            ],
            options: place('env', i, 0),
          }),
        ),
      );
    }
    const judge = spec.judge;
    // In-job engines of the initial policy: an llm judge's voters, or the frozen OPD teacher of
    // a reaction-judged job (whose votes come from the user's reactions, in the driver).
    const frozenTeacher =
      judge.backend === 'reaction' &&
      judge.teacher === 'frozen' &&
      (spec.method === 'opd' || spec.method === 'combine');
    if ((judge.backend === 'llm' && !judge.baseURL) || frozenTeacher) {
      set.judgeEngines = await Promise.all(
        Array.from({ length: r.judge.replicas }, (_, i) =>
          cluster.createActor<RolloutEngine>({
            module: 'clawray/rollout',
            className: 'RolloutEngine',
            args: [
              {
                modelDir: paths.judgeModelDir ?? paths.modelDir,
                ...engineOptions(spec.model, r.judge.cpus),
              },
            ],
            options: place('judge', i, r.judge.gpus),
          }),
        ),
      );
    } else if (
      judge.backend === 'rule' ||
      judge.backend === 'onnx-prm' ||
      (judge.backend === 'llm' && judge.baseURL)
    ) {
      const voterOptions =
        judge.backend === 'rule'
          ? { backend: 'rule' as const, rule: judge.rule ?? 'env-reward' }
          : judge.backend === 'onnx-prm'
            ? { backend: 'onnx-prm' as const, modelDir: judge.model!, threshold: judge.threshold }
            : {
                backend: 'llm' as const,
                baseURL: judge.baseURL!,
                model: judge.model!,
                apiKeyEnv: judge.apiKeyEnv,
                temperature: judge.temperature,
                maxTokens: judge.maxTokens,
                timeoutMs: judge.timeoutMs,
                mode: judge.mode,
              };
      set.voters = await Promise.all(
        Array.from({ length: r.judge.replicas }, (_, i) =>
          cluster.createActor<JudgeVoter>({
            module: 'clawray/judge',
            className: 'JudgeVoter',
            args: [voterOptions],
            options: place('judge', i, r.judge.gpus),
          }),
        ),
      );
    }
    const [engines, trainers] = await Promise.all([
      Promise.all(set.engines.map((e) => e.call('ready'))),
      Promise.all(set.trainers.map((s) => s.call('ready'))),
      ...set.pools.map((p) => p.call('ready')),
      ...set.voters.map((v) => v.call('ready')),
      ...set.judgeEngines.map((e) => e.call('ready')),
    ]);
    set.runtime = {
      // 'onnxruntime/webgpu (KV cache on the GPU)': the device runner; a GPU provider without it
      // copies the cache to and fro every step.
      rollout: engines.map(
        (e) => `onnxruntime/${e.provider}${e.kvCache === 'device' ? ' (KV cache on the GPU)' : ''}`,
      ),
      // 'tfjs/webgpu on NVIDIA H200 (nvidia hopper, Vulkan)': the backend and its device.
      trainer: trainers.map((t) => `tfjs/${t.backend} on ${t.device}`),
    };
    // Why a shard passed over a faster backend (no Vulkan adapter, no Dawn package): the driver
    // says it beside a GPU job's warning.
    set.trainerSkipped = [...new Set(trainers.flatMap((t) => t.skipped))];
    await set.rebuildRing();
    return set;
  } catch (err) {
    await set.close();
    throw err;
  }
}
