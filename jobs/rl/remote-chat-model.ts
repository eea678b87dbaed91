/**
 * A `ChatModel` whose generation runs on the job's rollout engine pool (round robin over the
 * healthy engines; a request whose engine died is generated again on another) while
 * templating and detokenization happen here with the same files: what the personal track's
 * OpenAI-compatible endpoint serves, so live (or simulated) sessions talk to the policy being
 * trained.
 */
import type { ChatMessage, ChatModel, ToolCall, ToolSchema } from '../../actors/rollout/chat-model.js';
import type { GenerateRequest, GenerateResult } from '../../actors/rollout/rollout-engine.js';
import { GenerationAbortedError } from '../../actors/rollout/rollout-engine.js';
import type { RolloutEngine } from '../../actors/rollout/rollout-engine-actor.js';
import type { ActorHandle } from '../../actors/runtime/actor-handle.js';
import type { ChatCodec } from './chat-codec.js';
import type { EnginePool } from './engine-pool.js';
import { isPeerLoss } from './failures.js';

export class RemoteChatModel implements ChatModel {
  private version = 0;

  constructor(
    readonly id: string,
    private readonly codec: ChatCodec,
    private readonly engines: EnginePool<ActorHandle<RolloutEngine>>,
  ) {}

  /**
   * The weights being served: the newest version a reply came from, or that every healthy
   * engine has committed (so a job that trained after its last request says so).
   */
  get weightVersion(): number {
    return Math.max(this.version, this.engines.committedVersion);
  }

  encodeChat(
    messages: ChatMessage[],
    tools?: ToolSchema[],
    templateKwargs?: Record<string, unknown>,
  ): number[] {
    return this.codec.encodeChat(messages, tools, templateKwargs);
  }

  encodeText(text: string): number[] {
    return this.codec.encodeText(text);
  }

  tokenBytes(tokenId: number): number[] {
    return this.codec.tokenBytes(tokenId);
  }

  get maxContext(): number {
    return this.codec.maxContext;
  }

  encodeChatWithin(
    messages: ChatMessage[],
    tools: ToolSchema[] | undefined,
    maxTokens: number,
    templateKwargs?: Record<string, unknown>,
  ): Promise<number[]> {
    return this.codec.encodeChatWithin(messages, tools, maxTokens, templateKwargs);
  }

  decode(tokenIds: number[]): string {
    return this.codec.decode(tokenIds);
  }

  tokenText(tokenId: number): string {
    return this.codec.tokenText(tokenId);
  }

  parseToolCalls(text: string): { content: string; toolCalls: ToolCall[] } {
    return this.codec.parseToolCalls(text);
  }

  computeLogprobs(tokenIds: number[], fromIndex: number, temperature = 1): Promise<number[]> {
    return this.engines.run(
      (engine) => engine.call('computeLogprobs', tokenIds, fromIndex, temperature),
      isPeerLoss,
    );
  }

  async generate(request: GenerateRequest): Promise<GenerateResult> {
    const { onToken, signal, ...wire } = request;
    if (signal?.aborted) throw new GenerationAbortedError('the request was aborted');
    const result = await this.engines.run(async (engine, index) => {
      const since = this.engines.servedVersion(index);
      // A client that goes away stops the remote generation too.
      const r = await engine.options({ signal }).call('generate', wire);
      this.engines.noteVersion(index, r.weightVersion, since);
      return r;
    }, isPeerLoss);
    this.version = Math.max(this.version, result.weightVersion);
    // Tokens cross the wire together: a streaming client gets them at the end, in order.
    if (onToken) {
      result.tokenIds.forEach((tokenId, i) => {
        onToken({ tokenId, logprob: result.logprobs[i] });
      });
    }
    return result;
  }
}
