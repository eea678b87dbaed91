/**
 * `TrainerShard`: one data-parallel rank of the policy trainer, as an actor. It loads the
 * model directory into TensorFlow.js on the backend `train.backend` names or the best one it has
 * (`auto`: on a shard that holds a GPU, tfjs-node-gpu, else WebGPU through Dawn; tfjs-backend.ts),
 * says which and on what device in its log, `ready()` and metrics, trains on its slice of each
 * global batch, sums gradients with the other ranks over the collective ring (so every rank
 * applies the same update: on the host, bit-identical weights; on a GPU, gradients all-reduced
 * bucket by bucket during the backward pass and applied there), checkpoints, and exports
 * per-step metrics.
 *
 *   const shards = await Promise.all([0, 1].map(() => cluster.createActor({ module: 'clawray/trainer',
 *     className: 'TrainerShard', args: [{ modelDir, method: 'rl', optimizer: { lr: 1e-5 } }] })));
 *   await createCollectiveGroup(cluster, shards, 'trainer');
 */
import { createHash } from 'node:crypto';
import * as tf from '@tensorflow/tfjs';
import { Counter, Gauge, Histogram, register } from 'prom-client';
import { createLogger } from '../../common/logger.js';
import { loadPluginFunction } from '../../common/plugin-module.js';
import { actorContext, insideActor } from '../../runtime/index.js';
import { CollectiveMember } from '../collective/member.js';
import { loadModelDir, type ModelDir } from '../models/model-dir.js';
import {
  type BackendChoice,
  type BackendRequest,
  chooseBackend,
  webgpuAdapterNames,
} from '../models/tfjs-backend.js';
import { TfjsDecoder } from '../models/tfjs-decoder.js';
import { type WeightMap, weightSpecs } from '../models/weight-names.js';
import { CheckpointManager } from './checkpoint.js';
import { assertFiniteWeights } from './finite-weights.js';
import { initLoraAdapters, type LoraConfig, loraScale, loraTargets } from './lora.js';
import { canonicalOrder } from './optimizer.js';
import {
  type CustomLoss,
  PolicyTrainer,
  type PolicyTrainerOptions,
  type StepMetrics,
  type TrainSample,
} from './policy-trainer.js';

export interface TrainerShardOptions extends PolicyTrainerOptions {
  modelDir: string;
  /**
   * `auto` (default): tfjs-node-gpu; else, on a shard that holds a GPU, WebGPU (Dawn, a hardware
   * Vulkan adapter); else tfjs-node, wasm, cpu. A named backend that cannot run here is refused.
   */
  backend?: BackendRequest;
  /** Whether this shard holds a GPU (default: the GPUs the runtime gave this actor). */
  holdsGpu?: boolean;
  /** Where checkpoints go (rank 0 writes them); omit for none. */
  checkpointDir?: string;
  /** Checkpoints kept. Default 3. */
  keepLast?: number;
  /** Save a checkpoint every N steps (rank 0 of a group saves). Default 0: only when asked. */
  checkpointEvery?: number;
  /** Train LoRA adapters on these modules instead of every weight; published weights have them merged. */
  lora?: LoraConfig;
  /** Seeds the adapters' initialisation (the same on every rank). Default 0. */
  seed?: number;
  /** Absolute path (optionally `#export`) of a module whose function is the RL loss (see CustomLoss). */
  lossModule?: string;
}

export interface ShardInfo {
  backend: string;
  /** What the backend computes on: 'NVIDIA H200 (nvidia hopper, Vulkan)', 'CPU (WebAssembly, XNNPACK)'. */
  device: string;
  /** Backends `auto` passed over before this one, each with why ('webgpu: no Vulkan adapter …'). */
  skipped: string[];
  /** Where gradients are summed and applied: 'host' (JavaScript AdamW) or 'device'. */
  update: 'host' | 'device';
  /** The model's parameters: the base's and the adapters' (PEFT's "all params"). */
  parameters: number;
  /** What training updates: every parameter, or only the LoRA adapters'. */
  trainableParameters: number;
  step: number;
}

