/**
 * Every default of an RLJob manifest that depends on the track or the method, in one place.
 * The schema's descriptions are generated from these tables, so `jobs/schema/rljob.json` and
 * the resolver can never disagree with them. Defaults that depend on neither sit on the schema
 * itself (`.default(...)`).
 */
import { TRACK_NAMES } from '../../actors/envs/track.js';
import { RULES, type RuleName } from '../../actors/judge/rule-verifiers.js';
import { STEP_RULES, type StepRuleName } from '../../actors/judge/step-rules.js';

/** The env tracks plus `personal`, whose samples come from live sessions, not an env pool. */
export const MANIFEST_TRACKS = ['personal', ...TRACK_NAMES] as const;
export type ManifestTrack = (typeof MANIFEST_TRACKS)[number];

export const METHODS = ['rl', 'opd', 'combine', 'sft'] as const;
export type Method = (typeof METHODS)[number];

/** `reaction`: the personal track's stand-in judge that reads the simulated user's reactions. */
export const JUDGE_BACKENDS = ['llm', 'onnx-prm', 'rule', 'reaction'] as const;
/** train.backend: a trainer shard's TensorFlow.js backend (actors/models/tfjs-backend.ts). */
export const TRAINER_BACKENDS = ['auto', 'webgpu', 'wasm', 'cpu', 'tensorflow'] as const;
export type JudgeBackendName = (typeof JUDGE_BACKENDS)[number];

export { RULES, type RuleName, STEP_RULES, type StepRuleName };

export interface TrackDefaults {
  /** Who casts the judge's votes when the method does not force an LLM (OPD needs hints). */
  judgeBackend: JudgeBackendName;
  /** The outcome rule of an env track; personal has no reference outcome. */
  judgeRule: RuleName | null;
  maxTurns: number;
  maxTokens: number;
  temperature: number;
  batchSize: number;
  samplesPerPrompt: number;
  /** Environments per env-pool replica; personal has no env pool. */
  envParallel: number | null;
  evalEverySteps: number;
}

/**
 * Per-track defaults. Limits follow OpenClaw-RL's Track-2 envs (terminal ≤ 10 iterations, GUI ≤
 * 30 steps, SWE step_limit 20, ReTool ≤ 16 turns) and its personal-track script (batch 16, one
 * sample per prompt, 8192 response tokens, temperature 0.6). Pool sizes are scaled down from
 * theirs (16 tasks per worker, 64 VMs, 128 containers, 32 sandboxes) to one pool replica.
 */
export const TRACK_DEFAULTS: Readonly<Record<ManifestTrack, Readonly<TrackDefaults>>> = {
  personal: {
    judgeBackend: 'llm',
    judgeRule: null,
    maxTurns: 64,
    maxTokens: 8192,
    temperature: 0.6,
    batchSize: 16,
    samplesPerPrompt: 1,
    envParallel: null,
    evalEverySteps: 0,
  },
  toolcall: {
    judgeBackend: 'rule',
    judgeRule: 'boxed-answer',
    maxTurns: 16,
    maxTokens: 1024,
    temperature: 1.0,
    batchSize: 32,
    samplesPerPrompt: 4,
    envParallel: 32,
    evalEverySteps: 20,
  },
  terminal: {
    judgeBackend: 'rule',
    judgeRule: 'tests-passed',
    maxTurns: 10,
    maxTokens: 2048,
    temperature: 1.0,
    batchSize: 16,
    samplesPerPrompt: 4,
    envParallel: 16,
    evalEverySteps: 20,
  },
  swe: {
    judgeBackend: 'rule',
    judgeRule: 'env-reward',
    maxTurns: 20,
    maxTokens: 4096,
    temperature: 1.0,
    batchSize: 16,
    samplesPerPrompt: 4,
    envParallel: 16,
    evalEverySteps: 20,
  },
  gui: {
    judgeBackend: 'rule',
    judgeRule: 'env-reward',
    maxTurns: 30,
    maxTokens: 1024,
    temperature: 1.0,
    batchSize: 16,
    samplesPerPrompt: 4,
    envParallel: 8,
    evalEverySteps: 20,
  },
};

export interface MethodDefaults {
  lr: number;
  /** Votes of a model judge (a rule judge always casts 1): OpenClaw-RL's PRM_M. */
  modelJudgeVotes: number;
  /** The judge prompt: PRM verdicts, or OPD verdicts with hindsight hints. */
  judgeMode: 'prm' | 'opd';
  /** Whether the judge must be an LLM (only an LLM writes hints). */
  needsLlmJudge: boolean;
}

/** Per-method defaults: PRM_M is 3 for RL and 1 for OPD/combine; top-K OPD trained at lr 1e-6. */
export const METHOD_DEFAULTS: Readonly<Record<Method, Readonly<MethodDefaults>>> = {
  rl: { lr: 1e-5, modelJudgeVotes: 3, judgeMode: 'prm', needsLlmJudge: false },
  opd: { lr: 1e-6, modelJudgeVotes: 1, judgeMode: 'opd', needsLlmJudge: true },
  combine: { lr: 1e-5, modelJudgeVotes: 1, judgeMode: 'opd', needsLlmJudge: true },
  sft: { lr: 1e-5, modelJudgeVotes: 1, judgeMode: 'prm', needsLlmJudge: false },
};

/**
 * Weight of the per-turn judge score added to an env track's outcome (final = outcome + coef ·
 * mean step score) when a model judge is configured for RL or combine: the judge would
 * otherwise vote for nothing.
 */
export const DEFAULT_STEP_REWARD_COEF = 1.0;

/**
 * The range of a personal turn's reward when the manifest gives none: the built-in judges vote
 * +1, −1 or 0 and a turn's score is their majority, so explicit feedback is held to the same.
 */
export const DEFAULT_REWARD_RANGE: readonly [number, number] = [-1, 1];

/** Staleness when async (OpenClaw-RL runs exactly one rollout ahead) and when not. */
export const DEFAULT_MAX_STALENESS = { async: 1, sync: 0 } as const;

export function defaultJudgeBackend(track: ManifestTrack, method: Method): JudgeBackendName {
  return METHOD_DEFAULTS[method].needsLlmJudge ? 'llm' : TRACK_DEFAULTS[track].judgeBackend;
}

export function defaultJudgeVotes(backend: JudgeBackendName, method: Method): number {
  return backend === 'rule' || backend === 'reaction' ? 1 : METHOD_DEFAULTS[method].modelJudgeVotes;
}

/** Restarts of a job's driver after it was lost (RayJob's backoffLimit; its default is 0). */
export const DEFAULT_MAX_DRIVER_RESTARTS = 2;

export const defaultCheckpointDir = (jobName: string): string => `checkpoints/${jobName}`;

/** "personal 64, toolcall 16, …" for a schema description. */
export function perTrack(key: keyof TrackDefaults): string {
  return MANIFEST_TRACKS.map((t) => `${t} ${TRACK_DEFAULTS[t][key] ?? '—'}`).join(', ');
}

/** "rl 0.00001, opd 0.000001, …" for a schema description. */
export function perMethod(key: keyof MethodDefaults): string {
  return METHODS.map((m) => `${m} ${String(METHOD_DEFAULTS[m][key])}`).join(', ');
}

/** Optimizer steps of a job that does not say (a live personal job trains until stopped). */
export const DEFAULT_TRAIN_STEPS = 200;

/** A live session with no request for this long has ended (OpenClaw never says so itself). */
export const DEFAULT_SESSION_IDLE_MS = 30 * 60_000;
