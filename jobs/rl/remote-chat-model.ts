/**
 * A `ChatModel` whose generation runs on the job's rollout engine pool (round robin over the
 * healthy engines; a request whose engine died is generated again on another) while
 * templating and detokenization happen here with the same files: what the personal track's
 * OpenAI-compatible endpoint serves, so live (or simulated) sessions talk to the policy being
 * trained.
 *
 * A request with `onToken` (a streaming client) is a streamed actor call
 * (`RolloutEngine.generateStream`): tokens reach `onToken` as the engine samples them, and the
 * request's signal (the HTTP client going away) cancels the call and with it the generation.
 * An engine that dies before any token was handed on is replaced by another, as for a plain
 * call; once tokens went out, the request fails (the client's stream ends with an error event)
 * rather than start over with different tokens.
 */
import type { ChatMessage, ChatModel, ToolCall, ToolSchema } from '../../actors/rollout/chat-model.js';
import type { GenerateRequest, GenerateResult } from '../../actors/rollout/rollout-engine.js';
import { GenerationAbortedError } from '../../actors/rollout/rollout-engine.js';
import type { RolloutEngine } from '../../actors/rollout/rollout-engine-actor.js';
import type { Sampled } from '../../actors/rollout/sampler.js';
import type { ActorHandle } from '../../runtime/index.js';
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

  get vocabSize(): number {
    return this.codec.vocabSize;
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
    let handedOn = 0;
    const result = await this.engines.run(
      async (engine, index) => {
        const since = this.engines.servedVersion(index);
        // A client that goes away stops the remote generation too.
        const calls = engine.options({ signal });
        let r: GenerateResult;
        if (!onToken) {
          r = await calls.call('generate', wire);
        } else {
          try {
            r = await streamTokens(calls.stream('generateStream', wire), (token) => {
              handedOn++;
              onToken(token);
            });
          } catch (err) {
            // Not tried again (see below), but the engine is gone all the same.
            if (handedOn > 0 && isPeerLoss(err)) this.engines.markDown(index, (err as Error).message);
            throw err;
          }
        }
        this.engines.noteVersion(index, r.weightVersion, since);
        return r;
      },
      // Tokens already handed on cannot be taken back: only a request that sent none starts over.
      (err) => handedOn === 0 && isPeerLoss(err),
    );
    this.version = Math.max(this.version, result.weightVersion);
    return result;
  }
}

/** Hands each streamed token to `onToken` as its batch arrives; resolves with the result. */
async function streamTokens(
  stream: AsyncIterator<Sampled[], GenerateResult>,
  onToken: (token: Sampled) => void,
): Promise<GenerateResult> {
  try {
    for (;;) {
      const step = await stream.next();
      if (step.done) return step.value;
      for (const token of step.value) onToken(token);
    }
  } catch (err) {
    // A call still running (onToken threw) is cancelled; an ended one is left as it is.
    await stream.return?.();
    throw err;
  }
}
