/**
 * The RLJob manifest (DESIGN.md §5) as a zod schema. Every object is strict, so a misspelt
 * field is an error rather than a silently ignored knob. Every check carries one phrase saying
 * what is expected ("a whole number ≥ 1"); `messages.ts` turns it into "expected …, got …".
 *
 * Parsing is two steps: `rljobSchema` checks shapes and fills the defaults that depend on
 * nothing else; `resolveManifest` fills the per-track and per-method ones from `defaults.ts`.
 * Keeping the second step out of zod keeps the published JSON Schema a plain description of
 * what users may write.
 */
import { z } from 'zod';
import { MAX_JOB_RETRIES } from '../../common/job-names.js';
import {
  DEFAULT_MAX_DRIVER_RESTARTS,
  DEFAULT_MAX_STALENESS,
  DEFAULT_REWARD_RANGE,
  DEFAULT_SESSION_IDLE_MS,
  DEFAULT_STEP_REWARD_COEF,
  DEFAULT_TRAIN_STEPS,
  defaultCheckpointDir,
  defaultJudgeBackend,
  defaultJudgeVotes,
  JUDGE_BACKENDS,
  MANIFEST_TRACKS,
  METHOD_DEFAULTS,
  METHODS,
  perMethod,
  perTrack,
  RULES,
  STEP_RULES,
  TRACK_DEFAULTS,
  TRAINER_BACKENDS,
} from './defaults.js';

export const API_VERSION = 'clawray.dev/v1';
export const KIND = 'RLJob';

/** Resource amounts are kept to Ray's precision; finer requests cannot be honoured. */
const RESOURCE_PRECISION = 1e-4;

interface NumberRule {
  int?: boolean;
  min?: number;
  /** Exclusive lower bound. */
  gt?: number;
  max?: number;
  /** Exclusive upper bound. */
  lt?: number;
}

function describeNumber(rule: NumberRule): string {
  const base = rule.int ? 'a whole number' : 'a number';
  const low = rule.min !== undefined ? `[${rule.min}` : rule.gt !== undefined ? `(${rule.gt}` : undefined;
  const high = rule.max !== undefined ? `${rule.max}]` : rule.lt !== undefined ? `${rule.lt})` : undefined;
  if (low && high) return `${base} in ${low}, ${high}`;
  if (rule.min !== undefined) return `${base} ≥ ${rule.min}`;
  if (rule.gt !== undefined) return `${base} > ${rule.gt}`;
  if (rule.max !== undefined) return `${base} ≤ ${rule.max}`;
  if (rule.lt !== undefined) return `${base} < ${rule.lt}`;
  return base;
}

/** A number whose every failure says the same thing: what a valid value looks like. */
function num(rule: NumberRule = {}, expected = describeNumber(rule)) {
  const e = { error: expected };
  let s = z.number(e);
  if (rule.int) s = s.int(e);
  if (rule.min !== undefined) s = s.min(rule.min, e);
  if (rule.gt !== undefined) s = s.gt(rule.gt, e);
  if (rule.max !== undefined) s = s.max(rule.max, e);
  if (rule.lt !== undefined) s = s.lt(rule.lt, e);
  return s;
}

/**
 * A whole number from `min` to `max`: every count has a ceiling, so a typo (an extra few zeros)
 * is refused with the reason instead of a job that never ends or never fits.
 */
const count = (min: number, max: number, why: string) =>
  num({ int: true, min, max }, `a whole number in [${min}, ${max}] (${why})`);
const text = () => z.string({ error: 'a string' }).min(1, { error: 'a non-empty string' });
const bool = () => z.boolean({ error: 'true or false' });
const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: `one of ${values.join(', ')}` });
/** Strict: an unknown key is an error (the message names the closest known key). */
const section = <T extends z.core.$ZodLooseShape>(shape: T, expected = 'a mapping') =>
  z.strictObject(shape, { error: expected });

const onPrecision = (v: number) =>
  Math.abs(Math.round(v / RESOURCE_PRECISION) * RESOURCE_PRECISION - v) < 1e-9;

const GPU_EXPECTED = 'a fraction of one GPU (≤ 1, in steps of 0.0001) or a whole number of GPUs';
const gpuAmount = num({ min: 0 }, GPU_EXPECTED).refine(
  (v) => (v <= 1 || Number.isInteger(v)) && onPrecision(v),
  {
    error: GPU_EXPECTED,
    params: { expected: true },
  },
);
const CPU_EXPECTED = 'a number of CPUs ≥ 0, in steps of 0.0001';
const cpuAmount = num({ min: 0 }, CPU_EXPECTED).refine(onPrecision, {
  error: CPU_EXPECTED,
  params: { expected: true },
});

