/**
 * A model directory's tokenizer and chat template, as everything that serves or trains the
 * model encodes and decodes with them: the engine's own OpenAI server (RolloutModel) and a
 * job's driver (ChatCodec) share this, so their token ids can never differ.
 */
import type { ChatMessage, ToolCall, ToolSchema } from '../models/chat-template.js';
import { parseToolCalls } from '../models/chat-template.js';
import type { SamplingDefaults } from '../models/generation-config.js';
import { encodeChatPrompt, type ModelDir, renderChatPrompt } from '../models/model-dir.js';
import { encodeWithin } from './prompt-budget.js';

export class ModelCodec {
  constructor(protected readonly model: ModelDir) {}

  /** Prompt plus generated tokens one sequence may hold. */
  get maxContext(): number {
    return this.model.config.max_position_embeddings;
  }

  /** Token ids the model knows: 0 … vocabSize − 1. */
  get vocabSize(): number {
    return this.model.dims.vocab;
  }

  /** generation_config.json's sampling defaults (what a request that omits them gets). */
  get samplingDefaults(): SamplingDefaults {
    return this.model.samplingDefaults;
  }

  encodeChat(
    messages: ChatMessage[],
    tools?: ToolSchema[],
    templateKwargs?: Record<string, unknown>,
  ): number[] {
    return encodeChatPrompt(this.model, messages, tools, templateKwargs);
  }

  /** `encodeChat` for prompts that may be far too long (prompt-budget.ts). */
  encodeChatWithin(
    messages: ChatMessage[],
    tools: ToolSchema[] | undefined,
    maxTokens: number,
    templateKwargs?: Record<string, unknown>,
  ): Promise<number[]> {
    return encodeWithin(
      renderChatPrompt(this.model, messages, tools, templateKwargs),
      (text) => this.encodeText(text),
      maxTokens,
    );
  }

  encodeText(text: string): number[] {
    return this.model.tokenizer.encode(text, { addSpecialTokens: false });
  }

  tokenBytes(tokenId: number): number[] {
    return this.model.tokenizer.tokenBytes(tokenId);
  }

  decode(tokenIds: number[]): string {
    return this.model.tokenizer.decode(tokenIds, { skipSpecialTokens: true });
  }

  tokenText(tokenId: number): string {
    return this.model.tokenizer.decode([tokenId], { skipSpecialTokens: false });
  }

  parseToolCalls(text: string): { content: string; toolCalls: ToolCall[] } {
    return parseToolCalls(text);
  }
}
