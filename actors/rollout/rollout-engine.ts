/**
 * The generation core of a rollout engine: decoding with a KV cache on an ONNX decoder, with
 * dynamic batching (requests join and leave between decode steps, per-sequence caches
 * repacked only when the batch changes), a bounded queue, exact token ids and logprobs on
 * every output, teacher scoring (`computeLogprobs`; `computeTopLogprobs` adds the top-K at
 * every position) and weight swaps that never fail a request.
 *
 * Prompts and scored sequences go through the decoder in chunks of `prefillChunkTokens`, the
 * cache growing chunk by chunk: attention per step is chunk × (past + chunk), so a long
 * prompt's memory grows linearly with its length instead of with its square (a 25k-token
 * prompt needed > 20 GB in one piece). A request whose estimated memory (memory-budget.ts)
 * exceeds `memoryBudgetBytes` is refused up front with a ContextLengthError (400) naming the
 * counts; one that fits alone but not beside the running batch waits for it to shrink.
 *
 * On an in-place decoder (`decoder.inPlace`: the slots graph, onnx-export-slots.ts, or the GQA
 * graph, onnx-export-gqa.ts) the batch's cache is one right-padded buffer per tensor
 * (KvSlots): a sequence's prefill writes its row directly, a decode step appends one slot per
 * row (nothing concatenated, no repacking when members join or leave: a leaving row is replaced
 * by the last one), and a generating prefill computes the logits of its last position only.
 * Scoring still visits every position. The buffer's memory stays when the batch empties (the
 * next batch reuses it instead of faulting fresh pages) until the budget wants it back.
 */
import { totalmem } from 'node:os';
import { ClawrayError, ConfigError, registerErrorClass } from '../../common/errors.js';
import { JsonConstraint } from './json-constraint.js';
import { KvBatch, KvSlots, type SequenceKv } from './kv-batch.js';
import { batchBytes, formatBytes, kvBytesPerToken, type MemoryShape, prefillBytes } from './memory-budget.js';
import type { ExecutionProvider, OnnxDecoder, StepOutput } from './onnx-decoder.js';
import {
  adjustLogits,
  DEFAULT_SAMPLING,
  hasAdjustments,
  type LogitAdjustments,
  logSoftmax,
  RowBuffers,
  type Sampled,
  type SamplingParams,
  sample,
  sampleLogprobs,
  seededRandom,
  topOfLogprobs,
} from './sampler.js';
import { appendTopK, type ScoredTokens } from './top-k.js';

/** Tokens a request generates at most when it does not say. */
export const DEFAULT_MAX_TOKENS = 256;

/** Tokens per prefill (and scoring) step when the options do not say. */
export const DEFAULT_PREFILL_CHUNK_TOKENS = 512;

/** The share of the machine's memory the engine's estimates may reach when the options do not say. */
export const DEFAULT_MEMORY_BUDGET_SHARE = 0.5;

/** The queue is full: the caller should back off and retry (HTTP 429 at the OpenAI edge). */
export class EngineBusyError extends ClawrayError {
  override readonly retryable = true;
}
registerErrorClass(EngineBusyError);

/** The request's AbortSignal fired (the client went away); its generation stopped. */
export class GenerationAbortedError extends ClawrayError {}
registerErrorClass(GenerationAbortedError);

/**
 * A conversation outgrew the model's context: its prompt leaves no room for one more token.
 * An RL episode ends there (truncated), as slime ends samples that reach the length limit.
 * Defined here, beside the engine's other errors, so that a process can recognise it without
 * loading the ONNX runtime the actor module brings (the actor module re-exports it).
 */
export class ContextLengthError extends ConfigError {}
registerErrorClass(ContextLengthError);

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
  /** Decoded text when the engine has a detokenizer (stop strings cut). */
  text?: string;
}

export interface GenerationEngineOptions {
  /** Sequences decoding together. Default 16. */
  maxBatchSize?: number;
  /** Requests waiting for a batch slot before `generate` rejects with EngineBusyError. Default 1024. */
  maxQueue?: number;
  eosTokenIds: number[];
  /** Longest sequence (prompt + output). */
  maxContext: number;
  /** Needed for stop strings and `text`. */
  detokenize?: (ids: number[]) => string;
  /** A token's raw bytes; needed for `json` requests. */
  tokenBytes?: (tokenId: number) => ArrayLike<number>;
  /** On a weight swap: let in-flight sequences finish on the old weights, or restart them on the new ones. Default 'finish'. */
  swapMode?: 'finish' | 'requeue';
  weightVersion?: number;
  /** Loads a decoder for new weights (the engine stays on the old one until it is ready). */
  reload?: (tensors: Map<string, Float32Array>) => Promise<OnnxDecoder>;
  observer?: EngineObserver;
  /**
   * Tokens per prefill step: a longer prompt goes through the decoder in pieces of this many,
   * its cache growing between them (memory linear in the prompt; see the header). Default 512.
   */
  prefillChunkTokens?: number;
  /**
   * Bytes the engine's estimate of a request (its cache, prefill activations, its share of the
   * batch: memory-budget.ts) may reach. A request over it alone is refused (ContextLengthError,
   * HTTP 400); one over it beside the running batch waits. Default half the machine's memory.
   */
  memoryBudgetBytes?: number;
  /** Query heads of the model, for the attention-score estimate. Default 4 × the KV heads. */
  attentionHeads?: number;
}

