/**
 * LoRA for Linear weights in PyTorch layout [out, in], as in PEFT: W' = W + (alpha/rank)·B·A
 * with A [rank, in] initialised like PEFT's kaiming_uniform(a=√5) (uniform in ±1/√in, from a
 * seeded PRNG) and B [out, rank] zero, so an untrained adapter changes nothing. Adapter tensors
 * are named like PEFT's: `<module>.lora_A.weight` / `<module>.lora_B.weight`.
 */
import { ConfigError } from '../../common/errors.js';
import { mergeLora } from '../models/lora-merge.js';
import { Prng } from '../models/model-init.js';
import { loraNames } from '../models/tfjs-decoder.js';
import type { WeightMap } from '../models/weight-names.js';

export interface LoraConfig {
  rank: number;
  alpha: number;
  /** Dropout on the adapter's input during training (0 = none). */
  dropout: number;
  /** Module names whose `.weight` gets an adapter, e.g. ['q_proj', 'v_proj']. */
  targetModules: string[];
}

export interface LoraAdapter {
  /** The base weight's name, e.g. `model.layers.0.self_attn.q_proj.weight`. */
  target: string;
  out: number;
  in: number;
  rank: number;
  /** [rank, in], row-major. */
  A: Float32Array;
  /** [out, rank], row-major. */
  B: Float32Array;
}

export function validateLoraConfig(config: LoraConfig): void {
  const { rank, alpha, dropout, targetModules } = config;
  if (!Number.isSafeInteger(rank) || rank < 1) {
    throw new ConfigError(`LoRA rank must be a whole number ≥ 1, got ${String(rank)}`, {
      fields: { option: 'rank' },
    });
  }
  if (!Number.isFinite(alpha) || alpha <= 0) {
    throw new ConfigError(`LoRA alpha must be a finite number > 0, got ${String(alpha)}`, {
      fields: { option: 'alpha' },
    });
  }
  if (!Number.isFinite(dropout) || dropout < 0 || dropout >= 1) {
    throw new ConfigError(`LoRA dropout must be in [0, 1), got ${String(dropout)}`, {
      fields: { option: 'dropout' },
    });
  }
  if (
    !Array.isArray(targetModules) ||
    targetModules.length === 0 ||
    !targetModules.every((m) => typeof m === 'string' && /^[A-Za-z0-9_]+$/.test(m))
  ) {
    throw new ConfigError(
      `LoRA targetModules must be a non-empty list of module names like 'q_proj', got ${JSON.stringify(targetModules)}`,
      { fields: { option: 'targetModules' } },
    );
  }
}

/** alpha / rank: the factor B·A is scaled by. */
export const loraScale = (config: LoraConfig): number => config.alpha / config.rank;

/** The weights (in input order) whose module is one of `targetModules`: names ending `.<module>.weight`. */
export function loraTargets(weightNames: Iterable<string>, config: LoraConfig): string[] {
  validateLoraConfig(config);
  const suffixes = config.targetModules.map((m) => `.${m}.weight`);
  return [...weightNames].filter((n) => suffixes.some((s) => n.endsWith(s)));
}

/** PEFT's names for the adapter of `target`. */
export const loraParamNames = loraNames;

/**
 * Fresh adapters for `targets`, each of shape [out, in] given by `shapes`. A is drawn in order
 * of `targets` from one PRNG seeded with `seed`, so the same call gives the same bits anywhere.
 */
export function initLoraAdapters(
  targets: readonly string[],
  shapes: ReadonlyMap<string, readonly number[]>,
  config: LoraConfig,
  seed: number,
): Map<string, LoraAdapter> {
  validateLoraConfig(config);
  const rng = new Prng(seed);
  const out = new Map<string, LoraAdapter>();
  for (const target of targets) {
    const shape = shapes.get(target);
    if (shape?.length !== 2 || !shape.every((d) => Number.isSafeInteger(d) && d > 0)) {
      throw new ConfigError(
        `LoRA target '${target}' must be a Linear weight [out, in], got shape ${JSON.stringify(shape)}`,
        {
          fields: { param: target },
        },
      );
    }
    const [o, i] = shape;
    const bound = 1 / Math.sqrt(i);
    const A = new Float32Array(config.rank * i);
    for (let k = 0; k < A.length; k++) A[k] = (2 * rng.next() - 1) * bound;
    out.set(target, { target, out: o, in: i, rank: config.rank, A, B: new Float32Array(o * config.rank) });
  }
  return out;
}

/** The adapters' A and B as trainable parameters by PEFT name (the same arrays, not copies). */
export function loraParams(adapters: ReadonlyMap<string, LoraAdapter>): Map<string, Float32Array> {
  const params = new Map<string, Float32Array>();
  for (const a of adapters.values()) {
    const names = loraParamNames(a.target);
    params.set(names.A, a.A);
    params.set(names.B, a.B);
  }
  return params;
}

export { mergeLora };

/** The weights to publish: `weights` with every adapted target merged (new map; others shared). */
export function mergeAllLora(
  weights: WeightMap,
  adapters: ReadonlyMap<string, LoraAdapter>,
  config: LoraConfig,
): WeightMap {
  const scale = loraScale(config);
  const out: WeightMap = new Map(weights);
  for (const a of adapters.values()) {
    const w = weights.get(a.target);
    if (!w) throw new ConfigError(`LoRA adapter targets '${a.target}', which is not among the weights`);
    out.set(a.target, mergeLora(w, a.A, a.B, scale, { out: a.out, in: a.in, rank: a.rank }));
  }
  return out;
}
