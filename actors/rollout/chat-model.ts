/**
 * What the OpenAI-compatible server needs from a model: chat templating, detokenization,
 * tool-call parsing and generation. A rollout engine with its tokenizer implements it; the
 * server never tokenizes model output itself (token ids and logprobs come from the engine).
 */
import type { ChatMessage, ToolCall, ToolSchema } from '../models/chat-template.js';
import type { SamplingDefaults } from '../models/generation-config.js';
import type { GenerateRequest, GenerateResult } from './rollout-engine.js';

export type { ChatMessage, ToolCall, ToolSchema } from '../models/chat-template.js';

export interface ChatModel {
  /** The id served in /v1/models and accepted as `model`. */
  readonly id: string;
  readonly weightVersion: number;
  /**
   * The chat template applied with a generation prompt, as token ids. `templateKwargs` are
   * more template variables (vLLM's `chat_template_kwargs`, e.g. Qwen3's `enable_thinking`).
   */
  encodeChat(
    messages: ChatMessage[],
    tools?: ToolSchema[],
    templateKwargs?: Record<string, unknown>,
  ): number[];
  /** Plain text as token ids, no template (`/v1/completions`, forced tool-call prefixes). */
  encodeText?(text: string): number[];
  /** The raw bytes of one token (a byte-level token may hold part of a character). */
  tokenBytes?(tokenId: number): number[];
  /** The model's generation_config.json defaults for what a request omits. */
  readonly samplingDefaults?: SamplingDefaults;
  /** Tokens a prompt and its generation may hold together (the model's context). */
  readonly maxContext?: number;
  /** Token ids the model knows: 0 … vocabSize − 1 (`logit_bias` is checked against it). */
  readonly vocabSize?: number;
  /**
   * `encodeChat` for prompts that may be far too long: refuses one longer than `maxTokens`
   * (`ContextLengthError`) without tokenizing all of it, and yields to the event loop while it
   * counts (prompt-budget.ts). The server prefers it when the model has it.
   */
  encodeChatWithin?(
    messages: ChatMessage[],
    tools: ToolSchema[] | undefined,
    maxTokens: number,
    templateKwargs?: Record<string, unknown>,
  ): Promise<number[]>;
  decode(tokenIds: number[]): string;
  /** The text of one token, for logprob entries. */
  tokenText(tokenId: number): string;
  /** Splits `<tool_call>` blocks out of generated text. */
  parseToolCalls(text: string): { content: string; toolCalls: ToolCall[] };
  /**
   * Generates; `request.signal` fires when the HTTP client goes away and must stop the
   * generation (an engine behind an actor call passes it on: `engine.options({ signal })`).
   */
  generate(request: GenerateRequest): Promise<GenerateResult>;
  /** Logprob of each of `tokenIds[fromIndex…]` after the ones before it, at `temperature` (prompt scoring). */
  computeLogprobs?(tokenIds: number[], fromIndex: number, temperature?: number): Promise<number[]>;
}