/** Hooks for metrics. */
export interface EngineObserver {
  onStep?(batchSize: number, seconds: number): void;
  onFirstToken?(seconds: number): void;
  onFinished?(result: GenerateResult): void;
  onSwap?(version: number, seconds: number): void;
}

interface Sequence {
  request: Required<Pick<GenerateRequest, 'maxTokens'>> & GenerateRequest;
  /** Prompt + maxTokens: the cache this sequence may reach. */
  finalLength: number;
  params: SamplingParams;
  random: () => number;
  /** logit_bias and penalties, when the request has any. */
  adjust?: LogitAdjustments;
  json?: JsonConstraint;
  tokens: number[];
  logprobs: number[];
  top: Sampled[][];
  /** The cache when the sequence is not inside the batch. */
  own?: SequenceKv;
  version: number;
  startedAt: number;
  resolve(result: GenerateResult): void;
  reject(err: Error): void;
}

export class GenerationEngine {
  private decoder: OnnxDecoder;
  private readonly queue: Sequence[] = [];
  private members: Sequence[] = [];
  private readonly batch: KvBatch;
  /** The batch's cache when the decoder is an in-place graph (rows = members). */
  private readonly slots: KvSlots;
  private running = false;
  private version: number;
  private swap?: {
    version: number;
    decoder: Promise<OnnxDecoder>;
    done: () => void;
    failed: (e: Error) => void;
    started: number;
  };
  private readonly maxBatch: number;
  private readonly maxQueue: number;
  private readonly prefillChunk: number;
  private readonly memoryBudget: number;
  private readonly attentionHeads: number | undefined;
  private tokens = 0;
  private aborted = 0;

  constructor(
    decoder: OnnxDecoder,
    private readonly options: GenerationEngineOptions,
  ) {
    this.decoder = decoder;
    this.batch = new KvBatch(decoder.layout);
    this.maxBatch = options.maxBatchSize ?? 16;
    this.slots = new KvSlots(decoder.layout, this.maxBatch);
    this.maxQueue = options.maxQueue ?? 1024;
    this.version = options.weightVersion ?? 0;
    this.prefillChunk = options.prefillChunkTokens ?? DEFAULT_PREFILL_CHUNK_TOKENS;
    if (!Number.isInteger(this.prefillChunk) || this.prefillChunk < 1) {
      throw new ConfigError(`prefillChunkTokens must be a whole number ≥ 1, got ${this.prefillChunk}`, {
        fields: { prefillChunkTokens: this.prefillChunk },
      });
    }
    this.memoryBudget = options.memoryBudgetBytes ?? Math.floor(totalmem() * DEFAULT_MEMORY_BUDGET_SHARE);
    if (!(this.memoryBudget > 0)) {
      throw new ConfigError(`memoryBudgetBytes must be > 0, got ${this.memoryBudget}`, {
        fields: { memoryBudgetBytes: this.memoryBudget },
      });
    }
    this.attentionHeads = options.attentionHeads;
  }

  /** The model's shape as the memory estimates need it (the decoder changes on a swap). */
  private get shape(): MemoryShape {
    const layout = this.decoder.layout;
    return { ...layout, heads: this.attentionHeads ?? 4 * layout.kvHeads };
  }

  /** The estimated bytes of one sequence alone: its prefill, then its decoding. */
  private aloneBytes(promptTokens: number, maxTokens: number): number {
    const shape = this.shape;
    return Math.max(
      prefillBytes(shape, promptTokens, this.prefillChunk),
      batchBytes(shape, [promptTokens + maxTokens]),
    );
  }

