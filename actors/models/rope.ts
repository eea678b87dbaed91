/**
 * Rotary position embeddings, once for every implementation of the decoder family: the
 * TF.js decoder (trainer) and the ONNX export (rollout engines) take their cos/sin from here,
 * so a checkpoint with `rope_scaling` cannot be rotated one way in training and another in
 * serving.
 *
 * The inverse frequencies are Hugging Face transformers' `modeling_rope_utils.py`
 * (`_compute_{default,linear_scaling,dynamic_ntk,yarn,llama3}_rope_parameters`), with every
 * float32 tensor operation of theirs rounded to float32 here (`Math.fround`), and the cos/sin
 * of their rotary embedding's forward: `cos(fp32(inv_freq · position)) · attention_scaling`.
 *
 * Types that cannot be honoured are refused when the config is read (`resolveRope`), never
 * approximated: `longrope`, `mrope` and any unknown type; `partial_rotary_factor` ≠ 1;
 * and `dynamic` beyond the pretrained context (see `RopeSpec`).
 */
import { ConfigError } from '../../common/errors.js';

export const ROPE_TYPES = ['default', 'linear', 'dynamic', 'yarn', 'llama3'] as const;
export type RopeType = (typeof ROPE_TYPES)[number];

/** HF's yarn defaults (`beta_fast or 32`, `beta_slow or 1`). */
const YARN_BETA_FAST = 32;
const YARN_BETA_SLOW = 1;

export type RopeSpec =
  | { type: 'default'; theta: number }
  /** Positions divided by `factor` (inv_freq / factor). */
  | { type: 'linear'; theta: number; factor: number }
  /**
   * NTK-aware dynamic scaling. HF recomputes the base per forward call from the longest
   * position seen so far *by that module instance* once a sequence passes the pretrained
   * context, and keeps it for later calls: state that depends on request history, which no
   * stateless engine (nor a KV cache filled under an older base) can reproduce. Within
   * `maxPositions` (the pretrained context) HF's dynamic rope equals the default one exactly,
   * so it is served there and positions past it are refused.
   */
  | { type: 'dynamic'; theta: number; factor: number; maxPositions: number }
  | {
      type: 'llama3';
      theta: number;
      factor: number;
      lowFreqFactor: number;
      highFreqFactor: number;
      originalMaxPositions: number;
    }
  | {
      type: 'yarn';
      theta: number;
      factor: number;
      /** The pre-yarn context the correction range is computed from. */
      originalMaxPositions: number;
      betaFast: number;
      betaSlow: number;
      /** cos and sin are multiplied by it (HF's `attention_factor` / mscale). */
      attentionFactor: number;
      /** Floor/ceil the correction range (HF's default true). */
      truncate: boolean;
    };

/** The fields of a config.json that decide RoPE (read raw: this runs inside config validation). */
export interface RopeConfigFields {
  rope_theta?: unknown;
  rope_scaling?: unknown;
  rope_parameters?: unknown;
  partial_rotary_factor?: unknown;
  max_position_embeddings?: unknown;
}

const DEFAULT_THETA = 10000;

function refuse(field: string, message: string): never {
  throw new ConfigError(`${field}: ${message}`, { fields: { field } });
}

function num(obj: Record<string, unknown>, key: string, where: string, required: true): number;
function num(obj: Record<string, unknown>, key: string, where: string, required: false): number | undefined;
function num(
  obj: Record<string, unknown>,
  key: string,
  where: string,
  required: boolean,
): number | undefined {
  const v = obj[key];
  if (v === undefined || v === null) {
    if (required) refuse(`${where}.${key}`, 'is required for this rope type');
    return undefined;
  }
  if (typeof v !== 'number' || !Number.isFinite(v))
    refuse(`${where}.${key}`, `must be a number, got ${JSON.stringify(v)}`);
  return v;
}

function positive(v: number, field: string): number {
  if (!(v > 0)) refuse(field, `must be > 0, got ${v}`);
  return v;
}

/**
 * The RoPE of a config: `rope_scaling` (transformers ≤ 4.x, either `rope_type` or the legacy
 * `type` key) or `rope_parameters` (transformers 5, which also carries `rope_theta`). Throws a
 * ConfigError naming the field for anything this family cannot compute exactly as HF does.
 */