const PLACEMENT_STRATEGY = oneOf(['PACK', 'SPREAD', 'STRICT_PACK', 'STRICT_SPREAD'] as const)
  .default('PACK')
  .describe(
    "How the role's bundles spread over nodes (Ray's strategies); STRICT_PACK keeps them on one node, e.g. trainer shards that all-reduce over loopback",
  );

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const LABEL_KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

/**
 * A plugin module inside the working dir (uploaded with the job), so the path must stay inside
 * it: relative, no `..`, a JavaScript file, optionally `#export` naming the function.
 */
const MODULE_PATH =
  /^(?!\/)(?![A-Za-z][A-Za-z0-9+.-]*:)(?!(.*\/)?\.\.(\/|#|$))[^#\s]+\.(js|mjs|cjs)(#[A-Za-z_$][\w$]*)?$/;
const MODULE_EXPECTED =
  'a JavaScript module path relative to the working dir, like ./plugins/reward.js or ./plugins/reward.js#myReward';
const modulePath = () => z.string({ error: MODULE_EXPECTED }).regex(MODULE_PATH, { error: MODULE_EXPECTED });

const metadataSchema = section({
  name: z
    .string({ error: 'a DNS-1123 label (lowercase letters, digits and -, at most 63 characters)' })
    .regex(DNS_LABEL, { error: 'a DNS-1123 label (lowercase letters, digits and -, at most 63 characters)' })
    .describe('The job name: a DNS-1123 label, used for placement groups, metrics and the checkpoint dir'),
  labels: z
    .record(
      z.string().regex(LABEL_KEY, { error: 'a Kubernetes label key like team or example.com/team' }),
      z
        .string({ error: 'a Kubernetes label value (a string of at most 63 letters, digits, -, _ or .)' })
        .regex(LABEL_VALUE, {
          error: 'a Kubernetes label value (a string of at most 63 letters, digits, -, _ or .)',
        }),
      { error: 'a mapping of label names to strings' },
    )
    .default({})
    .describe('Free-form labels, carried to the job record and its metrics'),
});

const modelSchema = section(
  {
    path: text().describe(
      'Model directory (config.json, tokenizer.json, safetensors and/or model.onnx), relative to the working dir',
    ),
    name: text().optional().describe("The model id clients name in requests. Default: the directory's name"),
    provider: oneOf(['auto', 'cuda', 'webgpu', 'cpu'] as const)
      .default('auto')
      .describe('ONNX Runtime execution provider of the rollout engines'),
    maxBatchSize: count(1, 1024, 'sequences decoded together; more than any engine batches')
      .default(16)
      .describe('Sequences a rollout engine decodes together'),
    maxQueue: count(1, 1_000_000, 'requests waiting per engine')
      .default(1024)
      .describe('Requests waiting per rollout engine before new ones are refused'),
    weightDtype: oneOf(['float32', 'float16', 'bfloat16'] as const)
      .optional()
      .describe(
        "How the engines store weights they export from safetensors (float16/bfloat16: half the engine's memory; onnxruntime computes in float32). Default float32",
      ),
    attention: oneOf(['standard', 'slots', 'gqa'] as const)
      .optional()
      .describe(
        "The engines' decoder graph: slots (the cache stays in the engine's buffer, read in place; a step returns only its new keys/values), standard (optimum's: the cache concatenated and returned every step) or gqa (onnxruntime's GroupQueryAttention). Default slots",
      ),
    intraOpNumThreads: count(1, 1024, 'threads per engine')
      .optional()
      .describe(
        "Threads of each engine's onnxruntime intra-op pool. Default the role's resources cpus when ≥ 1 (Ray's OMP_NUM_THREADS), else one per physical core the engine's process may use, within its CPU quota",
      ),
    allowSpinning: bool()
      .default(true)
      .describe(
        'Whether idle onnxruntime threads spin (lowest latency; false frees cores on a shared machine)',
      ),
    prefillChunkTokens: count(1, 1_048_576, 'prompt tokens per prefill step')
      .default(512)
      .describe('Prompt tokens per prefill step: prompt memory grows linearly'),
    memoryBudgetMiB: num({ gt: 0 })
      .optional()
      .describe(
        "MiB one request's cache and activations may take in an engine before it is refused (400). Default half the node's memory",
      ),
    init: section({
      preset: oneOf(['tiny', 'small'] as const).describe('Model size preset (as `clawray model init`)'),
      seed: count(0, 2 ** 32 - 1, 'a 32-bit seed')
        .default(0)
        .describe('Seed of the random weights'),
      maxContext: count(16, 1_048_576, 'tokens of context; 1M is beyond any model this serves')
        .optional()
        .describe("Context length in tokens in place of the preset's (1024 for tiny, 2048 for small)"),
    })
      .optional()
      .describe(
        'When path holds no model: start from a random model of this preset (written once to the cluster data dir)',
      ),
    chatTemplate: text()
      .optional()
      .describe(
        "A Jinja chat template used instead of the model's own: a file (relative to the working dir), or builtin:compact-tools (Qwen's ChatML with the tools in one line: short prompts for small models)",
      ),
  },
  'a mapping like { path: ./models/tiny }',
);

const roleShape = {
  gpus: gpuAmount
    .default(0)
    .describe('GPUs per replica (or shard): a fraction ≤ 1 shares one GPU, more must be whole'),
  cpus: cpuAmount
    .default(0)
    .describe('CPUs reserved per replica or shard (0, like a Ray actor, places it anywhere)'),
  memoryMb: num({ min: 0 }).default(0).describe('Memory reserved per replica or shard, in MiB'),
  strategy: PLACEMENT_STRATEGY,
};

const resourcesSchema = section({
  rollout: section({
    replicas: count(1, 1024, 'actors of one role').default(1).describe('Rollout engines'),
    ...roleShape,
  })
    .prefault({})
    .describe('Rollout engines (OpenClaw-RL ROLLOUT_GPUS)'),
  judge: section({
    replicas: count(1, 1024, 'actors of one role').default(1).describe('Judge voters'),
    ...roleShape,
  })
    .prefault({})
    .describe('Judge voters (OpenClaw-RL PRM_GPUS); a rule judge takes no GPU'),
  trainer: section({
    shards: count(1, 1024, 'actors of one role')
      .default(1)
      .describe('Data-parallel trainer shards (ring all-reduce)'),
    ...roleShape,
  })
    .prefault({})
    .describe('Trainer shards (OpenClaw-RL ACTOR_GPUS)'),
  env: section({
    replicas: count(1, 1024, 'actors of one role')
      .default(1)
      .describe('Env-pool replicas, each holding env.parallel environments'),
    cpus: roleShape.cpus,
    memoryMb: roleShape.memoryMb,
    strategy: PLACEMENT_STRATEGY,
  })
    .prefault({})
    .describe('Env pools (CPU only); the personal track has none'),
});

const rolloutSchema = section({
  batchSize: count(1, 65_536, 'groups per optimizer step')
    .optional()
    .describe(`Prompts (groups) per training step. Default per track: ${perTrack('batchSize')}`),
  samplesPerPrompt: count(1, 1024, 'samples of one prompt')
    .optional()
    .describe(
      `Responses sampled per prompt (the GRPO group). Default per track: ${perTrack('samplesPerPrompt')}`,
    ),
  maxTurns: count(1, 10_000, 'model calls in one episode')
    .optional()
    .describe(
      `Agent turns per episode (personal: turns of one session that are trained). Default per track: ${perTrack('maxTurns')}`,
    ),
  maxTokens: count(1, 1_048_576, 'tokens of one reply; no context holds more')
    .optional()
    .describe(`New tokens per response. Default per track: ${perTrack('maxTokens')}`),
  temperature: num({ min: 0, max: 2 })
    .optional()
    .describe(`Sampling temperature. Default per track: ${perTrack('temperature')}`),
  topP: num({ gt: 0, max: 1 }).default(1).describe('Nucleus sampling mass'),
});

const judgeSchema = section({
  backend: oneOf(JUDGE_BACKENDS)
    .optional()
    .describe(
      `Who votes: an LLM judge, an ONNX process-reward classifier, or outcome rules. Default: llm for opd and combine (hints need an LLM), else per track: ${perTrack('judgeBackend')}`,
    ),
  votes: count(1, 64, 'votes on one turn')
    .optional()
    .describe(
      `Votes per turn, combined by majority (OpenClaw-RL PRM_M). Default: 1 for a rule judge, else per method: ${perMethod('modelJudgeVotes')}`,
    ),
  rule: oneOf(RULES)
    .optional()
    .describe(`The outcome rule of an env track. Default per track: ${perTrack('judgeRule')}`),
  model: text()
    .optional()
    .describe(
      'llm: model directory the judge replicas serve (default spec.model.path, the frozen initial policy, as in OpenClaw-RL), or with baseURL the model name there; onnx-prm: the classifier directory (required)',
    ),
  baseURL: z
    .url({ protocol: /^https?$/, error: 'an http(s) URL' })
    .optional()
    .describe('llm: an external OpenAI-compatible endpoint instead of judge replicas serving a model'),
  apiKeyEnv: text().optional().describe('llm: environment variable of the judge process holding the API key'),
  temperature: num({ min: 0, max: 2 })
    .optional()
    .describe('llm: sampling temperature of a vote. Default 0.6'),
  maxTokens: count(1, 1_048_576, 'tokens of one vote')
    .optional()
    .describe('llm: tokens per vote. Default 4096'),
  timeoutMs: count(1, 86_400_000, 'a day at most')
    .optional()
    .describe('Time one vote may take before it counts as invalid'),
  threshold: num({ min: 0, max: 1 })
    .optional()
    .describe('onnx-prm: probability above which a step is +1. Default 0.5'),
  voteThreshold: num({ min: 0, max: 1 })
    .optional()
    .describe(
      'Share of the votes of a turn that must agree for a +1 or −1 verdict (invalid votes count against it); otherwise 0. Default: a plain majority, ties 0',
    ),
  teacher: oneOf(['frozen', 'tracking'] as const)
    .optional()
    .describe(
      "opd/combine: whose logprobs teach. frozen: in-job engines serving the initial policy, never updated (OpenClaw-RL): the llm judge's engines, or with the reaction judge resources.judge.replicas engines started as teacher only; tracking: the rollout engines, which follow every update. Default frozen with an in-job llm judge on spec.model, else tracking",
    ),
  stepRule: oneOf(STEP_RULES)
    .optional()
    .describe(
      "A rule that scores each turn (a process reward without a model judge): toolcall-step (a call's result is the answer, the answer reports the tool's result). The outcome stays judge.rule's",
    ),
  stepRewardCoef: num()
    .optional()
    .describe(
      `Env tracks with a model judge or judge.stepRule: final reward = outcome + coef · mean per-turn score. Default ${DEFAULT_STEP_REWARD_COEF} for rl and combine`,
    ),
  rewardRange: z
    .tuple([num(), num()], { error: 'a pair [lowest, highest] of finite numbers' })
    .refine(([low, high]) => low < high, { error: 'a pair [lowest, highest] with lowest < highest' })
    .optional()
    .describe(
      `personal: the range of a turn's reward. Explicit feedback (POST /rl/set_reward) outside it is refused. Default [${DEFAULT_REWARD_RANGE.join(', ')}], the built-in judges' scores; a plugins.reward judge on another scale declares its own`,
    ),
});

const optimizerSchema = section({
  betas: z
    .tuple([num({ min: 0, lt: 1 }), num({ min: 0, lt: 1 })], {
      error: 'a pair [beta1, beta2], each in [0, 1)',
    })
    .default([0.9, 0.999])
    .describe('AdamW betas'),
  eps: num({ gt: 0 }).default(1e-8).describe('AdamW epsilon'),
  weightDecay: num({ min: 0 }).default(0).describe('AdamW decoupled weight decay'),
});

const loraSchema = section({
  rank: count(1, 4096, 'adapter rank; beyond any hidden size here').default(16).describe('Adapter rank'),
  alpha: num({ gt: 0 }).default(32).describe('Scale numerator: updates are scaled by alpha / rank'),
  dropout: num({ min: 0, lt: 1 }).default(0).describe('Dropout on the adapter input'),
  targetModules: z
    .array(
      z
        .string({ error: "a module name like 'q_proj'" })
        .regex(/^[A-Za-z0-9_]+$/, { error: "a module name like 'q_proj'" }),
      { error: "a list of module names like ['q_proj', 'v_proj']" },
    )
    .min(1, { error: "a non-empty list of module names like ['q_proj', 'v_proj']" })
    .default(['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'])
    .describe('Linear modules that get adapters (OpenClaw-RL targets all seven)'),
});

const trainSchema = section({
  steps: count(1, 10_000_000, 'optimizer steps')
    .optional()
    .describe(
      `Optimizer steps of the job. Default ${DEFAULT_TRAIN_STEPS}; a live personal job (no spec.user) without it trains until stopped`,
    ),
  lr: num({ gt: 0 })
    .optional()
    .describe(`Peak learning rate. Default per method: ${perMethod('lr')}`),
  schedule: oneOf(['constant', 'cosine', 'linear'] as const)
    .default('constant')
    .describe('Learning-rate decay over train.steps, after lrWarmupSteps'),
  lrWarmupSteps: count(0, 10_000_000, 'optimizer steps')
    .default(0)
    .describe('Steps of linear learning-rate warmup from 0'),
  minLr: num({ min: 0 }).default(0).describe('Floor the cosine/linear decay ends at'),
  clip: z
    .tuple([num({ gt: 0, lt: 1 }), num({ gt: 0, lt: 1 })], {
      error: 'a pair [low, high] of numbers in (0, 1)',
    })
    .default([0.2, 0.28])
    .describe("PPO's asymmetric clip [ε_low, ε_high]"),
  klCoef: num({ min: 0 }).default(0).describe('Weight of the k3 KL penalty to the initial policy'),
  entropyCoef: num({ min: 0 }).default(0).describe('Weight of the entropy bonus'),
  maxGradNorm: num({ min: 0 }).default(1).describe('Global gradient-norm cap (0 turns clipping off)'),
  async: bool().default(true).describe('Roll out step k+1 while step k trains'),
  maxStaleness: count(0, 1000, 'policy versions behind')
    .optional()
    .describe(
      `Max policy versions a trained sample may lag behind. Default ${DEFAULT_MAX_STALENESS.async} when async, ${DEFAULT_MAX_STALENESS.sync} otherwise`,
    ),
  updateWeightsEvery: count(1, 100_000, 'optimizer steps')
    .default(1)
    .describe('Publish weights to the rollout engines every N steps'),
  microBatchSize: count(1, 65_536, 'samples per pass')
    .optional()
    .describe(
      'Samples per forward/backward pass of a shard at most (gradients accumulate). Default: as many as passMemoryMiB allows',
    ),
  passMemoryMiB: count(16, 1_048_576, 'MiB')
    .default(1024)
    .describe(
      "Activation memory one forward/backward pass may use, estimated from the model's shape and the samples' lengths; batches are split into micro-batches of similar lengths that fit",
    ),
  gradientCheckpointing: oneOf(['auto', 'on', 'off'] as const)
    .default('auto')
    .describe(
      "Recompute each layer's activations for its gradient, keeping only its input: a pass holds one layer's activations for about a third more compute. auto: when a step's longest sample alone exceeds passMemoryMiB",
    ),
  backend: oneOf(TRAINER_BACKENDS)
    .default('auto')
    .describe(
      "Trainer shards' TensorFlow.js backend. auto: tfjs-node-gpu when installed; else, on a shard that holds a GPU, webgpu (TensorFlow.js on Dawn: the optional npm package webgpu and the GPU's Vulkan driver); else tfjs-node; else wasm. A named backend that cannot run on a shard fails the job, saying why",
    ),
  seed: num({ int: true }).default(0).describe('Seeds LoRA dropout and sampling order, so runs repeat'),
  optimizer: optimizerSchema.prefault({}).describe('AdamW settings'),
  lora: loraSchema.optional().describe('Train LoRA adapters instead of every weight'),
  warmup: section({
    steps: count(1, 10_000_000, 'optimizer steps').describe(
      'SFT steps on the oracle traces of env.tasks before RL starts',
    ),
    lr: num({ gt: 0 }).optional().describe('Learning rate of the warm start. Default train.lr'),
    schedule: oneOf(['constant', 'cosine', 'linear'] as const)
      .default('constant')
      .describe("The warm start's learning-rate decay from warmup.lr to warmup.minLr over warmup.steps"),
    minLr: num({ min: 0 }).default(0).describe('Floor the cosine/linear decay of the warm start ends at'),
    batchSize: count(1, 1_000_000, 'samples of one step')
      .optional()
      .describe('Oracle turns per warm-start step. Default rollout.batchSize × rollout.samplesPerPrompt'),
    resetOptimizer: bool()
      .default(true)
      .describe(
        "Start RL with fresh AdamW moments, as an RL job loading an SFT checkpoint does (the step count goes on); false keeps the warm start's",
      ),
  })
    .optional()
    .describe('SFT warm start from oracle traces (env tracks; not with method sft)'),
  combine: section({
    opdWeight: num({ min: 0 }).default(1).describe('w_opd: weight of teacher − old logprob'),
    rlWeight: num({ min: 0 }).default(1).describe('w_rl: weight of the reward'),
  })
    .optional()
    .describe('Advantage weights of method combine: w_opd·(teacher − old) + w_rl·r'),
  distillTopK: count(1, 1000, 'teacher tokens per position; each is stored with the trajectory')
    .optional()
    .describe(
      "opd/combine: reverse KL over the teacher's top-K tokens plus a tail bin (OpenClaw-RL uses 50), in place of the sampled-token advantage teacher − old; combine weighs it with w_opd",
    ),
  distillDirection: oneOf(['reverse', 'forward'] as const)
    .optional()
    .describe(
      'With distillTopK: reverse KL(student‖teacher) (OpenClaw-RL, the default) or forward KL(teacher‖student), which also raises teacher tokens the student gives no probability',
    ),
  distillOn: oneOf(['student', 'teacher', 'both'] as const)
    .optional()
    .describe(
      "With distillTopK: which reply of a hinted turn is distilled. student: the turn's own tokens under the teacher (OpenClaw-RL, the default); teacher: the teacher's own greedy reply under the hint, distilled into the student without it (context distillation: the whole preferred reply, where the student's own tokens teach a multi-token change one token per round of sampling); both",
    ),
  hintSelect: oneOf(['longest', 'topk-overlap'] as const)
    .optional()
    .describe(
      "opd/combine: which +1 vote's hint teaches. longest (OpenClaw-RL, the default); topk-overlap (needs distillTopK): the candidate whose teacher top-K sets overlap most with the student's own, mean over positions of |teacher ∩ student| / K (ties: the longest)",
    ),
  tis: section({
    cap: num({ gt: 1 }).describe('Largest importance weight exp(proximal − rollout logprob) a token gets'),
  })
    .optional()
    .describe(
      "Truncated importance sampling for stale samples (slime's --use-tis, AReaL's decoupled PPO): PPO against the current policy's logprobs before the step, each token weighted by min(exp(proximal − rollout), cap). Absent: off",
    ),
});

const envSchema = section({
  tasks: text()
    .default('builtin')
    .describe(
      "'builtin' (the track's generated suite) or a task file or directory relative to the working dir",
    ),
  parallel: count(1, 4096, 'environments per replica')
    .optional()
    .describe(`Environments per env-pool replica. Default per track: ${perTrack('envParallel')}`),
  split: oneOf(['train', 'heldout', 'all'] as const)
    .default('train')
    .describe('Which tasks training draws from'),
  draw: oneOf(['all', 'without-oracle'] as const)
    .default('all')
    .describe(
      "Which of env.split's tasks RL episodes play: all, or only those without an oracle trace (the ones train.warmup could not imitate)",
    ),
  seed: num({ int: true }).default(0).describe('Seed of the task order'),
  settings: z
    .record(z.string(), z.unknown(), { error: 'a mapping of track settings' })
    .default({})
    .describe('Track-specific settings (limits, paths), validated by the track'),
});

const evalSchema = section({
  everySteps: count(0, 10_000_000, 'optimizer steps')
    .optional()
    .describe(
      `Evaluate every N training steps (0 = never). Default per track: ${perTrack('evalEverySteps')}`,
    ),
  tasks: text().optional().describe("'builtin' or a task file; default env.tasks"),
  split: oneOf(['train', 'heldout', 'all'] as const)
    .default('heldout')
    .describe('Which tasks evaluation uses'),
});

const checkpointSchema = section({
  dir: text()
    .optional()
    .describe(
      `Checkpoint directory; a relative path is under the cluster data dir ($CLAWRAY_HOME). Default ${defaultCheckpointDir('<metadata.name>')}`,
    ),
  everySteps: count(0, 10_000_000, 'optimizer steps')
    .default(100)
    .describe('Save every N steps (0 = only at the end)'),
  keep: count(1, 1000, 'checkpoints kept on disk')
    .default(3)
    .describe('Checkpoints kept; older ones are deleted'),
  resume: bool()
    .default(false)
    .describe('Resume from the newest checkpoint in dir (`clawray job submit --resume` sets it)'),
});

const userSchema = section({
  preference: text().describe(
    "The simulated user's stable preference: signoff, prefix, lowercase, brackets, brief or name, optionally kind:param (signoff:-- ok, brief:5, name:Sam)",
  ),
  parallel: count(1, 1024, 'simulated users at once').default(4).describe('Simulated users chatting at once'),
  turnsPerSession: count(1, 10_000, 'replies of one session')
    .default(4)
    .describe('Agent replies per session'),
  seed: num({ int: true }).default(0).describe('Seeds requests and wording'),
  evalSessions: count(1, 100_000, 'sessions of one evaluation')
    .default(16)
    .describe('Held-out sessions per evaluation'),
});

const pluginsSchema = section({
  reward: modulePath()
    .optional()
    .describe(
      "Custom reward function (slime --custom-rm-path): an env track's episode outcome, or the personal track's per-turn judge",
    ),
  loss: modulePath().optional().describe('Custom loss (slime --custom-loss-function-path)'),
  environment: modulePath().optional().describe('Custom environment factory (replaces the track env)'),
  rollout: modulePath()
    .optional()
    .describe('Custom rollout/generate function (slime --rollout-function-path)'),
});

const serveSchema = section({
  host: text().default('127.0.0.1').describe('Address the OpenAI-compatible API binds'),
  port: num({ int: true, min: 0, max: 65535 })
    .default(30000)
    .describe('Port of the OpenAI-compatible API (0: any free port, logged at start)'),
  auth: oneOf(['key', 'none'] as const)
    .default('key')
    .describe(
      "key: every request needs the job's key (apiKeyEnv's value, else the cluster token) or a per-session key from POST /rl/start_session; none: anyone who reaches the port may chat and inject training data",
    ),
  apiKeyEnv: text()
    .optional()
    .describe(
      "Environment variable (of the job's driver) holding the key clients send, in place of the cluster token",
    ),
  maxRequestBytes: count(1024, 1024 ** 3, 'bytes of one request; 1 GiB at most')
    .optional()
    .describe(
      "Largest request body; larger ones get 413 before they are parsed. Default 64 bytes per token of the model's context, at least 1 MiB",
    ),
  sessions: section({
    idleTimeoutMs: count(1000, 30 * 86_400_000, 'thirty days at most')
      .default(DEFAULT_SESSION_IDLE_MS)
      .describe(
        'A session with no request for this long has ended: its last turn is judged without a next state. OpenClaw never says a session is done, so this is its end',
      ),
    maxOpen: count(1, 10_000_000, 'sessions tracked in memory')
      .default(10_000)
      .describe('Sessions tracked at once; past it the least recently active ends'),
  })
    .prefault({})
    .describe('When a live session ends'),
  sideCalls: z
    .record(z.string().regex(/^[a-z][a-z0-9_]*$/, { error: 'a kind like memory_flush' }), text(), {
      error: 'a mapping of side-call kind to a regular expression',
    })
    .default({})
    .describe(
      "More side calls (served, never trained): kind → regular expression matched against a request's last user message, beside the built-in OpenClaw markers",
    ),
});

const specSchema = section({
  track: oneOf(MANIFEST_TRACKS).describe('personal | terminal | gui | swe | toolcall'),
  method: oneOf(METHODS)
    .default('rl')
    .describe('rl (GRPO + PPO clip), opd (hindsight-hint distillation), combine (both), sft'),
  model: modelSchema.describe('The policy model'),
  resources: resourcesSchema
    .prefault({})
    .describe('The GPU partition, turned into one placement group per role'),
  rollout: rolloutSchema.prefault({}).describe('Sampling'),
  judge: judgeSchema.prefault({}).describe('Rewards, votes and hints'),
  train: trainSchema.prefault({}).describe('Optimisation'),
  env: envSchema.optional().describe('Task environments (env tracks only)'),
  eval: evalSchema.prefault({}).describe('Periodic evaluation on held-out tasks'),
  checkpoint: checkpointSchema.prefault({}).describe('Checkpoints and resume'),
  maxDriverRestarts: num({ int: true, min: 0, max: MAX_JOB_RETRIES })
    .default(DEFAULT_MAX_DRIVER_RESTARTS)
    .describe(
      "How often the job's driver is started again, from its last checkpoint, when it dies with its node or is SIGKILLed (RayJob's backoffLimit); an error exit is never retried. `clawray job submit --max-retries` overrides it",
    ),
  plugins: pluginsSchema.prefault({}).describe('Extension modules, like slime --custom-*-path'),
  serve: serveSchema.optional().describe('personal: the OpenAI-compatible API live sessions talk to'),
  user: userSchema
    .optional()
    .describe(
      'personal: a simulated user who chats through the API and reacts in the next message (runs offline); without it, sessions come from real clients',
    ),
});

export const rljobSchema = section({
  apiVersion: z.literal(API_VERSION, { error: `"${API_VERSION}"` }).describe(`Always ${API_VERSION}`),
  kind: z.literal(KIND, { error: `"${KIND}"` }).describe(`Always ${KIND}`),
  metadata: metadataSchema,
  spec: specSchema,
}).describe('A clawray RL job: asynchronous RL of an LLM agent on one track');

/** What a user may write. */
export type RLJobManifestInput = z.input<typeof rljobSchema>;
/** Shapes checked, track- and method-dependent defaults not yet filled. */
export type RawManifest = z.output<typeof rljobSchema>;

/** Fills every default that depends on the track or the method (see `defaults.ts`). */
export function resolveManifest(raw: RawManifest) {
  const { track, method } = raw.spec;
  const t = TRACK_DEFAULTS[track];
  const m = METHOD_DEFAULTS[method];
  const { rollout, judge, train } = raw.spec;
  const backend = judge.backend ?? defaultJudgeBackend(track, method);
  const modelJudge = backend !== 'rule';
  const envTrack = track !== 'personal';
  const lr = train.lr ?? m.lr;
  const env = envTrack ? { ...(raw.spec.env ?? envSchema.parse({})) } : undefined;
  return {
    ...raw,
    spec: {
      ...raw.spec,
      rollout: {
        ...rollout,
        batchSize: rollout.batchSize ?? t.batchSize,
        samplesPerPrompt: rollout.samplesPerPrompt ?? t.samplesPerPrompt,
        maxTurns: rollout.maxTurns ?? t.maxTurns,
        maxTokens: rollout.maxTokens ?? t.maxTokens,
        temperature: rollout.temperature ?? t.temperature,
      },
      judge: {
        ...judge,
        backend,
        mode: m.judgeMode,
        votes: judge.votes ?? defaultJudgeVotes(backend, method),
        rule: envTrack ? (judge.rule ?? t.judgeRule ?? undefined) : undefined,
        model: judge.model ?? (backend === 'llm' && !judge.baseURL ? raw.spec.model.path : undefined),
        temperature: backend === 'llm' ? (judge.temperature ?? 0.6) : undefined,
        maxTokens: backend === 'llm' ? (judge.maxTokens ?? 4096) : undefined,
        threshold: backend === 'onnx-prm' ? (judge.threshold ?? 0.5) : undefined,
        teacher:
          judge.teacher ??
          (backend === 'llm' && !judge.baseURL && (judge.model ?? raw.spec.model.path) === raw.spec.model.path
            ? 'frozen'
            : 'tracking'),
        rewardRange: envTrack ? undefined : (judge.rewardRange ?? DEFAULT_REWARD_RANGE),
        stepRewardCoef:
          judge.stepRewardCoef ??
          (envTrack && (modelJudge || judge.stepRule) && (method === 'rl' || method === 'combine')
            ? DEFAULT_STEP_REWARD_COEF
            : undefined),
      },
      train: {
        ...train,
        // A live personal job serves its users until stopped: no step count ends it.
        steps: train.steps ?? (track === 'personal' && !raw.spec.user ? undefined : DEFAULT_TRAIN_STEPS),
        lr,
        maxStaleness:
          train.maxStaleness ?? (train.async ? DEFAULT_MAX_STALENESS.async : DEFAULT_MAX_STALENESS.sync),
        warmup: train.warmup ? { ...train.warmup, lr: train.warmup.lr ?? lr } : undefined,
        combine: train.combine ?? (method === 'combine' ? { opdWeight: 1, rlWeight: 1 } : undefined),
        hintSelect: train.hintSelect ?? 'longest',
        distillDirection: train.distillDirection ?? 'reverse',
        distillOn: train.distillOn ?? 'student',
      },
      env: env && { ...env, parallel: env.parallel ?? t.envParallel ?? 1 },
      eval: {
        ...raw.spec.eval,
        everySteps: raw.spec.eval.everySteps ?? t.evalEverySteps,
        tasks: raw.spec.eval.tasks ?? env?.tasks,
      },
      checkpoint: {
        ...raw.spec.checkpoint,
        dir: raw.spec.checkpoint.dir ?? defaultCheckpointDir(raw.metadata.name),
      },
      serve: raw.spec.serve ?? (envTrack ? undefined : serveSchema.parse({})),
    },
  };
}

/** A validated manifest with every default filled in. */
export type RLJobManifest = ReturnType<typeof resolveManifest>;
export type RLJobSpec = RLJobManifest['spec'];
