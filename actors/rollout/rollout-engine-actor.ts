/**
 * `RolloutEngine`: a rollout model as an actor. The constructor starts loading the model
 * (an actor's constructor cannot wait); every method waits for it, and `ready()` reports
 * the load (or its error) to callers that want to know up front.
 *
 *   const engine = await cluster.createActor({ module: 'clawray/rollout', className: 'RolloutEngine',
 *     args: [{ modelDir: '/models/tiny' }], options: { numGpus: 0.5 } });
 *   await engine.call('ready');
 */
import { register } from 'prom-client';
import { ConfigError } from '../../common/errors.js';
import { callSignal } from '../../runtime/index.js';
import type { ChatMessage, ToolCall, ToolSchema } from './chat-model.js';
import {
  ContextLengthError,
  DEFAULT_MAX_TOKENS,
  type GenerateRequest,
  type GenerateResult,
} from './rollout-engine.js';
import { RolloutModel, type RolloutModelOptions, type WeightUpdateOptions } from './rollout-model.js';
import type { Sampled } from './sampler.js';
import type { ScoredTokens } from './top-k.js';

export type RolloutEngineOptions = Omit<RolloutModelOptions, 'registry'>;

export interface ChatRequest extends Omit<GenerateRequest, 'promptTokenIds' | 'onToken'> {
  messages: ChatMessage[];
  tools?: ToolSchema[];
}

export interface ChatResult extends GenerateResult {
  content: string;
  toolCalls: ToolCall[];
}

// Defined with the engine's other errors (and registered there); exported here as before.
export { ContextLengthError };

export class RolloutEngine {
  private readonly loading: Promise<RolloutModel>;
  /** Buckets of a weight version received so far (see stageWeights). */
  private staged?: { version: number; tensors: Map<string, Float32Array> };

  constructor(options: RolloutEngineOptions) {
    // Metrics go to prom-client's default registry, which the node agent exports.
    this.loading = RolloutModel.load({ ...options, registry: register });
    this.loading.catch(() => {
      // Reported by ready() and every call.
    });
  }

  /** The model served, its execution provider, where its KV cache lives, and the weight version. */
  async ready(): Promise<{
    id: string;
    provider: string;
    kvCache: 'host' | 'device';
    weightVersion: number;
  }> {
    const model = await this.loading;
    return {
      id: model.id,
      provider: model.provider,
      kvCache: model.kvCache,
      weightVersion: model.weightVersion,
    };
  }

  /**
   * Generates from token ids. A call cancelled by its caller (signal, deadline, or the caller
   * going away) stops generating at the next decode step and frees its batch slot.
   */
  async generate(request: Omit<GenerateRequest, 'onToken'>): Promise<GenerateResult> {
    const signal = callSignal() ?? request.signal;
    const model = await this.loading;
    return model.generate(signal ? { ...request, signal } : request);
  }

  /**
   * `generate`, streamed (`handle.stream('generateStream', request)`): yields the tokens as
   * they are sampled, those of one turn of the event loop together, and returns the result.
   * The OpenAI endpoint of a job (RemoteChatModel) streams its answers from here. Closing the
   * stream or cancelling the call stops the generation as for `generate`.
   */
  async *generateStream(
    request: Omit<GenerateRequest, 'onToken' | 'signal'>,
  ): AsyncGenerator<Sampled[], GenerateResult, undefined> {
    const model = await this.loading;
    // The call's signal, or the stream closing early (an item that could not be sent).
    const closed = new AbortController();
    const callAbort = callSignal();
    const signal = callAbort ? AbortSignal.any([callAbort, closed.signal]) : closed.signal;
    const tokens = new TokenBatches();
    const result = model.generate({ ...request, signal, onToken: (t) => tokens.push(t) });
    result.then(
      () => tokens.end(),
      () => tokens.end(),
    );
    try {
      for (let batch = await tokens.take(); batch; batch = await tokens.take()) yield batch;
      return await result;
    } finally {
      closed.abort();
    }
  }

  /**
   * Applies the chat template, generates, and splits tool calls out of the text. `maxTokens` is
   * capped at the context the prompt leaves; a prompt that fills the context throws
   * ContextLengthError.
   */
  async chat(request: ChatRequest): Promise<ChatResult> {
    const signal = callSignal() ?? request.signal;
    const model = await this.loading;
    const { messages, tools, ...sampling } = request;
    const promptTokenIds = model.encodeChat(messages, tools);
    const room = model.maxContext - promptTokenIds.length;
    if (room < 1) {
      throw new ContextLengthError(
        `the conversation (${promptTokenIds.length} tokens) fills the model's context of ${model.maxContext}`,
        { fields: { promptTokens: promptTokenIds.length, maxContext: model.maxContext } },
      );
    }
    const maxTokens = Math.min(sampling.maxTokens ?? DEFAULT_MAX_TOKENS, room);
    const result = await model.generate({
      ...sampling,
      maxTokens,
      promptTokenIds,
      ...(signal ? { signal } : {}),
    });
    const text = result.text ?? model.decode(result.tokenIds);
    const { content, toolCalls } = tools?.length
      ? model.parseToolCalls(text)
      : { content: text, toolCalls: [] };
    return { ...result, content, toolCalls };
  }