export function resolveRope(c: RopeConfigFields): RopeSpec {
  const maxPositions = typeof c.max_position_embeddings === 'number' ? c.max_position_embeddings : 2048;
  let scaling: Record<string, unknown> | null = null;
  let where = 'rope_scaling';
  let theta = c.rope_theta;
  const isObject = (v: unknown): v is Record<string, unknown> =>
    typeof v === 'object' && v !== null && !Array.isArray(v);
  if (c.rope_scaling !== undefined && c.rope_scaling !== null) {
    if (!isObject(c.rope_scaling)) refuse('rope_scaling', 'must be an object or null');
    scaling = c.rope_scaling;
  }
  if (c.rope_parameters !== undefined && c.rope_parameters !== null) {
    if (!isObject(c.rope_parameters)) refuse('rope_parameters', 'must be an object or null');
    if (scaling !== null) {
      refuse('rope_parameters', 'and rope_scaling are both set; a config must use one of them');
    }
    scaling = c.rope_parameters;
    where = 'rope_parameters';
    if (scaling.rope_theta !== undefined && scaling.rope_theta !== null) {
      if (theta !== undefined && theta !== null && theta !== scaling.rope_theta) {
        refuse('rope_parameters.rope_theta', `(${scaling.rope_theta}) differs from rope_theta (${theta})`);
      }
      theta = scaling.rope_theta;
    }
  }
  if (theta === undefined || theta === null) theta = DEFAULT_THETA;
  if (typeof theta !== 'number' || !(theta > 1)) {
    refuse('rope_theta', `must be a number > 1, got ${JSON.stringify(theta)}`);
  }
  const partialFields: Array<[string, unknown]> = [
    ['partial_rotary_factor', c.partial_rotary_factor],
    [`${where}.partial_rotary_factor`, scaling?.partial_rotary_factor],
  ];
  for (const [field, v] of partialFields) {
    if (v !== undefined && v !== null && v !== 1) {
      refuse(field, `${JSON.stringify(v)} is not supported: this family rotates the whole head (factor 1)`);
    }
  }
  if (scaling === null) return { type: 'default', theta };

  const typeKey = scaling.type;
  const ropeTypeKey = scaling.rope_type;
  if (typeKey !== undefined && ropeTypeKey !== undefined && typeKey !== ropeTypeKey) {
    refuse(
      `${where}.type`,
      `'${String(typeKey)}' and ${where}.rope_type '${String(ropeTypeKey)}' disagree; keep one of them`,
    );
  }
  const type = ropeTypeKey ?? typeKey;
  if (type === undefined || type === null) {
    // transformers 5 writes rope_parameters without a type for the default rope.
    if (where === 'rope_parameters') return { type: 'default', theta };
    refuse(`${where}.rope_type`, 'is missing (nor is there a legacy `type`)');
  }
  if (typeof type !== 'string' || !(ROPE_TYPES as readonly string[]).includes(type)) {
    refuse(
      `${where}.rope_type`,
      `'${String(type)}' is not supported (supported: ${ROPE_TYPES.join(', ')}); ` +
        'computing another rotation would silently change the model',
    );
  }
  switch (type as RopeType) {
    case 'default':
      return { type: 'default', theta };
    case 'linear':
      return {
        type: 'linear',
        theta,
        factor: positive(num(scaling, 'factor', where, true), `${where}.factor`),
      };
    case 'dynamic': {
      const factor = positive(num(scaling, 'factor', where, true), `${where}.factor`);
      const original = num(scaling, 'original_max_position_embeddings', where, false);
      if (original !== undefined && original !== maxPositions) {
        refuse(
          `${where}.original_max_position_embeddings`,
          `(${original}) differs from max_position_embeddings (${maxPositions}): dynamic NTK scaling past the ` +
            'pretrained context depends on the longest sequence an HF module has seen (state across requests) and ' +
            'is not served; set max_position_embeddings to the pretrained context',
        );
      }
      return { type: 'dynamic', theta, factor, maxPositions };
    }
    case 'llama3': {
      const factor = positive(num(scaling, 'factor', where, true), `${where}.factor`);
      const lowFreqFactor = positive(
        num(scaling, 'low_freq_factor', where, true),
        `${where}.low_freq_factor`,
      );
      const highFreqFactor = num(scaling, 'high_freq_factor', where, true);
      if (!(highFreqFactor > lowFreqFactor)) {
        refuse(
          `${where}.high_freq_factor`,
          `(${highFreqFactor}) must be greater than low_freq_factor (${lowFreqFactor})`,
        );
      }
      const originalMaxPositions = positive(
        num(scaling, 'original_max_position_embeddings', where, true),
        `${where}.original_max_position_embeddings`,
      );
      return { type: 'llama3', theta, factor, lowFreqFactor, highFreqFactor, originalMaxPositions };
    }
    case 'yarn': {
      const factor = positive(num(scaling, 'factor', where, true), `${where}.factor`);
      const original = num(scaling, 'original_max_position_embeddings', where, false);
      const explicit = num(scaling, 'attention_factor', where, false);
      const mscale = num(scaling, 'mscale', where, false);
      const mscaleAllDim = num(scaling, 'mscale_all_dim', where, false);
      const truncate = scaling.truncate ?? true;
      if (typeof truncate !== 'boolean')
        refuse(`${where}.truncate`, `must be true or false, got ${JSON.stringify(truncate)}`);
      let attentionFactor: number;
      if (explicit !== undefined) attentionFactor = positive(explicit, `${where}.attention_factor`);
      else if (mscale && mscaleAllDim)
        attentionFactor = yarnMscale(factor, mscale) / yarnMscale(factor, mscaleAllDim);
      else attentionFactor = yarnMscale(factor, 1);
      // HF: `beta_fast or 32`, so a 0 falls back to the default too.
      const betaFast = num(scaling, 'beta_fast', where, false) || YARN_BETA_FAST;
      const betaSlow = num(scaling, 'beta_slow', where, false) || YARN_BETA_SLOW;
      return {
        type: 'yarn',
        theta,
        factor,
        originalMaxPositions: positive(original ?? maxPositions, `${where}.original_max_position_embeddings`),
        betaFast,
        betaSlow,
        attentionFactor,
        truncate,
      };
    }
  }
}

