/**
 * The generation core of a rollout engine, as vLLM's v1 splits it: this engine owns the public
 * API (generate, teacher scoring, weight swaps), request validation, aborts, the loop and
 * sampling; the scheduler (engine-scheduler.ts) decides which queued requests join the batch
 * under the memory budget; a runner (runner.ts) owns one decoder graph and the batch's KV cache
 * (runners.ts picks the host-cache runner of a decoder's graph kind); each request's draws and
 * stop conditions are its Sequence's (sequence.ts). One loop serves every runner: admit the
 * scheduler's groups, decode a step, drop the rows that finished; the members here stay aligned
 * with the runner's rows.
 *
 * Dynamic batching: requests join and leave between decode steps; the queue is bounded; every
 * output carries its exact token ids and logprobs; teacher scoring (`computeLogprobs`;
 * `computeTopLogprobs` adds the top-K at every position) runs one sequence alone; weight swaps
 * never fail a request: in-flight ones finish on the old weights ('finish') or restart on the
 * new ones ('requeue').
 *
 * Prompts and scored sequences go through the decoder in chunks of `prefillChunkTokens`, the
 * cache growing chunk by chunk: attention per step is chunk × (past + chunk), so a long
 * prompt's memory grows linearly with its length instead of with its square (a 25k-token
 * prompt needed > 20 GB in one piece). A request whose estimated memory (memory-budget.ts)
 * exceeds `memoryBudgetBytes` is refused up front with a ContextLengthError (400) naming the
 * counts; one that fits alone but not beside the running batch waits for it to shrink.
 */
import { ConfigError } from '../../common/errors.js';
import { ContextLengthError, EngineBusyError, GenerationAbortedError } from './engine-errors.js';
import {
  DEFAULT_MAX_TOKENS,
  DEFAULT_MEMORY_BUDGET_SHARE,
  DEFAULT_PREFILL_CHUNK_TOKENS,
  type EngineLimits,
  type EngineObserver,
  engineLimits,
  type GenerationEngineOptions,
} from './engine-options.js';
import { EngineScheduler } from './engine-scheduler.js';
import type { ExecutionProvider, OnnxDecoder } from './onnx-decoder.js';
import type { Runner, StepTimes } from './runner.js';
import { isRunner, runnerFor } from './runners.js';
import { logSoftmax, RowBuffers } from './sampler.js';
import { type FinishReason, type GenerateRequest, type GenerateResult, Sequence } from './sequence.js';
import { appendTopK, type ScoredTokens } from './top-k.js';

export {
  ContextLengthError,
  DEFAULT_MAX_TOKENS,
  DEFAULT_MEMORY_BUDGET_SHARE,
  DEFAULT_PREFILL_CHUNK_TOKENS,
  EngineBusyError,
  type EngineObserver,
  type FinishReason,
  type GenerateRequest,
  type GenerateResult,
  GenerationAbortedError,
  type GenerationEngineOptions,
};

export class GenerationEngine {
  private runner: Runner;
  private readonly limits: EngineLimits;
  private readonly scheduler: EngineScheduler<Sequence>;
  /** The sequences decoding: member i is the runner's row i. */
  private members: Sequence[] = [];
  private running = false;
  private closed = false;
  private version: number;
  private swap?: {
    version: number;
    next: Promise<OnnxDecoder | Runner>;
    done: () => void;
    failed: (e: Error) => void;
    started: number;
  };
  private tokens = 0;
  private aborted = 0;
  /** The row being sampled: its logprobs and weights (read only within `accept`). */
  private readonly row = new RowBuffers();

  /** `decoder`: a decoder graph (run by the host-cache runner of its kind), or a runner. */
  constructor(
    decoder: OnnxDecoder | Runner,
    private readonly options: GenerationEngineOptions,
  ) {
    this.limits = engineLimits(options);
    this.runner = isRunner(decoder) ? decoder : runnerFor(decoder, this.limits);
    this.scheduler = new EngineScheduler(this.limits, () => this.runner.layout);
    this.version = options.weightVersion ?? 0;
  }

  get weightVersion(): number {
    return this.version;
  }

  get provider(): ExecutionProvider {
    return this.runner.provider;
  }

  /** The runner's graph kind: 'slots' or 'gqa' (cache kept in place) or 'standard'. */
  get decoderKind(): string {
    return this.runner.kind;
  }

  /** Where the runner's step time went (device runs vs the rest), where it can tell. */
  get stepTimes(): StepTimes | undefined {
    return this.runner.stepTimes;
  }

  /** Where the batch's KV cache lives: host memory, or the GPU's (the device runner). */
  get kvCacheLocation(): 'host' | 'device' {
    return this.runner.cacheLocation;
  }