function shardMetrics() {
  const existing = register.getSingleMetric('clawray_trainer_step_seconds');
  if (existing) return undefined; // one shard per process; a second one shares the first's metrics
  const gauge = (name: string, help: string) => new Gauge({ name, help, registers: [register] });
  return {
    seconds: new Histogram({
      name: 'clawray_trainer_step_seconds',
      help: 'Time of one training step on this shard (forward, backward, all-reduce, update)',
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [register],
    }),
    tokens: new Counter({
      name: 'clawray_trainer_tokens_total',
      help: 'Response tokens trained on by this shard',
      registers: [register],
    }),
    loss: gauge(
      'clawray_trainer_loss',
      'Loss of the last step (global-token normalised, this shard’s share)',
    ),
    pgLoss: gauge('clawray_trainer_pg_loss', 'Policy-gradient part of the last step’s loss'),
    kl: gauge('clawray_trainer_kl', 'KL to the reference policy in the last step'),
    entropy: gauge('clawray_trainer_entropy', 'Mean token entropy of the policy in the last step'),
    clipFraction: gauge(
      'clawray_trainer_clip_fraction',
      'Share of tokens whose ratio was clipped in the last step',
    ),
    gradNorm: gauge('clawray_trainer_grad_norm', 'Global gradient norm before clipping in the last step'),
    lr: gauge('clawray_trainer_lr', 'Learning rate of the last step'),
    passes: gauge(
      'clawray_trainer_passes',
      'Forward/backward passes (micro-batches) the last step took within train.passMemoryMiB',
    ),
    checkpointing: gauge(
      'clawray_trainer_gradient_checkpointing',
      'Whether the last step ran with gradient checkpointing (1) or not (0): train.gradientCheckpointing',
    ),
    mismatch: gauge(
      'clawray_trainer_mismatch',
      'Train–inference mismatch of the last step: mean |trainer − rollout logprob| of tokens scored with the weights that drew them, at the sampling temperature (goal ≤ 1e-3)',
    ),
    policyLag: gauge(
      'clawray_trainer_policy_lag',
      'Policy lag of the last step: mean |trainer − rollout logprob| of stale samples’ tokens under the current weights (async training)',
    ),
    tisWeight: gauge(
      'clawray_trainer_tis_weight',
      'Mean truncated importance weight min(exp(proximal − rollout logprob), cap) of the last step (train.tis)',
    ),
    skipped: new Counter({
      name: 'clawray_trainer_skipped_steps_total',
      help: 'Steps not taken because their loss or summed gradients were not finite (NaN or infinite): the weights stayed as they were',
      registers: [register],
    }),
    backend: new Gauge({
      name: 'clawray_trainer_backend',
      help: 'The TensorFlow.js backend in use and the device it computes on (1 for the active one)',
      labelNames: ['backend', 'device'],
      registers: [register],
    }),
  };
}

/** Adapters for the configured modules, initialised as PEFT does (B = 0: no change at first). */
function loraOption(model: ModelDir, config: LoraConfig, seed: number) {
  const shapes = new Map(weightSpecs(model.dims).map((spec) => [spec.name, spec.shape]));
  const adapters = initLoraAdapters(loraTargets(shapes.keys(), config), shapes, config, seed);
  return {
    scale: loraScale(config),
    dropout: config.dropout,
    adapters: new Map([...adapters].map(([target, a]) => [target, { A: a.A, B: a.B, rank: a.rank }])),
  };
}

/** Weights leaving the shard for rollout engines: never a NaN or an infinity. */
function publishable(weights: Map<string, Float32Array>): Record<string, Float32Array> {
  assertFiniteWeights(weights, 'weights to publish');
  return Object.fromEntries(weights);
}

export class TrainerShard extends CollectiveMember {
  private readonly loading: Promise<{
    trainer: PolicyTrainer;
    backend: BackendChoice;
    checkpoints?: CheckpointManager;
  }>;
  private readonly metrics = shardMetrics();

  constructor(private readonly options: TrainerShardOptions) {
    super();
    this.loading = this.load();
    this.loading.catch(() => {
      // Reported by ready() and every call.
    });
  }

