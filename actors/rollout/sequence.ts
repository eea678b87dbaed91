/**
 * One request being generated: its sampling state (seeded draws, logit_bias and penalties, the
 * JSON constraint), the tokens and logprobs sampled so far, and when it is done (end of
 * sequence, stop ids and strings, a closed JSON object, max tokens). The engine's loop hands it
 * each step's logits row; the request's public shape (GenerateRequest, GenerateResult) is
 * defined here and re-exported by rollout-engine.ts.
 */
import { ConfigError } from '../../common/errors.js';
import type { Scheduled } from './engine-scheduler.js';
import { JsonConstraint } from './json-constraint.js';
import {
  adjustLogits,
  DEFAULT_SAMPLING,
  hasAdjustments,
  type LogitAdjustments,
  logSoftmax,
  type RowBuffers,
  type Sampled,
  type SamplingParams,
  sample,
  sampleLogprobs,
  seededRandom,
  topOfLogprobs,
  type UsedSampling,
} from './sampler.js';

export interface GenerateRequest {
  promptTokenIds: number[];
  /** Default 256. */
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  /** Makes sampling reproducible. */
  seed?: number;
  /**
   * OpenAI's `logit_bias` as [token id, bias] pairs and presence / frequency penalties. They
   * change what is sampled; the recorded logprob stays the token's under the model's own
   * tempered distribution (what the trainer recomputes), so such samples are off-policy by the
   * adjustment (train.tis corrects for it).
   */
  logitBias?: [number, number][];
  presencePenalty?: number;
  frequencyPenalty?: number;
  /** Generation ends once the decoded text contains one of these (it is cut off). */
  stop?: string[];
  /** Token ids that end generation besides the model's end-of-sequence ids. */
  stopTokenIds?: number[];
  /** Also return the k most likely tokens at each step (OpenAI `top_logprobs`). */
  topLogprobs?: number;
  /** Called for every generated token as it is sampled (streaming). */
  onToken?: (token: Sampled) => void;
  /** Stops the generation (its slot goes to the next request) and rejects with GenerationAbortedError. */
  signal?: AbortSignal;
  /**
   * OpenAI's `response_format: {"type": "json_object"}`: only tokens that keep the output a
   * prefix of one JSON object are sampled, and generation stops when it is closed (see
   * json-constraint.ts). Like logit_bias, the recorded logprob stays the model's own.
   */
  json?: boolean;
}

export type FinishReason = 'stop' | 'length';

export interface GenerateResult {
  promptTokenIds: number[];
  /** Exactly the sampled ids (no re-tokenization anywhere downstream). */
  tokenIds: number[];
  /** Logprob of each sampled token (see sampler.ts for the distribution). */
  logprobs: number[];
  topLogprobs?: Sampled[][];
  finishReason: FinishReason;
  /** The weight version every token of this output was sampled with. */
  weightVersion: number;
  /**
   * What this output was drawn with, the request's omissions resolved to the engine's defaults:
   * `logprobs` are under softmax(logits / temperature), and `seed` (the request's, else the one
   * the engine drew) repeats the draw. A consumer (a trajectory record, the trainer) reads the
   * temperature here rather than assuming the one it asked for.
   */
  sampling: UsedSampling;
  /** Decoded text when the engine has a detokenizer (stop strings cut). */
  text?: string;
}

/** What a sequence needs of its engine. */
export interface SequenceContext {
  eosTokenIds: number[];
  /** Needed for stop strings and `text`. */
  detokenize?: (ids: number[]) => string;
  /** Needed for `json` requests. */
  tokenBytes?: (tokenId: number) => ArrayLike<number>;
}

export class Sequence implements Scheduled {
  readonly request: Required<Pick<GenerateRequest, 'maxTokens'>> & GenerateRequest;
  readonly promptTokens: number;
  /** Prompt + maxTokens: the cache this sequence may reach. */
  readonly finalLength: number;
  private readonly params: SamplingParams;
  /** The seed of `random`, so that a restarted sequence draws as it first did. */
  private readonly seed: number;
  private random: () => number;
  /** logit_bias and penalties, when the request has any. */
  private readonly adjust?: LogitAdjustments;
  private json?: JsonConstraint;
  tokens: number[] = [];
  logprobs: number[] = [];
  top: Sampled[][] = [];
  /** The weight version its tokens are sampled with. */
  version: number;
  readonly startedAt = performance.now();

