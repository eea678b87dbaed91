/**
 * What the OpenAI-compatible server needs from a model: chat templating, detokenization,
 * tool-call parsing and generation. A rollout engine with its tokenizer implements it; the
 * server never tokenizes model output itself (token ids and logprobs come from the engine).
 */
import type { GenerateRequest, GenerateResult } from './rollout-engine.js';

export interface ToolSchema {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  name?: string;
}

export interface ChatModel {
  /** The id served in /v1/models and accepted as `model`. */
  readonly id: string;
  readonly weightVersion: number;
  /** The chat template applied with a generation prompt, as token ids. */
  encodeChat(messages: ChatMessage[], tools?: ToolSchema[]): number[];
  decode(tokenIds: number[]): string;
  /** The text of one token, for logprob entries. */
  tokenText(tokenId: number): string;
  /** Splits `<tool_call>` blocks out of generated text. */
  parseToolCalls(text: string): { content: string; toolCalls: ToolCall[] };
  generate(request: GenerateRequest): Promise<GenerateResult>;
}
