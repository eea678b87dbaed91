/**
 * What the rollout engine runs next (vLLM v1's scheduler to the engine core's loop): the queue of
 * requests waiting for a row of the batch, and the memory budget they are admitted under. It
 * decides, the engine acts: which queued requests join the batch now (first come, first served;
 * short prompts grouped into one prefill step), whether the cache memory a runner keeps must be
 * given back first, and which requests are refused outright. It knows nothing of ONNX, of
 * runners or of sampling, only counts — so it is synchronous, and tested with a fake runner in
 * milliseconds (engine-scheduler.test.ts).
 *
 * The budget is an estimate (memory-budget.ts): a request whose estimate alone exceeds
 * `memoryBudgetBytes` is refused up front with a ContextLengthError (400) naming the counts;
 * one that fits alone but not beside the running batch waits for the batch to shrink.
 */
import { ContextLengthError, EngineBusyError } from './engine-errors.js';
import type { EngineLimits } from './engine-options.js';
import { batchBytes, formatBytes, kvBytesPerToken, type MemoryShape, prefillBytes } from './memory-budget.js';
import type { KvLayout } from './onnx-decoder.js';

/** What the scheduler reads of a request. */
export interface Scheduled {
  /** Tokens of its prompt (its prefill). */
  readonly promptTokens: number;
  /** Prompt + max tokens: the cache it may reach. */
  readonly finalLength: number;
}

export class EngineScheduler<T extends Scheduled> {
  private readonly queue: T[] = [];

  constructor(
    private readonly limits: EngineLimits,
    /** The model's layout now (the runner changes on a weight swap). */
    private readonly layout: () => KvLayout,
  ) {}

  /** Requests waiting. */
  get depth(): number {
    return this.queue.length;
  }

  /** The waiting requests, head first. */
  get waiting(): readonly T[] {
    return this.queue;
  }

  /** The refusal of one more request when the queue is full, else undefined. */
  busy(): EngineBusyError | undefined {
    if (this.queue.length < this.limits.maxQueue) return undefined;
    return new EngineBusyError(
      `the rollout engine queue is full (${this.limits.maxQueue} waiting); retry later`,
    );
  }

  /** Queues a request behind the others. */
  push(request: T): void {
    this.queue.push(request);
  }

  /** Takes a waiting request out of the queue (aborted); false when it was not waiting. */
  remove(request: T): boolean {
    const i = this.queue.indexOf(request);
    if (i < 0) return false;
    this.queue.splice(i, 1);
    return true;
  }

  /** Puts preempted requests back at the head of the queue, in their order. */
  requeue(requests: readonly T[]): void {
    this.queue.unshift(...requests);
  }

  /** Empties the queue, returning what waited. */
  drain(): T[] {
    return this.queue.splice(0);
  }

  /**
   * The requests to admit beside `members` now, taken off the queue; none when the batch is
   * full, the queue empty, or its head does not fit beside the batch. First come, first served:
   * a request too big to join now holds the ones behind it. With `grouped` (the runner prefills
   * several prompts in one step) the head brings along the short prompts behind it.
   */
  next(members: readonly T[], grouped: boolean): T[] {
    if (members.length >= this.limits.maxBatchSize || this.queue.length === 0) return [];
    if (!this.fitsBeside(this.queue[0], members)) return [];
    const group = grouped ? this.shortPromptGroup(members) : [];
    return this.queue.splice(0, Math.max(1, group.length));
  }

  /**
   * Whether the cache memory a runner holds (`heldBytes`, e.g. what an earlier, bigger batch left
   * behind) must be given back before `taken` join `members`: it counts against the budget too,
   * so when it is more than the new batch needs and it plus the prefill of `taken` would pass
   * the budget, the part the rows do not need is let go first.
   */
  needsRoom(heldBytes: number, members: readonly T[], taken: readonly T[]): boolean {
    if (heldBytes === 0 || taken.length === 0) return false;
    const shape = this.shape;
    const batch = batchBytes(
      shape,
      [...members, ...taken].map((m) => m.finalLength),
    );
    const prefill = Math.max(
      ...taken.map((m) => prefillBytes(shape, m.promptTokens, this.limits.prefillChunkTokens)),
    );
    return heldBytes > batch && heldBytes + prefill > this.limits.memoryBudgetBytes;
  }

  /** A refusal naming the counts, or undefined when the request fits the memory budget alone. */
  overBudget(promptTokens: number, maxTokens: number, param: string): ContextLengthError | undefined {
    const budget = this.limits.memoryBudgetBytes;
    const needed = this.aloneBytes(promptTokens, maxTokens);
    if (needed <= budget) return undefined;
    // The longest prompt that would fit with this maxTokens (the estimate grows with the prompt).
    let lo = 0;
    let hi = promptTokens;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (this.aloneBytes(mid, maxTokens) <= budget) lo = mid;
      else hi = mid - 1;
    }
    const perToken = kvBytesPerToken(this.shape);
    return new ContextLengthError(
      `this request (${promptTokens} prompt tokens + ${maxTokens} to generate) needs about ${formatBytes(needed)} of memory (${formatBytes(perToken)} of KV cache per token, prefill in chunks of ${this.limits.prefillChunkTokens}); the rollout engine's memory budget is ${formatBytes(budget)}, in which at most about ${lo} prompt tokens fit: shorten the prompt or lower max_tokens`,
      {
        fields: {
          param,
          promptTokens,
          maxTokens,
          estimatedBytes: needed,
          memoryBudgetBytes: budget,
          maxPromptTokens: lo,
        },
      },
    );
  }

  /** The model's shape as the memory estimates need it. */
  private get shape(): MemoryShape {
    const layout = this.layout();
    return { ...layout, heads: this.limits.attentionHeads ?? 4 * layout.kvHeads };
  }

  /** The estimated bytes of one sequence alone: its prefill, then its decoding. */
  private aloneBytes(promptTokens: number, maxTokens: number): number {
    const shape = this.shape;
    return Math.max(
      prefillBytes(shape, promptTokens, this.limits.prefillChunkTokens),
      batchBytes(shape, [promptTokens + maxTokens]),
    );
  }

  /** Whether `request` may join `members` now without the estimate passing the budget. */
  private fitsBeside(request: T, members: readonly T[]): boolean {
    if (members.length === 0) return true;
    const shape = this.shape;
    const lengths = [...members.map((m) => m.finalLength), request.finalLength];
    const prefill = prefillBytes(shape, request.promptTokens, this.limits.prefillChunkTokens);
    return batchBytes(shape, lengths) + prefill <= this.limits.memoryBudgetBytes;
  }

  /**
   * Queued requests from the head on whose prompts can share one prefill step: while each fits
   * the batch and the memory budget, and the step (padded to the longest prompt) stays within
   * `prefillChunkTokens` tokens, the bound a chunked prefill keeps for its activations.
   */
  private shortPromptGroup(members: readonly T[]): T[] {
    const group: T[] = [];
    let longest = 0;
    for (const request of this.queue) {
      const width = Math.max(longest, request.promptTokens);
      if (
        members.length + group.length >= this.limits.maxBatchSize ||
        width * (group.length + 1) > this.limits.prefillChunkTokens
      )
        break;
      if (group.length > 0 && !this.fitsBeside(request, [...members, ...group])) break;
      group.push(request);
      longest = width;
    }
    return group;
  }
}