  /** A refusal naming the counts, or undefined when the request fits the memory budget alone. */
  private overBudget(promptTokens: number, maxTokens: number, param: string): ContextLengthError | undefined {
    const needed = this.aloneBytes(promptTokens, maxTokens);
    if (needed <= this.memoryBudget) return undefined;
    // The longest prompt that would fit with this maxTokens (the estimate grows with the prompt).
    let lo = 0;
    let hi = promptTokens;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (this.aloneBytes(mid, maxTokens) <= this.memoryBudget) lo = mid;
      else hi = mid - 1;
    }
    const perToken = kvBytesPerToken(this.shape);
    return new ContextLengthError(
      `this request (${promptTokens} prompt tokens + ${maxTokens} to generate) needs about ${formatBytes(needed)} of memory (${formatBytes(perToken)} of KV cache per token, prefill in chunks of ${this.prefillChunk}); the rollout engine's memory budget is ${formatBytes(this.memoryBudget)}, in which at most about ${lo} prompt tokens fit: shorten the prompt or lower max_tokens`,
      {
        fields: {
          param,
          promptTokens,
          maxTokens,
          estimatedBytes: needed,
          memoryBudgetBytes: this.memoryBudget,
          maxPromptTokens: lo,
        },
      },
    );
  }

  /** Whether `seq` may join `members` now without the estimate passing the budget. */
  private fitsBeside(seq: Sequence, members: readonly Sequence[]): boolean {
    if (members.length === 0) return true;
    const shape = this.shape;
    const lengths = [...members.map((m) => m.finalLength), seq.finalLength];
    const prompt = seq.request.promptTokenIds.length;
    return batchBytes(shape, lengths) + prefillBytes(shape, prompt, this.prefillChunk) <= this.memoryBudget;
  }

  /**
   * The cache buffer an earlier, bigger batch left behind counts against the budget too: when
   * it and the prefill of `taken` would pass it, the part the rows do not need is let go first.
   */
  private makeRoomFor(taken: readonly Sequence[]): void {
    const held = this.slots.heldBytes;
    if (held === 0) return;
    const shape = this.shape;
    const batch = batchBytes(
      shape,
      [...this.members, ...taken].map((m) => m.finalLength),
    );
    const prefill = Math.max(
      ...taken.map((m) => prefillBytes(shape, m.request.promptTokenIds.length, this.prefillChunk)),
    );
    if (held > batch && held + prefill > this.memoryBudget) this.slots.fit();
  }

  get weightVersion(): number {
    return this.version;
  }

  get provider(): ExecutionProvider {
    return this.decoder.provider;
  }

  /** The decoder graph's kind: 'slots' or 'gqa' (cache kept in place) or 'standard'. */
  get decoderKind(): string {
    return this.decoder.kind;
  }

  get queueDepth(): number {
    return this.queue.length;
  }

  /** Bytes of memory the batch's KV cache buffer holds (in use or kept for the next batch). */
  get kvCacheBytes(): number {
    return this.slots.heldBytes;
  }

  get batchSize(): number {
    return this.members.length;
  }

  /** Tokens sampled since the engine started, over all requests (aborted ones included). */
  get tokensGenerated(): number {
    return this.tokens;
  }

  /** Requests stopped by their AbortSignal (queued or mid-generation). */
  get abortedRequests(): number {
    return this.aborted;
  }

  generate(request: GenerateRequest): Promise<GenerateResult> {
    const maxTokens = request.maxTokens ?? DEFAULT_MAX_TOKENS;
    const vocab = this.decoder.layout.vocab;
    if (request.promptTokenIds.length === 0)
      return Promise.reject(new ConfigError('promptTokenIds is empty'));
    const bad = request.promptTokenIds.find((t) => !Number.isInteger(t) || t < 0 || t >= vocab);
    if (bad !== undefined)
      return Promise.reject(
        new ConfigError(`prompt token id ${bad} is outside the vocabulary (0..${vocab - 1})`),
      );
    if (!Number.isInteger(maxTokens) || maxTokens < 1)
      return Promise.reject(new ConfigError('maxTokens must be a whole number ≥ 1'));
    if (request.promptTokenIds.length + maxTokens > this.options.maxContext) {
      return Promise.reject(
        new ConfigError(
          `prompt (${request.promptTokenIds.length} tokens) + maxTokens (${maxTokens}) exceeds the model's context of ${this.options.maxContext}`,
        ),
      );
    }
    const tooBig = this.overBudget(request.promptTokenIds.length, maxTokens, 'messages');
    if (tooBig) return Promise.reject(tooBig);
    if (request.stop?.length && !this.options.detokenize) {
      return Promise.reject(new ConfigError('stop strings need an engine with a tokenizer'));
    }
    const tokenBytes = this.options.tokenBytes;
    if (request.json && !tokenBytes) {
      return Promise.reject(
        new ConfigError('response_format json_object needs an engine with a tokenizer', {
          fields: { param: 'response_format' },
        }),
      );
    }
    if (this.queue.length >= this.maxQueue) {
      return Promise.reject(
        new EngineBusyError(`the rollout engine queue is full (${this.maxQueue} waiting); retry later`),
      );
    }
    const adjust: LogitAdjustments = {
      ...(request.logitBias?.length ? { logitBias: new Map(request.logitBias) } : {}),
      ...(request.presencePenalty ? { presencePenalty: request.presencePenalty } : {}),
      ...(request.frequencyPenalty ? { frequencyPenalty: request.frequencyPenalty } : {}),
    };
    const badBias = request.logitBias?.find(
      ([id, b]) => !(Number.isInteger(id) && id >= 0 && id < vocab) || !(b >= -100 && b <= 100),
    );
    if (badBias) {
      return Promise.reject(
        new ConfigError(
          `logit_bias: token ${badBias[0]} → ${badBias[1]}: ids are 0..${vocab - 1}, biases −100…100`,
          {
            fields: { param: 'logit_bias' },
          },
        ),
      );
    }
    const signal = request.signal;
    if (signal?.aborted) {
      this.aborted++;
      return Promise.reject(new GenerationAbortedError('the request was aborted'));
    }
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        // Still queued: leave now. Decoding: the next step drops it (see accept).
        const i = this.queue.indexOf(seq);
        if (i >= 0) {
          this.queue.splice(i, 1);
          this.aborted++;
          seq.reject(new GenerationAbortedError('the request was aborted'));
        }
      };
      // A signal may outlive the request (one per client, many requests): let go of it.
      const settled = () => signal?.removeEventListener('abort', onAbort);
      const seq: Sequence = {
        request: { ...request, maxTokens },
        finalLength: request.promptTokenIds.length + maxTokens,
        params: {
          temperature: request.temperature ?? DEFAULT_SAMPLING.temperature,
          topP: request.topP ?? DEFAULT_SAMPLING.topP,
          topK: request.topK ?? DEFAULT_SAMPLING.topK,
        },
        random: seededRandom(request.seed ?? Math.floor(Math.random() * 2 ** 32)),
        ...(hasAdjustments(adjust) ? { adjust } : {}),
        ...(request.json
          ? {
              json: new JsonConstraint(tokenBytes!, [
                ...this.options.eosTokenIds,
                ...(request.stopTokenIds ?? []),
              ]),
            }
          : {}),
        tokens: [],
        logprobs: [],
        top: [],
        version: this.version,
        startedAt: performance.now(),
        resolve: (result) => {
          settled();
          resolve(result);
        },
        reject: (err) => {
          settled();
          reject(err);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(seq);
      this.kick();
    });
  }

  /**
   * Logprob of each given token after the ones before it (teacher scoring for on-policy
   * distillation), for positions `fromIndex` (≥ 1) to the end, under softmax(logits /
   * temperature): pass the temperature the tokens were sampled with, so that the numbers
   * compare with the sampled logprobs (0, greedy, scores at 1 as the sampler records it).
   */
  async computeLogprobs(tokenIds: number[], fromIndex = 1, temperature = 1): Promise<number[]> {
    return (await this.score(tokenIds, fromIndex, temperature, 0)).logprobs;
  }

  /**
   * `computeLogprobs` plus the `topK` most likely tokens at every one of those positions, under
   * the same softmax(logits / temperature) (top-K distillation: the teacher's distribution at
   * the temperature the student sampled with). A separate method rather than an option of
   * `computeLogprobs`, so that every typed caller of that one keeps its plain `number[]`.
   */
  async computeTopLogprobs(
    tokenIds: number[],
    fromIndex: number,
    temperature: number,
    topK: number,
  ): Promise<ScoredTokens> {
    if (!Number.isInteger(topK) || topK < 1) {
      throw new ConfigError(`topK must be a whole number ≥ 1, got ${topK}`, { fields: { topK } });
    }
    return this.score(tokenIds, fromIndex, temperature, topK);
  }

  private async score(
    tokenIds: number[],
    fromIndex: number,
    temperature: number,
    topK: number,
  ): Promise<ScoredTokens> {
    if (fromIndex < 1 || fromIndex > tokenIds.length) {
      throw new ConfigError(
        `fromIndex must be between 1 and ${tokenIds.length} (the first token has no logprob)`,
      );
    }
    if (!Number.isFinite(temperature) || temperature < 0) {
      throw new ConfigError(`temperature must be a number ≥ 0, got ${temperature}`, {
        fields: { temperature },
      });
    }
    const tooBig = this.overBudget(tokenIds.length, 0, 'tokenIds');
    if (tooBig) throw tooBig;
    const { vocab } = this.decoder.layout;
    const k = Math.min(topK, vocab);
    const result: ScoredTokens = { logprobs: [], top: { k, ids: [], logprobs: [] } };
    // Row p of the logits predicts token p + 1: positions fromIndex − 1 … n − 2.
    await this.forward(tokenIds, fromIndex - 1, (p, logits) => {
      if (p + 1 >= tokenIds.length) return;
      const row = logSoftmax(logits, temperature);
      result.logprobs.push(row[tokenIds[p + 1]]);
      if (k > 0) appendTopK(row, k, result.top.ids, result.top.logprobs);
    });
    return result;
  }

  /**
   * Swaps to new weights. Admission pauses; in-flight sequences finish on the old weights
   * (`swapMode` 'finish') or go back to the queue to restart on the new ones ('requeue');
   * requests arriving meanwhile wait. Resolves once the new version serves.
   */
  updateWeights(version: number, tensors: Map<string, Float32Array>): Promise<void> {
    if (!this.options.reload)
      return Promise.reject(new ConfigError('this engine was built without a way to load new weights'));
    if (this.swap)
      return Promise.reject(new ConfigError(`a swap to version ${this.swap.version} is already in progress`));
    return new Promise((resolve, reject) => {
      this.swap = {
        version,
        decoder: this.options.reload!(tensors),
        done: resolve,
        failed: reject,
        started: performance.now(),
      };
      // Keep a rejected load from being reported as unhandled before the loop awaits it.
      this.swap.decoder.catch(() => {});
      this.kick();
    });
  }

  private kick(): void {
    if (this.running) return;
    this.running = true;
    void this.loop()
      .catch((err: Error) => this.failAll(err))
      .finally(() => {
        this.running = false;
        if (this.queue.length > 0 || this.swap) this.kick();
      });
  }

  private async loop(): Promise<void> {
    for (;;) {
      if (this.swap) {
        if (this.options.swapMode === 'requeue' && this.members.length > 0) this.requeueMembers();
        if (this.members.length === 0) await this.applySwap();
      }
      if (this.decoder.inPlace) {
        await this.admitInPlace();
        if (this.members.length === 0) {
          if (this.swap || this.queue.length > 0) continue;
          return;
        }
        await this.decodeStepInPlace();
        continue;
      }
      const admitted: Sequence[] = [];
      while (!this.swap && this.members.length + admitted.length < this.maxBatch && this.queue.length > 0) {
        // First come, first served: a sequence too big to join now holds the ones behind it.
        if (!this.fitsBeside(this.queue[0], [...this.members, ...admitted])) break;
        const group = this.shortPromptGroup(this.members.length + admitted.length);
        if (group.length > 1) {
          admitted.push(...(await this.prefillTogether(group)));
          continue;
        }
        const seq = this.queue.shift()!;
        if (await this.prefill(seq)) admitted.push(seq);
      }
      if (admitted.length > 0) this.repack([...this.members, ...admitted]);
      if (this.members.length === 0) {
        if (this.swap || this.queue.length > 0) continue;
        return;
      }
      await this.decodeStep();
    }
  }

  private async applySwap(): Promise<void> {
    const swap = this.swap!;
    try {
      const next = await swap.decoder;
      const old = this.decoder;
      this.decoder = next;
      this.version = swap.version;
      for (const seq of this.queue) seq.version = swap.version;
      await old.release();
      this.options.observer?.onSwap?.(swap.version, (performance.now() - swap.started) / 1000);
      this.swap = undefined;
      swap.done();
    } catch (err) {
      this.swap = undefined;
      swap.failed(err as Error);
    }
  }

  /**
   * One sequence from its first token through the decoder, `prefillChunk` tokens a step, the
   * cache growing between steps; `visit` sees the logits row of every position from `from` on
   * (row p predicts token p + 1) while its chunk's logits are live. Two cache buffers sized for
   * the whole sequence are used in turn (a step reads its past from one and writes its present
   * into the other), so no step allocates. Returns the sequence's cache.
   */
  private async forward(
    tokenIds: readonly number[],
    from: number,
    visit: (position: number, logits: Float32Array) => void,
  ): Promise<SequenceKv> {
    const decoder = this.decoder;
    if (decoder.inPlace) {
      await this.forwardInPlace(tokenIds, from, visit);
      return { len: tokenIds.length, kv: [] };
    }
    const { layers, kvHeads, headDim, vocab } = decoder.layout;
    const n = tokenIds.length;
    const chunk = Math.min(this.prefillChunk, n);
    const tensors = layers * 2;
    const slot = kvHeads * headDim;
    const sets = n <= chunk ? 1 : 2;
    const buffers = Array.from({ length: sets }, () =>
      Array.from({ length: tensors }, () => new Float32Array(n * slot)),
    );
    const logits = new Float32Array(chunk * vocab);
    let pastKv: Float32Array[] = Array.from({ length: tensors }, () => new Float32Array(0));
    for (let start = 0, step = 0; start < n; start += chunk, step++) {
      const end = Math.min(n, start + chunk);
      const seq = end - start;
      const into: StepOutput = {
        logits: logits.subarray(0, seq * vocab),
        presentKv: buffers[step % sets].map((b) => b.subarray(0, end * slot)),
      };
      const out = await decoder.step(
        {
          batch: 1,
          seq,
          past: start,
          inputIds: BigInt64Array.from(tokenIds.slice(start, end), BigInt),
          attentionMask: new BigInt64Array(end).fill(1n),
          positionIds: BigInt64Array.from({ length: seq }, (_, i) => BigInt(start + i)),
          pastKv,
        },
        into,
      );
      for (let p = Math.max(start, from); p < end; p++)
        visit(p, out.logits.subarray((p - start) * vocab, (p - start + 1) * vocab));
      pastKv = out.presentKv;
    }
    return { len: n, kv: pastKv };
  }

  /**
   * Queued sequences from the head on whose prompts can share one prefill step: while each
   * fits the batch and the memory budget, and the step (left-padded to the longest prompt)
   * stays within `prefillChunk` tokens, the bound a chunked prefill keeps for its activations.
   */
  private shortPromptGroup(batchSize: number): Sequence[] {
    const group: Sequence[] = [];
    let longest = 0;
    for (const seq of this.queue) {
      const length = seq.request.promptTokenIds.length;
      const width = Math.max(longest, length);
      if (batchSize + group.length >= this.maxBatch || width * (group.length + 1) > this.prefillChunk) break;
      if (group.length > 0 && !this.fitsBeside(seq, [...this.members, ...group])) break;
      group.push(seq);
      longest = width;
    }
    return group;
  }

  /**
   * Prefills `group` (taken off the queue) in one decoder step, left-padded to its longest
   * prompt (padding masked out, as in a decode step): one step's overhead instead of one per
   * request when many arrive together. Returns the sequences still generating.
   */
  private async prefillTogether(group: Sequence[]): Promise<Sequence[]> {
    this.queue.splice(0, group.length);
    const { layers, vocab } = this.decoder.layout;
    const lens = group.map((s) => s.request.promptTokenIds.length);
    const width = Math.max(...lens);
    const batch = group.length;
    const inputIds = new BigInt64Array(batch * width);
    const attentionMask = new BigInt64Array(batch * width);
    const positionIds = new BigInt64Array(batch * width);
    group.forEach((seq, b) => {
      const pad = width - lens[b];
      seq.request.promptTokenIds.forEach((id, j) => {
        inputIds[b * width + pad + j] = BigInt(id);
        attentionMask[b * width + pad + j] = 1n;
        positionIds[b * width + pad + j] = BigInt(j);
      });
    });
    const out = await this.decoder.step({
      batch,
      seq: width,
      past: 0,
      inputIds,
      attentionMask,
      positionIds,
      pastKv: Array.from({ length: layers * 2 }, () => new Float32Array(0)),
    });
    const padded = new KvBatch(this.decoder.layout);
    padded.adopt(out.presentKv, lens);
    const going: Sequence[] = [];
    group.forEach((seq, b) => {
      seq.version = this.version;
      seq.own = padded.extract(b);
      this.options.observer?.onFirstToken?.((performance.now() - seq.startedAt) / 1000);
      const row = (b * width + width - 1) * vocab;
      if (!this.accept(seq, out.logits.subarray(row, row + vocab))) going.push(seq);
    });
    return going;
  }

  /** Runs the prompt through the model and samples the first token; false when already done. */
  private async prefill(seq: Sequence): Promise<boolean> {
    const prompt = seq.request.promptTokenIds;
    const n = prompt.length;
    let last: Float32Array | undefined;
    const own = await this.forward(prompt, n - 1, (_, logits) => {
      last = logits;
    });
    seq.version = this.version;
    seq.own = own;
    this.options.observer?.onFirstToken?.((performance.now() - seq.startedAt) / 1000);
    return !this.accept(seq, last!);
  }

  private async decodeStep(): Promise<void> {
    const started = performance.now();
    const { vocab } = this.decoder.layout;
    const members = this.members;
    const batch = members.length;
    const out = await this.decoder.step(
      {
        batch,
        seq: 1,
        past: this.batch.past,
        inputIds: BigInt64Array.from(members, (s) => BigInt(s.tokens[s.tokens.length - 1])),
        attentionMask: this.batch.stepMask(),
        positionIds: BigInt64Array.from(members, (s) =>
          BigInt(s.request.promptTokenIds.length + s.tokens.length - 1),
        ),
        pastKv: this.batch.kv,
      },
      this.batch.stepOutputs(),
    );
    this.batch.advance(out.presentKv);
    this.options.observer?.onStep?.(batch, (performance.now() - started) / 1000);
    const staying: Sequence[] = [];
    members.forEach((seq, b) => {
      if (!this.accept(seq, out.logits.subarray(b * vocab, (b + 1) * vocab))) staying.push(seq);
    });
    if (staying.length !== members.length) this.repack(staying);
  }

  /**
   * A draw from the (adjusted) distribution restricted to the tokens `json` allows: the
   * unrestricted draw when it is allowed (the usual case, and one vocabulary pass cheaper), else
   * a draw from the masked row, which together give exactly the renormalised restriction.
   * Undefined when no token is allowed.
   */
  private constrainedDraw(seq: Sequence, json: JsonConstraint, logits: Float32Array): number | undefined {
    const row = seq.adjust ? adjustLogits(logits, seq.adjust, seq.tokens) : logits;
    const first = sample(row, seq.params, seq.random).tokenId;
    if (json.allows(first)) return first;
    const masked = json.mask(row);
    if (!masked.some((x) => x > Number.NEGATIVE_INFINITY)) return undefined;
    return sample(masked, seq.params, seq.random).tokenId;
  }

  /** Samples the next token; true when the sequence has finished (and was resolved). */
  private accept(seq: Sequence, logits: Float32Array): boolean {
    if (seq.request.signal?.aborted) {
      seq.own = undefined;
      this.aborted++;
      seq.reject(new GenerationAbortedError('the request was aborted'));
      return true;
    }
    // The model's own tempered distribution, computed once: the recorded logprob, the draw
    // (unless adjusted) and top_logprobs all read it.
    const logp = logSoftmax(logits, seq.params.temperature, this.row);
    let picked: Sampled;
    if (seq.json) {
      const chosen = this.constrainedDraw(seq, seq.json, logits);
      if (chosen === undefined) {
        seq.own = undefined;
        seq.reject(
          new ConfigError(
            `response_format json_object: no token of the vocabulary continues the JSON after ${seq.tokens.length} tokens`,
            { fields: { param: 'response_format' } },
          ),
        );
        return true;
      }
      picked = { tokenId: chosen, logprob: logp[chosen] };
      seq.json.advance(chosen);
    } else if (seq.adjust) {
      const chosen = sample(adjustLogits(logits, seq.adjust, seq.tokens), seq.params, seq.random);
      // Recorded under the model's own distribution: the trainer cannot recompute the adjustment.
      picked = { tokenId: chosen.tokenId, logprob: logp[chosen.tokenId] };
    } else {
      picked = sampleLogprobs(logp, seq.params, seq.random, this.row);
    }
    this.tokens++;
    seq.tokens.push(picked.tokenId);
    seq.logprobs.push(picked.logprob);
    if (seq.request.topLogprobs) seq.top.push(topOfLogprobs(logp, seq.request.topLogprobs));
    seq.request.onToken?.(picked);
    let finish: GenerateResult['finishReason'] | undefined;
    let text: string | undefined;
    if (
      this.options.eosTokenIds.includes(picked.tokenId) ||
      seq.request.stopTokenIds?.includes(picked.tokenId)
    )
      finish = 'stop';
    // Decoding the text so far costs a pass over the whole output: only for stop strings.
    if (seq.request.stop?.length && this.options.detokenize) {
      text = this.options.detokenize(seq.tokens);
      const hit = seq.request.stop.map((s) => text!.indexOf(s)).filter((i) => i >= 0);
      if (hit.length > 0) {
        text = text.slice(0, Math.min(...hit));
        finish = 'stop';
      }
    }
    if (!finish && seq.json?.done) finish = 'stop';
    if (!finish && seq.tokens.length >= seq.request.maxTokens) finish = 'length';
    if (!finish) return false;
    text ??= this.options.detokenize?.(seq.tokens);
    const result: GenerateResult = {
      promptTokenIds: seq.request.promptTokenIds,
      tokenIds: seq.tokens,
      logprobs: seq.logprobs,
      finishReason: finish,
      weightVersion: seq.version,
      ...(seq.request.topLogprobs ? { topLogprobs: seq.top } : {}),
      ...(text !== undefined ? { text } : {}),
    };
    seq.own = undefined;
    this.options.observer?.onFinished?.(result);
    seq.resolve(result);
    return true;
  }

  /** Rebuilds the batch cache for a new set of members. */
  private repack(next: Sequence[]): void {
    this.members.forEach((seq, i) => {
      if (next.includes(seq)) seq.own = this.batch.extract(i);
    });
    this.batch.pack(
      next.map((s) => s.own!),
      Math.max(0, ...next.map((s) => s.finalLength)),
    );
    for (const seq of next) seq.own = undefined;
    this.members = next;
  }

  // ---- in-place decoders (slots, GQA): one cache buffer, rows = members ------------------

  /**
   * `forward` on an in-place decoder, `prefillChunk` tokens a step (batch 1, so a chunk after
   * the first has a past). A sequence of one chunk is written straight into row `into.row` of
   * `into.slots` (the batch's buffer) when given; a longer one into a buffer of its own that
   * grows chunk by chunk, so that each chunk attends to the slots written so far rather than to
   * a buffer sized for the whole sequence (twice the attention work over a long prompt), and is
   * then copied into `into`. With `lastOnly`, each chunk computes only its last position's
   * logits (a generating prefill needs no others).
   */
  private async forwardInPlace(
    tokenIds: readonly number[],
    from: number,
    visit: (position: number, logits: Float32Array) => void,
    lastOnly = false,
    into?: { slots: KvSlots; row: number },
  ): Promise<void> {
    const decoder = this.decoder;
    const { vocab } = decoder.layout;
    const n = tokenIds.length;
    const chunk = Math.min(this.prefillChunk, n);
    const own = into && n <= chunk ? undefined : new KvSlots(decoder.layout, 1);
    own?.reserve(1, chunk);
    const slots = own ?? into!.slots;
    const row = own ? own.add() : into!.row;
    const logits = new Float32Array((lastOnly ? 1 : chunk) * vocab);
    for (let start = 0; start < n; start += chunk) {
      const end = Math.min(n, start + chunk);
      own?.reserve(1, end);
      // Chunks before the one holding `from` need no logits at all: keep one row.
      const keep = lastOnly || end <= from ? 1 : 0;
      const out = await decoder.stepInPlace({
        batch: 1,
        seq: end - start,
        inputIds: BigInt64Array.from(tokenIds.slice(start, end), BigInt),
        pastLens: Int32Array.of(start),
        newLens: Int32Array.of(end - start),
        kv: slots.rows(row, 1),
        capacity: slots.capacity,
        logitsToKeep: keep,
        logits,
      });
      slots.lens[row] = end;
      const first = keep === 1 ? end - 1 : start;
      for (let p = Math.max(first, from); p < end; p++)
        visit(p, out.subarray((p - first) * vocab, (p - first + 1) * vocab));
    }
    if (own && into) into.slots.copyRow(own, row, into.row);
  }

  /**
   * Admission on an in-place decoder: each admitted sequence gets the next row of the cache buffer
   * and its prefill writes that row in place (no per-sequence cache, no repacking). A group of
   * short prompts shares one right-padded first-prompt step.
   */
  private async admitInPlace(): Promise<void> {
    while (!this.swap && this.members.length < this.maxBatch && this.queue.length > 0) {
      if (!this.fitsBeside(this.queue[0], this.members)) break;
      const group = this.shortPromptGroup(this.members.length);
      const taken = group.length > 1 ? group : [this.queue[0]];
      this.queue.splice(0, taken.length);
      this.makeRoomFor(taken);
      const longest = Math.max(0, ...this.slots.lens.map((l) => l + 1));
      const prompts = Math.max(...taken.map((m) => m.request.promptTokenIds.length));
      this.slots.reserve(this.members.length + taken.length, Math.max(longest, prompts));
      const first = this.slots.size;
      for (const seq of taken) {
        this.slots.add();
        this.members.push(seq);
      }
      const finished: Sequence[] = [];
      if (taken.length > 1) {
        const { vocab } = this.decoder.layout;
        const lens = taken.map((s) => s.request.promptTokenIds.length);
        const width = Math.max(...lens);
        // Rows are right-padded, so each row's last prompt token sits at lens[b] − 1: keeping the
        // last width − min(lens) + 1 positions keeps every row's, and the LM head (a
        // vocab-wide product per position: 151,936 columns on Qwen3) runs on those alone.
        const keep = width - Math.min(...lens) + 1;
        const inputIds = new BigInt64Array(taken.length * width);
        taken.forEach((seq, b) => {
          seq.request.promptTokenIds.forEach((id, j) => {
            inputIds[b * width + j] = BigInt(id);
          });
        });
        const logits = await this.decoder.stepInPlace({
          batch: taken.length,
          seq: width,
          inputIds,
          pastLens: new Int32Array(taken.length),
          newLens: Int32Array.from(lens),
          kv: this.slots.rows(first, taken.length),
          capacity: this.slots.capacity,
          logitsToKeep: keep,
          logits: new Float32Array(taken.length * keep * vocab),
        });
        taken.forEach((seq, b) => {
          this.slots.lens[first + b] = lens[b];
          seq.version = this.version;
          this.options.observer?.onFirstToken?.((performance.now() - seq.startedAt) / 1000);
          const row = (b * keep + lens[b] - 1 - (width - keep)) * vocab;
          if (this.accept(seq, logits.subarray(row, row + vocab))) finished.push(seq);
        });
      } else {
        const seq = taken[0];
        const prompt = seq.request.promptTokenIds;
        let last: Float32Array | undefined;
        await this.forwardInPlace(
          prompt,
          prompt.length - 1,
          (_, logits) => {
            last = logits;
          },
          true,
          { slots: this.slots, row: first },
        );
        seq.version = this.version;
        this.options.observer?.onFirstToken?.((performance.now() - seq.startedAt) / 1000);
        if (this.accept(seq, last!)) finished.push(seq);
      }
      this.dropRows(finished);
    }
  }

  /** Removes finished members' rows (the last row moves into each freed one). */
  private dropRows(finished: readonly Sequence[]): void {
    if (finished.length === 0) return;
    const indices = finished.map((seq) => this.members.indexOf(seq)).sort((a, b) => b - a);
    for (const i of indices) {
      const moved = this.slots.remove(i);
      this.members[i] = this.members[moved];
      this.members.pop();
    }
  }

  private async decodeStepInPlace(): Promise<void> {
    const started = performance.now();
    const { vocab } = this.decoder.layout;
    const members = this.members;
    const batch = members.length;
    // Room for this step's token in every row (regrown every SLOT_GRANULE steps).
    this.slots.reserve(batch, Math.max(...this.slots.lens) + 1);
    const logits = await this.decoder.stepInPlace({
      batch,
      seq: 1,
      inputIds: BigInt64Array.from(members, (s) => BigInt(s.tokens[s.tokens.length - 1])),
      // The new token goes to slot len (its position), so the row's length becomes len + 1.
      pastLens: Int32Array.from(this.slots.lens),
      newLens: new Int32Array(batch).fill(1),
      kv: this.slots.rows(0, batch),
      capacity: this.slots.capacity,
      logitsToKeep: 1,
      logits: this.stepLogits(batch * vocab),
    });
    for (let b = 0; b < batch; b++) this.slots.lens[b] += 1;
    this.options.observer?.onStep?.(batch, (performance.now() - started) / 1000);
    const finished: Sequence[] = [];
    members.forEach((seq, b) => {
      if (this.accept(seq, logits.subarray(b * vocab, (b + 1) * vocab))) finished.push(seq);
    });
    this.dropRows(finished);
  }

  private logitsBuffer = new Float32Array(0);
  /** The row being sampled: its logprobs and weights (read only within `accept`). */
  private readonly row = new RowBuffers();

  /** The decode step's logits buffer, reused across steps. */
  private stepLogits(size: number): Float32Array {
    if (this.logitsBuffer.length < size) this.logitsBuffer = new Float32Array(size);
    return this.logitsBuffer;
  }

  /** 'requeue' swap: in-flight sequences start over on the new weights. */
  private requeueMembers(): void {
    for (const seq of this.members.reverse()) {
      seq.tokens = [];
      seq.logprobs = [];
      seq.top = [];
      seq.own = undefined;
      this.queue.unshift(seq);
    }
    this.members = [];
    this.batch.pack([]);
    this.slots.clear();
  }

  private failAll(err: Error): void {
    for (const seq of [...this.members, ...this.queue.splice(0)]) seq.reject(err);
    this.members = [];
    this.slots.release();
  }

  async close(): Promise<void> {
    this.failAll(new ConfigError('the rollout engine was closed'));
    await this.decoder.release();
  }
}