  private async load() {
    const holdsGpu = this.options.holdsGpu ?? (insideActor() && actorContext().gpuIds.length > 0);
    const backend = await chooseBackend(this.options.backend ?? 'auto', { holdsGpu });
    const log = createLogger({ component: 'trainer' });
    log.info(
      {
        backend: backend.backend,
        device: backend.device,
        ...(backend.skipped.length ? { skipped: backend.skipped } : {}),
      },
      `trainer shard on tfjs/${backend.backend}: ${backend.device}${backend.skipped.length ? ` (passed over: ${backend.skipped.join('; ')})` : ''}`,
    );
    this.metrics?.backend.set({ backend: backend.backend, device: backend.device }, 1);
    if (backend.backend === 'webgpu' && holdsGpu) {
      const adapters = (await webgpuAdapterNames()).filter((n) => !/llvmpipe|lavapipe|swiftshader/i.test(n));
      if (adapters.length > 1) {
        log.warn(
          { adapters },
          `this machine has ${adapters.length} Vulkan GPUs and WebGPU opens the first whatever GPU this shard was given (Vulkan ignores CUDA_VISIBLE_DEVICES): give each trainer worker one GPU (a pod per GPU), or install @tensorflow/tfjs-node-gpu`,
        );
      }
    }
    const name = backend.backend;
    const model = loadModelDir(this.options.modelDir);
    // wasm has no gradient for gather: embed with a one-hot product there when the embedding
    // trains. Under LoRA it is frozen (no gradient flows into it), and a lookup spares a
    // [tokens, vocab] one-hot and a tokens × vocab × hidden product (as costly as the LM head).
    // Under LoRA on TF.js's JavaScript backends the frozen base stays in host memory and each
    // matrix is uploaded for its product alone (host-matrix.ts): wasm's heap stops at 4 GiB, which
    // a 0.6B base (2.4 GB in float32) beside a pass's activations exceeds. A native backend
    // (tfjs-node) and a GPU's memory (webgpu) keep it resident, where uploads would cost transfers.
    const decoder = new TfjsDecoder(model.config, model.weights, {
      embedding: name === 'wasm' && !this.options.lora ? 'onehot' : 'gather',
      lora: this.options.lora ? loraOption(model, this.options.lora, this.options.seed ?? 0) : undefined,
      frozenBaseOnHost: this.options.lora !== undefined && (name === 'wasm' || name === 'cpu'),
    });
    const customLoss = this.options.lossModule
      ? await loadPluginFunction<CustomLoss>(this.options.lossModule, '/', 'loss')
      : undefined;
    const trainer = new PolicyTrainer(decoder, { ...this.options, customLoss });
    const checkpoints = this.options.checkpointDir
      ? new CheckpointManager({ dir: this.options.checkpointDir, keepLast: this.options.keepLast ?? 3 })
      : undefined;
    return { trainer, backend, checkpoints };
  }

  async ready(): Promise<ShardInfo> {
    const { trainer, backend } = await this.loading;
    return {
      backend: backend.backend,
      device: backend.device,
      skipped: backend.skipped,
      update: trainer.updatesOn,
      parameters: trainer.decoder.parameterCount,
      trainableParameters: [...trainer.decoder.trainableVariables.values()].reduce((n, v) => n + v.size, 0),
      step: trainer.stepsTaken,
    };
  }

  /**
   * One step on this shard's samples. `globalTokens` is the response-token count of the whole
   * global batch (all shards); with a collective group the gradients are summed over it.
   */
  async trainStep(
    samples: TrainSample[],
    options: { globalTokens?: number; method?: 'rl' | 'sft'; lr?: number } = {},
  ): Promise<StepMetrics> {
    const { trainer } = await this.loading;
    const started = performance.now();
    const metrics = await trainer.step(samples, {
      globalTokens: options.globalTokens,
      method: options.method,
      lr: options.lr,
      reduce: this.collective ? (flat) => this.allReduce(flat, 'sum') : undefined,
    });
    const m = this.metrics;
    if (m && metrics.skipped) m.skipped.inc();
    else if (m) {
      m.seconds.observe((performance.now() - started) / 1000);
      m.tokens.inc(metrics.tokens);
      m.loss.set(metrics.loss);
      m.pgLoss.set(metrics.pgLoss);
      m.kl.set(metrics.kl);
      m.entropy.set(metrics.entropy);
      m.clipFraction.set(metrics.clipFraction);
      m.gradNorm.set(metrics.gradNorm);
      m.lr.set(metrics.lr);
      m.passes.set(metrics.passes);
      m.checkpointing.set(metrics.gradientCheckpointing ? 1 : 0);
      if (metrics.mismatch !== null) m.mismatch.set(metrics.mismatch);
      if (metrics.policyLag !== null) m.policyLag.set(metrics.policyLag);
      if (metrics.tisWeight !== undefined) m.tisWeight.set(metrics.tisWeight);
    }
    const every = this.options.checkpointEvery ?? 0;
    if (every > 0 && !metrics.skipped && metrics.step % every === 0 && (this.collective?.rank ?? 0) === 0)
      await this.saveCheckpoint();
    return metrics;
  }

