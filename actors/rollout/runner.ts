/**
 * The rollout engine as vLLM's v1 splits it: the *engine* (rollout-engine.ts) owns the public
 * API, the request queue, admission under the memory budget, weight swaps and sampling; a
 * *runner* owns one decoder graph on one execution provider together with the batch's KV cache,
 * wherever that cache lives — a host buffer of right-padded rows (the slots and GQA graphs on
 * the CPU), a host batch left-padded per step (optimum's standard graph), or device memory that
 * never crosses to the host (the GQA graph on WebGPU, device-runner.ts). The engine speaks to
 * every runner through this interface only, so a new cache placement or provider is one more
 * implementation, and the engine's decisions are tested with a fake runner in milliseconds.
 *
 * Rows are the sequences decoding together, in an order the runner keeps: `admit` appends rows
 * after the current ones, `drop` removes rows and says the order of the survivors. Logits a call
 * returns are valid until the runner's next call (runners reuse their buffers).
 */
import type { ExecutionProvider } from '../models/execution-provider.js';
import type { KvLayout } from './onnx-decoder.js';

export interface StepTimes {
  /** Prefill and decode calls. */
  steps: number;
  deviceMs: number;
  hostMs: number;
}

export interface Runner {
  readonly layout: KvLayout;
  /** The execution provider the graph runs on. */
  readonly provider: ExecutionProvider;
  /**
   * The graph kind and where its cache lives, for logs and metrics: 'slots', 'gqa' and
   * 'standard' keep it in host memory; 'gqa/device' in the provider's.
   */
  readonly kind: string;
  /** Where the batch's KV cache lives: host memory, or the execution provider's (a GPU's). */
  readonly cacheLocation: 'host' | 'device';
  /** Rows in the batch. */
  readonly rows: number;
  /** Bytes the batch's cache holds now, in use or kept for the next batch. */
  readonly cacheBytes: number;
  /**
   * Where its steps' time went, summed since it started, when the runner can tell: inside the
   * provider's runs (kernels and their dispatch) and the rest (feeds, copies, thread hops).
   */
  readonly stepTimes?: StepTimes;
  /** Rows whose prompts may share one batched prefill step (the scheduler groups them). */
  readonly batchedPrefill: boolean;
  /**
   * Prefills `prompts` as new rows after the current ones, in order, and returns the logits of
   * each prompt's last position: [prompts.length × vocab]. More than one prompt: they were
   * grouped by the engine to share one step (each short: their padded width times their count
   * stays within the prefill chunk). One prompt: chunked by the runner's prefill chunk.
   * `reserveSlots`: the longest any row may grow to (prompt + max tokens), so a cache can be
   * sized once for the batch's life.
   */
  admit(prompts: readonly (readonly number[])[], reserveSlots: number): Promise<Float32Array>;
  /** One decode step: row b takes `tokens[b]`; returns the logits, [rows × vocab]. */
  decode(tokens: readonly number[]): Promise<Float32Array>;
  /**
   * Removes these rows (indices into the current order). Returns the survivors' former indices
   * in their new order: the engine reorders its members the same way.
   */
  drop(rows: readonly number[]): Promise<number[]>;
  /** Removes every row (a requeueing swap, a failure); memory may be kept for reuse. */
  clear(): Promise<void>;
  /** Gives back cache memory the current rows do not need (the budget wants it). */
  fit(): Promise<void>;
  /**
   * Runs one sequence alone (not a row of the batch) and hands `visit` the logits of every
   * position from `from` on while they are live (row p predicts token p + 1): teacher scoring.
   */
  score(
    tokenIds: readonly number[],
    from: number,
    visit: (position: number, logits: Float32Array) => void,
  ): Promise<void>;
  /** Frees the graph's session and its cache. */
  release(): Promise<void>;
}