  get queueDepth(): number {
    return this.scheduler.depth;
  }

  /** Bytes of memory the batch's KV cache holds (in use or kept for the next batch). */
  get kvCacheBytes(): number {
    return this.runner.cacheBytes;
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
    const refused = this.refusal(request, maxTokens);
    if (refused) return Promise.reject(refused);
    const signal = request.signal;
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        // Still queued: leave now. Decoding: the next step drops it (see accept).
        if (this.scheduler.remove(seq)) {
          this.aborted++;
          seq.reject(new GenerationAbortedError('the request was aborted'));
        }
      };
      // A signal may outlive the request (one per client, many requests): let go of it.
      const settled = () => signal?.removeEventListener('abort', onAbort);
      const seq: Sequence = new Sequence(
        { ...request, maxTokens },
        this.options,
        this.version,
        (result) => {
          settled();
          resolve(result);
        },
        (err) => {
          settled();
          reject(err);
        },
      );
      signal?.addEventListener('abort', onAbort, { once: true });
      this.scheduler.push(seq);
      this.kick();
    });
  }

  /** Why `request` cannot be queued now, or undefined when it can. */
  private refusal(request: GenerateRequest, maxTokens: number): Error | undefined {
    const prompt = request.promptTokenIds;
    const vocab = this.runner.layout.vocab;
    if (this.closed) return closedError();
    if (prompt.length === 0) return new ConfigError('promptTokenIds is empty');
    const bad = prompt.find((t) => !Number.isInteger(t) || t < 0 || t >= vocab);
    if (bad !== undefined)
      return new ConfigError(`prompt token id ${bad} is outside the vocabulary (0..${vocab - 1})`);
    if (!Number.isInteger(maxTokens) || maxTokens < 1)
      return new ConfigError('maxTokens must be a whole number ≥ 1');
    if (prompt.length + maxTokens > this.options.maxContext) {
      return new ConfigError(
        `prompt (${prompt.length} tokens) + maxTokens (${maxTokens}) exceeds the model's context of ${this.options.maxContext}`,
      );
    }
    const tooBig = this.scheduler.overBudget(prompt.length, maxTokens, 'messages');
    if (tooBig) return tooBig;
    if (request.stop?.length && !this.options.detokenize)
      return new ConfigError('stop strings need an engine with a tokenizer');
    if (request.json && !this.options.tokenBytes) {
      return new ConfigError('response_format json_object needs an engine with a tokenizer', {
        fields: { param: 'response_format' },
      });
    }
    const busy = this.scheduler.busy();
    if (busy) return busy;
    const badBias = request.logitBias?.find(
      ([id, b]) => !(Number.isInteger(id) && id >= 0 && id < vocab) || !(b >= -100 && b <= 100),
    );
    if (badBias) {
      return new ConfigError(
        `logit_bias: token ${badBias[0]} → ${badBias[1]}: ids are 0..${vocab - 1}, biases −100…100`,
        { fields: { param: 'logit_bias' } },
      );
    }
    if (request.signal?.aborted) {
      this.aborted++;
      return new GenerationAbortedError('the request was aborted');
    }
    return undefined;
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
    if (this.closed) throw closedError();
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
    const tooBig = this.scheduler.overBudget(tokenIds.length, 0, 'tokenIds');
    if (tooBig) throw tooBig;
    const k = Math.min(topK, this.runner.layout.vocab);
    const result: ScoredTokens = { logprobs: [], top: { k, ids: [], logprobs: [] } };
    // Row p of the logits predicts token p + 1: positions fromIndex − 1 … n − 2.
    await this.runner.score(tokenIds, fromIndex - 1, (p, logits) => {
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
    if (this.closed) return Promise.reject(closedError());
    if (this.swap)
      return Promise.reject(new ConfigError(`a swap to version ${this.swap.version} is already in progress`));
    return new Promise((resolve, reject) => {
      this.swap = {
        version,
        next: this.options.reload!(tensors),
        done: resolve,
        failed: reject,
        started: performance.now(),
      };
      // Keep a rejected load from being reported as unhandled before the loop awaits it.
      this.swap.next.catch(() => {});
      this.kick();
    });
  }

  private kick(): void {
    if (this.running || this.closed) return;
    this.running = true;
    void this.loop()
      .catch((err: Error) => this.fail(err))
      .finally(() => {
        this.running = false;
        if (this.scheduler.depth > 0 || this.swap) this.kick();
      });
  }

  private async loop(): Promise<void> {
    while (!this.closed) {
      if (this.swap) {
        if (this.options.swapMode === 'requeue' && this.members.length > 0) await this.requeueMembers();
        if (this.members.length === 0) await this.applySwap();
      }
      await this.admit();
      if (this.members.length === 0) {
        if (this.swap || this.scheduler.depth > 0) continue;
        return;
      }
      await this.decode();
    }
  }

  /** Admits what the scheduler lets join the batch, group by group (never during a swap). */
  private async admit(): Promise<void> {
    while (!this.swap && !this.closed) {
      const runner = this.runner;
      const taken = this.scheduler.next(this.members, runner.batchedPrefill);
      if (taken.length === 0) return;
      if (this.scheduler.needsRoom(runner.cacheBytes, this.members, taken)) await runner.fit();
      const first = this.members.length;
      this.members.push(...taken);
      const logits = await runner.admit(
        taken.map((seq) => seq.request.promptTokenIds),
        Math.max(...taken.map((seq) => seq.finalLength)),
      );
      if (this.closed) return;
      const { vocab } = runner.layout;
      const finished: number[] = [];
      taken.forEach((seq, b) => {
        seq.version = this.version;
        this.options.observer?.onFirstToken?.((performance.now() - seq.startedAt) / 1000);
        if (this.accept(seq, logits.subarray(b * vocab, (b + 1) * vocab))) finished.push(first + b);
      });
      await this.dropRows(finished);
    }
  }

  /** One decode step of every member. */
  private async decode(): Promise<void> {
    const started = performance.now();
    const members = this.members;
    const logits = await this.runner.decode(members.map((seq) => seq.tokens[seq.tokens.length - 1]));
    if (this.closed) return;
    this.options.observer?.onStep?.(members.length, (performance.now() - started) / 1000);
    const { vocab } = this.runner.layout;
    const finished: number[] = [];
    members.forEach((seq, b) => {
      if (this.accept(seq, logits.subarray(b * vocab, (b + 1) * vocab))) finished.push(b);
    });
    await this.dropRows(finished);
  }

  /** Removes these members' rows; the members follow the runner's new row order. */
  private async dropRows(rows: number[]): Promise<void> {
    if (rows.length === 0) return;
    const order = await this.runner.drop(rows);
    const members = this.members;
    this.members = order.map((i) => members[i]);
  }

  private async applySwap(): Promise<void> {
    const swap = this.swap!;
    try {
      const loaded = await swap.next;
      // Closed meanwhile: close() released what the swap loaded.
      if (this.closed) return;
      const old = this.runner;
      this.runner = isRunner(loaded) ? loaded : runnerFor(loaded, this.limits, old);
      this.version = swap.version;
      for (const seq of this.scheduler.waiting) seq.version = swap.version;
      await old.release();
      this.options.observer?.onSwap?.(swap.version, (performance.now() - swap.started) / 1000);
      this.swap = undefined;
      swap.done();
    } catch (err) {
      this.swap = undefined;
      swap.failed(err as Error);
    }
  }

  /** Samples the next token; true when the sequence has finished (and was settled). */
  private accept(seq: Sequence, logits: Float32Array): boolean {
    if (seq.request.signal?.aborted) {
      this.aborted++;
      seq.reject(new GenerationAbortedError('the request was aborted'));
      return true;
    }
    const picked = seq.draw(logits, this.row);
    if (picked instanceof Error) {
      seq.reject(picked);
      return true;
    }
    this.tokens++;
    seq.request.onToken?.(picked);
    const result = seq.result();
    if (!result) return false;
    this.options.observer?.onFinished?.(result);
    seq.resolve(result);
    return true;
  }

  /**
   * 'requeue' swap: in-flight sequences go back to the head of the queue, in their order, to
   * start over on the new weights as if they had just arrived.
   */
  private async requeueMembers(): Promise<void> {
    for (const seq of this.members) seq.restart();
    this.scheduler.requeue(this.members);
    this.members = [];
    await this.runner.clear();
  }

  private failAll(err: Error): void {
    for (const seq of [...this.members, ...this.scheduler.drain()]) seq.reject(err);
    this.members = [];
  }

  /**
   * The loop failed (a runner call threw): every member and queued request fails with its error,
   * and the runner starts over empty, its cache memory let go.
   */
  private async fail(err: Error): Promise<void> {
    this.failAll(err);
    try {
      await this.runner.clear();
      await this.runner.fit();
    } catch {
      // A runner that cannot even empty itself fails the next request's admission, which says why.
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.failAll(closedError());
    const swap = this.swap;
    if (swap) {
      this.swap = undefined;
      swap.failed(closedError());
      swap.next.then((loaded) => loaded.release()).catch(() => {});
    }
    await this.runner.release();
  }
}

function closedError(): ConfigError {
  return new ConfigError('the rollout engine was closed');
}