  /**
   * Starts AdamW's moments afresh (the step count goes on): called where the objective changes,
   * after a job's SFT warm start, so RL's first steps are not shaped by SFT's moments.
   */
  async resetOptimizer(): Promise<void> {
    const { trainer } = await this.loading;
    trainer.resetOptimizer();
  }

  /** The current weights by Hugging Face name, adapters merged (what rollout engines serve). */
  async readWeights(): Promise<Record<string, Float32Array>> {
    return publishable(await (await this.loading).trainer.decoder.readMergedWeightsAsync());
  }

  /**
   * What rollout engines need for the current step: with LoRA only the adapters by PEFT name
   * and their scale (delta sync; the engine merges them into its base), else every weight.
   */
  async readPublishable(): Promise<
    | { lora: { scale: number; adapters: Record<string, Float32Array> } }
    | { weights: Record<string, Float32Array> }
  > {
    const { trainer } = await this.loading;
    if (!this.options.lora) return { weights: publishable(await trainer.decoder.readMergedWeightsAsync()) };
    return {
      lora: {
        scale: loraScale(this.options.lora),
        adapters: publishable(await trainer.decoder.readTrainableAsync()),
      },
    };
  }

  /** SHA-256 of every weight's bytes in name order: equal on every rank of a group. */
  async weightsDigest(): Promise<string> {
    const weights: WeightMap = await (await this.loading).trainer.decoder.readTrainableAsync();
    const hash = createHash('sha256');
    for (const name of canonicalOrder(weights.keys())) hash.update(new Uint8Array(weights.get(name)!.buffer));
    return hash.digest('hex');
  }

  /** Writes a checkpoint (weights and optimizer state); returns its path. */
  async saveCheckpoint(extra: { dataCursor?: number } = {}): Promise<string> {
    const { trainer, checkpoints } = await this.loading;
    if (!checkpoints) throw new Error('this shard was created without checkpointDir');
    // What training changes: every weight, or only the LoRA adapters.
    const weights = await trainer.decoder.readTrainableAsync();
    const shapes = new Map([...trainer.decoder.trainableVariables].map(([name, v]) => [name, v.shape]));
    return checkpoints.save({
      step: trainer.stepsTaken,
      weights,
      shapes,
      optimizerState: await trainer.optimizerState(),
      // Dropout masks derive from (seed, step, micro-batch): the seed and the step are the RNG state.
      rngState: { seed: this.options.seed ?? 0, step: trainer.stepsTaken },
      dataCursor: extra.dataCursor ?? null,
    });
  }

  /** Restores the latest checkpoint (or `step`); returns the step it resumed at. */
  async resume(step?: number): Promise<number> {
    const { trainer, checkpoints } = await this.loading;
    if (!checkpoints) throw new Error('this shard was created without checkpointDir');
    const loaded = checkpoints.load(step);
    trainer.decoder.assignTrainable(loaded.weights);
    trainer.forgetDrawnWeights();
    if (loaded.optimizerState) trainer.loadOptimizerState(loaded.optimizerState);
    return loaded.step;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.collectiveClose();
    const loaded = await this.loading.catch(() => undefined);
    loaded?.trainer.dispose();
    loaded?.trainer.decoder.dispose();
    tf.disposeVariables();
  }
}