/** HF's `get_mscale`: 0.1 · m · ln(scale) + 1 (1 for scale ≤ 1). */
function yarnMscale(scale: number, m: number): number {
  return scale <= 1 ? 1 : 0.1 * m * Math.log(scale) + 1;
}

/** The frequencies a RoPE rotates with and what cos/sin are scaled by. */
export interface RopeFrequencies {
  /** [headDim / 2] float32, as HF's `inv_freq` buffer. */
  invFreq: Float32Array;
  /** cos and sin are multiplied by this (1 except for yarn). */
  attentionScaling: number;
  /** Positions must be below this (dynamic only: the pretrained context); Infinity otherwise. */
  positionLimit: number;
}

const f32 = Math.fround;

/** HF's default `inv_freq`: 1 / base^(2j / dim), every step in float32. */
function defaultInvFreq(headDim: number, base: number): Float32Array {
  const out = new Float32Array(headDim / 2);
  const b = f32(base);
  for (let j = 0; j < out.length; j++) out[j] = f32(1 / f32(b ** f32((2 * j) / headDim)));
  return out;
}

export function ropeFrequencies(spec: RopeSpec, headDim: number): RopeFrequencies {
  if (!Number.isInteger(headDim) || headDim < 2 || headDim % 2 !== 0) {
    throw new RangeError(`head_dim must be a positive even number for RoPE, got ${headDim}`);
  }
  const half = headDim / 2;
  switch (spec.type) {
    case 'default':
      return { invFreq: defaultInvFreq(headDim, spec.theta), attentionScaling: 1, positionLimit: Infinity };
    case 'linear': {
      const inv = defaultInvFreq(headDim, spec.theta);
      const factor = f32(spec.factor);
      for (let j = 0; j < half; j++) inv[j] = f32(inv[j] / factor);
      return { invFreq: inv, attentionScaling: 1, positionLimit: Infinity };
    }
    case 'dynamic': {
      // HF at seq_len ≤ max_position_embeddings: base · (factor·L/L − (factor − 1))^(d/(d−2)) = base.
      const seqLen = spec.maxPositions;
      const base =
        spec.theta *
        ((spec.factor * seqLen) / spec.maxPositions - (spec.factor - 1)) ** (headDim / (headDim - 2));
      return {
        invFreq: defaultInvFreq(headDim, base),
        attentionScaling: 1,
        positionLimit: spec.maxPositions,
      };
    }
    case 'llama3': {
      const inv = defaultInvFreq(headDim, spec.theta);
      const factor = f32(spec.factor);
      const low = f32(spec.lowFreqFactor);
      const span = f32(spec.highFreqFactor - spec.lowFreqFactor);
      const old = f32(spec.originalMaxPositions);
      const lowFreqWavelen = f32(spec.originalMaxPositions / spec.lowFreqFactor);
      const highFreqWavelen = f32(spec.originalMaxPositions / spec.highFreqFactor);
      const twoPi = f32(2 * Math.PI);
      for (let j = 0; j < half; j++) {
        // torch evaluates `scalar / tensor` as `tensor.reciprocal() * scalar`.
        const wavelen = f32(f32(1 / inv[j]) * twoPi);
        // wavelen > low_freq_wavelen: divide by factor; < high_freq_wavelen: keep.
        const scaled = wavelen > lowFreqWavelen ? f32(inv[j] / factor) : inv[j];
        const medium = !(wavelen < highFreqWavelen) && !(wavelen > lowFreqWavelen);
        if (medium) {
          const smooth = f32(f32(f32(f32(1 / wavelen) * old) - low) / span);
          inv[j] = f32(f32(f32(f32(1 - smooth) * scaled) / factor) + f32(smooth * scaled));
        } else {
          inv[j] = scaled;
        }
      }
      return { invFreq: inv, attentionScaling: 1, positionLimit: Infinity };
    }
    case 'yarn': {
      const dim = headDim;
      const base = spec.theta;
      const factor = f32(spec.factor);
      const correctionDim = (rotations: number) =>
        (dim * Math.log(spec.originalMaxPositions / (rotations * 2 * Math.PI))) / (2 * Math.log(base));
      let low = correctionDim(spec.betaFast);
      let high = correctionDim(spec.betaSlow);
      if (spec.truncate) {
        low = Math.floor(low);
        high = Math.ceil(high);
      }
      low = Math.max(low, 0);
      high = Math.min(high, dim - 1);
      if (low === high) high += 0.001; // HF: prevent a singular ramp
      const span = f32(high - low);
      const lowF = f32(low);
      const inv = new Float32Array(half);
      for (let j = 0; j < half; j++) {
        const posFreq = f32(f32(base) ** f32((2 * j) / dim));
        const extrapolation = f32(1 / posFreq);
        const interpolation = f32(1 / f32(factor * posFreq));
        const ramp = Math.min(1, Math.max(0, f32(f32(j - lowF) / span)));
        const extrapolationFactor = f32(1 - ramp);
        inv[j] = f32(
          f32(interpolation * f32(1 - extrapolationFactor)) + f32(extrapolation * extrapolationFactor),
        );
      }
      return { invFreq: inv, attentionScaling: spec.attentionFactor, positionLimit: Infinity };
    }
  }
}