  /**
   * The logprob of each token from `fromIndex` on after the ones before it, at `temperature`
   * (default 1): the temperature the tokens were sampled with, so that a teacher's numbers
   * compare with the rollout's (see sampler.ts).
   */
  async computeLogprobs(tokenIds: number[], fromIndex = 1, temperature = 1): Promise<number[]> {
    return (await this.loading).engine.computeLogprobs(tokenIds, fromIndex, temperature);
  }

  /**
   * `computeLogprobs` plus the teacher's `topK` most likely tokens and their logprobs at every
   * position, at the same temperature (top-K distillation, OpenClaw-RL's `top_logprobs_num=K`),
   * as flat row-major arrays (see top-k.ts).
   */
  async computeTopLogprobs(
    tokenIds: number[],
    fromIndex: number,
    temperature: number,
    topK: number,
  ): Promise<ScoredTokens> {
    return (await this.loading).engine.computeTopLogprobs(tokenIds, fromIndex, temperature, topK);
  }

  /**
   * New weights by Hugging Face name (a plain object of Float32Arrays arrives over the wire):
   * all of them or only those that changed, and/or LoRA adapters (`<module>.lora_A|B.weight`,
   * with `options.loraScale`) that the engine merges into its base weights (delta sync).
   */
  async updateWeights(
    version: number,
    tensors: Record<string, Float32Array> | Map<string, Float32Array>,
    options: WeightUpdateOptions = {},
  ): Promise<number> {
    const model = await this.loading;
    await model.updateWeights(
      version,
      tensors instanceof Map ? tensors : new Map(Object.entries(tensors)),
      options,
    );
    return model.weightVersion;
  }

  /**
   * One bucket of a weight version that arrives in several (large models are published in
   * buckets of bounded size); nothing changes until `commitWeights`. Returns the tensors staged.
   */
  async stageWeights(
    version: number,
    tensors: Record<string, Float32Array> | Map<string, Float32Array>,
  ): Promise<number> {
    if (this.staged?.version !== version) this.staged = { version, tensors: new Map() };
    for (const [name, data] of tensors instanceof Map ? tensors : Object.entries(tensors))
      this.staged.tensors.set(name, data);
    return this.staged.tensors.size;
  }

  /** Swaps to the staged version (as `updateWeights` does, with the same options). */
  async commitWeights(version: number, options: WeightUpdateOptions = {}): Promise<number> {
    const staged = this.staged;
    if (staged?.version !== version) {
      throw new ConfigError(`commitWeights(${version}): no buckets of version ${version} were staged`);
    }
    this.staged = undefined;
    const model = await this.loading;
    await model.updateWeights(version, staged.tensors, options);
    return model.weightVersion;
  }

  async stats(): Promise<{
    weightVersion: number;
    queueDepth: number;
    batchSize: number;
    provider: string;
    /** Tokens sampled since the engine started. */
    tokensGenerated: number;
    /** Requests stopped because their call was cancelled. */
    abortedRequests: number;
  }> {
    const model = await this.loading;
    return {
      weightVersion: model.weightVersion,
      queueDepth: model.engine.queueDepth,
      batchSize: model.engine.batchSize,
      provider: model.provider,
      tokensGenerated: model.engine.tokensGenerated,
      abortedRequests: model.engine.abortedRequests,
    };
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await (await this.loading.catch(() => undefined))?.close();
  }
}

/**
 * Tokens of a streamed generation, handed out in batches: what arrived since the last take,
 * gathered until the end of the current turn of the event loop (the engine samples every
 * sequence of a decode step in one turn).
 */
class TokenBatches {
  private tokens: Sampled[] = [];
  private ended = false;
  private waiter?: () => void;
  private scheduled = false;

  push(token: Sampled): void {
    this.tokens.push(token);
    this.schedule();
  }

  end(): void {
    this.ended = true;
    this.schedule();
  }

  /** The next batch; undefined once the generation has ended and every token was taken. */
  async take(): Promise<Sampled[] | undefined> {
    while (this.tokens.length === 0 && !this.ended) {
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
      });
    }
    if (this.tokens.length === 0) return undefined;
    const batch = this.tokens;
    this.tokens = [];
    return batch;
  }

  private schedule(): void {
    if (this.scheduled || !this.waiter) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const wake = this.waiter;
      this.waiter = undefined;
      wake?.();
    });
  }
}
