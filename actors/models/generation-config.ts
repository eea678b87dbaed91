/**
 * A checkpoint's `generation_config.json` as sampling defaults: what a request that omits
 * temperature, top_p, top_k or max_tokens falls back to (vLLM's `--generation-config auto`),
 * so Qwen3 served by clawray samples at its published temperature 0.6 / top_p 0.95 / top_k 20
 * rather than at OpenAI's 1.0. Only values written in the file count (HF's class defaults,
 * such as top_k 50, do not), and a field the engine cannot apply is reported in `ignored`
 * with the reason, never half-applied.
 */
import { ConfigError } from '../../common/errors.js';

export interface SamplingDefaults {
  temperature?: number;
  topP?: number;
  topK?: number;
  /** `max_new_tokens`. */
  maxTokens?: number;
  /** Fields of the file that change generation and are not applied, each with why. */
  ignored: { field: string; reason: string }[];
}

/**
 * Fields that change what HF's `generate` does, the value that leaves it unchanged, and why
 * the engine does not apply them. Token-id and bookkeeping fields (bos/pad/eos ids,
 * transformers_version, `_from_model_config`) are not listed: eos ids are read by model-dir.ts.
 */
const UNAPPLIED: Readonly<Record<string, { neutral: unknown; reason: string }>> = {
  repetition_penalty: {
    neutral: 1,
    reason:
      "the sampler has no multiplicative repetition penalty; a request may set presence_penalty / frequency_penalty (OpenAI's additive penalties) instead",
  },
  min_p: { neutral: 0, reason: 'the sampler has no min_p filter' },
  typical_p: { neutral: 1, reason: 'the sampler has no typical sampling' },
  epsilon_cutoff: { neutral: 0, reason: 'the sampler has no epsilon sampling' },
  eta_cutoff: { neutral: 0, reason: 'the sampler has no eta sampling' },
  num_beams: { neutral: 1, reason: 'the engine samples; it has no beam search' },
  num_beam_groups: { neutral: 1, reason: 'the engine has no beam search' },
  num_return_sequences: { neutral: 1, reason: 'a request asks for several choices with `n`' },
  no_repeat_ngram_size: { neutral: 0, reason: 'the sampler does not block repeated n-grams' },
  encoder_repetition_penalty: { neutral: 1, reason: 'a decoder-only model has no encoder' },
  min_new_tokens: { neutral: 0, reason: 'the engine does not suppress end-of-sequence early' },
  min_length: { neutral: 0, reason: 'the engine does not suppress end-of-sequence early' },
  max_length: {
    neutral: 20,
    reason: "prompt + generation is bounded by the model's context and a request's max_tokens",
  },
  bad_words_ids: { neutral: null, reason: 'a request may push tokens down with logit_bias' },
  suppress_tokens: { neutral: null, reason: 'a request may push tokens down with logit_bias' },
  begin_suppress_tokens: { neutral: null, reason: 'a request may push tokens down with logit_bias' },
  forced_bos_token_id: { neutral: null, reason: 'the engine does not force tokens' },
  forced_eos_token_id: { neutral: null, reason: 'the engine does not force tokens' },
  sequence_bias: { neutral: null, reason: 'a request may bias single tokens with logit_bias' },
  guidance_scale: { neutral: null, reason: 'the engine has no classifier-free guidance' },
  exponential_decay_length_penalty: { neutral: null, reason: 'the engine has no length penalty' },
};

function bad(file: string, field: string, expected: string, got: unknown): never {
  throw new ConfigError(`${file}: ${field} must be ${expected}, got ${JSON.stringify(got)}`, {
    fields: { file, field },
  });
}

const present = (v: unknown): boolean => v !== undefined && v !== null;

/** The defaults of a parsed `generation_config.json` ({} when the file is absent). */
export function samplingDefaults(gen: Record<string, unknown>, file: string): SamplingDefaults {
  const out: SamplingDefaults = { ignored: [] };
  const { temperature, top_p: topP, top_k: topK, max_new_tokens: maxNew, do_sample: doSample } = gen;
  if (present(doSample) && typeof doSample !== 'boolean') bad(file, 'do_sample', 'true or false', doSample);
  if (present(temperature)) {
    if (typeof temperature !== 'number' || !(temperature >= 0))
      bad(file, 'temperature', 'a number ≥ 0', temperature);
    out.temperature = temperature;
  }
  if (doSample === false) {
    // HF generates greedily when do_sample is false, whatever the temperature says.
    out.temperature = 0;
  }
  if (present(topP)) {
    if (typeof topP !== 'number' || !(topP > 0 && topP <= 1)) bad(file, 'top_p', 'a number in (0, 1]', topP);
    out.topP = topP;
  }
  if (present(topK)) {
    if (typeof topK !== 'number' || !Number.isInteger(topK) || topK < 0) {
      bad(file, 'top_k', 'a whole number ≥ 0 (0 = off)', topK);
    }
    out.topK = topK;
  }
  if (present(maxNew)) {
    if (typeof maxNew !== 'number' || !Number.isInteger(maxNew) || maxNew < 1) {
      bad(file, 'max_new_tokens', 'a whole number ≥ 1', maxNew);
    }
    out.maxTokens = maxNew;
  }
  for (const [field, { neutral, reason }] of Object.entries(UNAPPLIED)) {
    const v = gen[field];
    if (!present(v) || v === neutral || (Array.isArray(v) && v.length === 0)) continue;
    out.ignored.push({ field, reason: `${JSON.stringify(v)} not applied: ${reason}` });
  }
  return out;
}
