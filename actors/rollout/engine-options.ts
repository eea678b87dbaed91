/**
 * The rollout engine's options: what a caller may set (GenerationEngineOptions), the defaults,
 * and the limits compiled once from them (`engineLimits`) that the scheduler and the runners
 * trust. rollout-engine.ts re-exports what callers use.
 */
import { totalmem } from 'node:os';
import { ConfigError } from '../../common/errors.js';
import type { OnnxDecoder } from './onnx-decoder.js';
import type { Runner } from './runner.js';
import type { GenerateResult } from './sequence.js';

/** Tokens a request generates at most when it does not say. */
export const DEFAULT_MAX_TOKENS = 256;

/** Tokens per prefill (and scoring) step when the options do not say. */
export const DEFAULT_PREFILL_CHUNK_TOKENS = 512;

/** The share of the machine's memory the engine's estimates may reach when the options do not say. */
export const DEFAULT_MEMORY_BUDGET_SHARE = 0.5;

/** Sequences decoding together when the options do not say. */
export const DEFAULT_MAX_BATCH_SIZE = 16;

/** Requests waiting for a row when the options do not say. */
const DEFAULT_MAX_QUEUE = 1024;

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
  /**
   * Loads a decoder, or a runner, for new weights (the engine stays on the old one until it is
   * ready). A decoder gets the host-cache runner of its graph kind (runners.ts).
   */
  reload?: (tensors: Map<string, Float32Array>) => Promise<OnnxDecoder | Runner>;
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

/** The engine's limits, every default applied (`engineLimits`). */
export interface EngineLimits {
  maxBatchSize: number;
  maxQueue: number;
  prefillChunkTokens: number;
  memoryBudgetBytes: number;
  /** Query heads of the model, for the attention-score estimate (undefined: 4 × the KV heads). */
  attentionHeads: number | undefined;
}

/** The limits from the engine's options: defaults applied, refused when they make no sense. */
export function engineLimits(options: GenerationEngineOptions): EngineLimits {
  const prefillChunkTokens = options.prefillChunkTokens ?? DEFAULT_PREFILL_CHUNK_TOKENS;
  if (!Number.isInteger(prefillChunkTokens) || prefillChunkTokens < 1) {
    throw new ConfigError(`prefillChunkTokens must be a whole number ≥ 1, got ${prefillChunkTokens}`, {
      fields: { prefillChunkTokens },
    });
  }
  const memoryBudgetBytes = options.memoryBudgetBytes ?? Math.floor(totalmem() * DEFAULT_MEMORY_BUDGET_SHARE);
  if (!(memoryBudgetBytes > 0)) {
    throw new ConfigError(`memoryBudgetBytes must be > 0, got ${memoryBudgetBytes}`, {
      fields: { memoryBudgetBytes },
    });
  }
  return {
    maxBatchSize: options.maxBatchSize ?? DEFAULT_MAX_BATCH_SIZE,
    maxQueue: options.maxQueue ?? DEFAULT_MAX_QUEUE,
    prefillChunkTokens,
    memoryBudgetBytes,
    attentionHeads: options.attentionHeads,
  };
}