  constructor(
    request: GenerateRequest & { maxTokens: number },
    private readonly context: SequenceContext,
    version: number,
    readonly resolve: (result: GenerateResult) => void,
    readonly reject: (err: Error) => void,
  ) {
    this.request = request;
    this.promptTokens = request.promptTokenIds.length;
    this.finalLength = this.promptTokens + request.maxTokens;
    this.params = {
      temperature: request.temperature ?? DEFAULT_SAMPLING.temperature,
      topP: request.topP ?? DEFAULT_SAMPLING.topP,
      // -1 (vLLM's "off") and 0 both turn top-k off; the result reports it as 0, as records keep it.
      topK: Math.max(0, request.topK ?? DEFAULT_SAMPLING.topK),
    };
    this.seed = request.seed ?? Math.floor(Math.random() * 2 ** 32);
    this.random = seededRandom(this.seed);
    const adjust: LogitAdjustments = {
      ...(request.logitBias?.length ? { logitBias: new Map(request.logitBias) } : {}),
      ...(request.presencePenalty ? { presencePenalty: request.presencePenalty } : {}),
      ...(request.frequencyPenalty ? { frequencyPenalty: request.frequencyPenalty } : {}),
    };
    if (hasAdjustments(adjust)) this.adjust = adjust;
    this.json = this.jsonConstraint();
    this.version = version;
  }

  /** Back to no tokens, drawing as it first did (a requeueing swap restarts it). */
  restart(): void {
    this.tokens = [];
    this.logprobs = [];
    this.top = [];
    this.random = seededRandom(this.seed);
    this.json = this.jsonConstraint();
  }

  /**
   * Samples the next token from its logits row and records it (`row`: the engine's buffers for
   * the row's logprobs and weights). A refusal when a JSON request has no token left to continue.
   */
  draw(logits: Float32Array, row: RowBuffers): Sampled | ConfigError {
    // The model's own tempered distribution, computed once: the recorded logprob, the draw
    // (unless adjusted) and top_logprobs all read it.
    const logp = logSoftmax(logits, this.params.temperature, row);
    let picked: Sampled;
    if (this.json) {
      const chosen = this.constrainedDraw(this.json, logits);
      if (chosen === undefined) {
        return new ConfigError(
          `response_format json_object: no token of the vocabulary continues the JSON after ${this.tokens.length} tokens`,
          { fields: { param: 'response_format' } },
        );
      }
      picked = { tokenId: chosen, logprob: logp[chosen] };
      this.json.advance(chosen);
    } else if (this.adjust) {
      const chosen = sample(adjustLogits(logits, this.adjust, this.tokens), this.params, this.random);
      // Recorded under the model's own distribution: the trainer cannot recompute the adjustment.
      picked = { tokenId: chosen.tokenId, logprob: logp[chosen.tokenId] };
    } else {
      picked = sampleLogprobs(logp, this.params, this.random, row);
    }
    this.tokens.push(picked.tokenId);
    this.logprobs.push(picked.logprob);
    if (this.request.topLogprobs) this.top.push(topOfLogprobs(logp, this.request.topLogprobs));
    return picked;
  }

  /** The result once the last token drawn ended the generation, else undefined. */
  result(): GenerateResult | undefined {
    const request = this.request;
    const last = this.tokens[this.tokens.length - 1];
    let finish: FinishReason | undefined;
    let text: string | undefined;
    if (this.context.eosTokenIds.includes(last) || request.stopTokenIds?.includes(last)) finish = 'stop';
    // Decoding the text so far costs a pass over the whole output: only for stop strings.
    if (request.stop?.length && this.context.detokenize) {
      text = this.context.detokenize(this.tokens);
      const hit = request.stop.map((s) => text!.indexOf(s)).filter((i) => i >= 0);
      if (hit.length > 0) {
        text = text.slice(0, Math.min(...hit));
        finish = 'stop';
      }
    }
    if (!finish && this.json?.done) finish = 'stop';
    if (!finish && this.tokens.length >= request.maxTokens) finish = 'length';
    if (!finish) return undefined;
    text ??= this.context.detokenize?.(this.tokens);
    return {
      promptTokenIds: request.promptTokenIds,
      tokenIds: this.tokens,
      logprobs: this.logprobs,
      finishReason: finish,
      weightVersion: this.version,
      sampling: { ...this.params, seed: this.seed },
      ...(request.topLogprobs ? { topLogprobs: this.top } : {}),
      ...(text !== undefined ? { text } : {}),
    };
  }

  private jsonConstraint(): JsonConstraint | undefined {
    if (!this.request.json) return undefined;
    return new JsonConstraint(this.context.tokenBytes!, [
      ...this.context.eosTokenIds,
      ...(this.request.stopTokenIds ?? []),
    ]);
  }

  /**
   * A draw from the (adjusted) distribution restricted to the tokens `json` allows: the
   * unrestricted draw when it is allowed (the usual case, and one vocabulary pass cheaper), else
   * a draw from the masked row, which together give exactly the renormalised restriction.
   * Undefined when no token is allowed.
   */
  private constrainedDraw(json: JsonConstraint, logits: Float32Array): number | undefined {
    const row = this.adjust ? adjustLogits(logits, this.adjust, this.tokens) : logits;
    const first = sample(row, this.params, this.random).tokenId;
    if (json.allows(first)) return first;
    const masked = json.mask(row);
    if (!masked.some((x) => x > Number.NEGATIVE_INFINITY)) return undefined;
    return sample(masked, this.params, this.random).tokenId;
  }
}