/**
 * Writes cos/sin of one position at `offset`: `headDim / 2` values, or the full head with the
 * half duplicated (HF's `cat((freqs, freqs))`) when `full`. The angle is rounded to float32
 * first, as HF's float32 matmul does, and the scaling applied in float32 after cos/sin.
 */
export function writeRopeRow(
  f: RopeFrequencies,
  position: number,
  cos: Float32Array,
  sin: Float32Array,
  offset: number,
  full: boolean,
): void {
  if (!(position < f.positionLimit)) {
    throw new RangeError(
      `position ${position} is past the ${f.positionLimit} positions this model's dynamic RoPE is served for ` +
        '(HF rescales past the pretrained context with per-process state; see rope.ts)',
    );
  }
  const half = f.invFreq.length;
  const scale = f32(f.attentionScaling);
  for (let j = 0; j < half; j++) {
    const angle = f32(f.invFreq[j] * position);
    let c = f32(Math.cos(angle));
    let s = f32(Math.sin(angle));
    if (scale !== 1) {
      c = f32(c * scale);
      s = f32(s * scale);
    }
    cos[offset + j] = c;
    sin[offset + j] = s;
    if (full) {
      cos[offset + half + j] = c;
      sin[offset + half + j] = s;
    }
  }
}

/** One line for humans: `llama3 (factor 32, theta 500000)`. */
export function describeRope(spec: RopeSpec): string {
  const { type, theta, ...rest } = spec;
  const extra = Object.entries(rest).map(([k, v]) => `${k} ${typeof v === 'number' ? +v.toPrecision(6) : v}`);
  return `${type} (theta ${theta}${extra.length > 0 ? `, ${extra.join(', ')}` : ''})`;
}
