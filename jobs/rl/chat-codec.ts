/**
 * The driver's side of the policy's tokenizer and chat template: prompts for SFT traces, the
 * personal track's OpenAI endpoint, and hint-augmented teacher prompts are encoded here, with
 * the same files the rollout engines load, so every token id matches theirs.
 */

import type { ChatMessage, ToolSchema } from '../../actors/models/chat-template.js';
import { loadModelDir } from '../../actors/models/model-dir.js';
import { ModelCodec } from '../../actors/rollout/model-codec.js';
import { ConfigError } from '../../common/errors.js';

export class ChatCodec extends ModelCodec {
  constructor(modelDir: string) {
    super(loadModelDir(modelDir, { weights: false }));
    if (!this.model.chatTemplate) {
      throw new ConfigError(`${modelDir} has no chat template; an agent job needs a chat model`, {
        fields: { modelDir },
      });
    }
  }

  get eosTokenIds(): number[] {
    return this.model.eosTokenIds;
  }

  /**
   * The token ids a model must generate to produce `reply` after `messages`: the rendered
   * conversation with the reply, minus the rendered prompt, up to and including the first
   * end-of-turn token. Used for SFT on scripted traces.
   */
  encodeReply(messages: ChatMessage[], tools: ToolSchema[] | undefined, reply: ChatMessage): number[] {
    const prompt = this.encodeChat(messages, tools);
    const text = this.model.chatTemplate!.render({ messages: [...messages, reply], tools });
    const full = this.model.tokenizer.encode(text, { addSpecialTokens: false });
    const prefixOk = prompt.every((id, i) => full[i] === id);
    if (!prefixOk || full.length <= prompt.length) {
      throw new ConfigError(
        `${this.model.dir}: the chat template does not render a reply as a continuation of its prompt, so oracle traces cannot be turned into training samples`,
        { fields: { modelDir: this.model.dir } },
      );
    }
    const response = full.slice(prompt.length);
    const end = response.findIndex((id) => this.model.eosTokenIds.includes(id));
    return end < 0 ? response : response.slice(0, end + 1);
  }
}
