/**
 * Text and tokens for the OpenAI-compatible routes: incremental detokenization, the gate that
 * holds back text that is, or may yet become, a stop string or a tool call, and logprob entries.
 */
import type { ChatModel } from './chat-model.js';
import type { Sampled } from './sampler.js';

/**
 * Incremental detokenization (as in Hugging Face TGI): decodes a short window so the text of
 * each new token is right even when tokens split characters; emits nothing while the window
 * ends inside a multi-byte character.
 */
export class IncrementalText {
  private readonly ids: number[] = [];
  private prefix = 0;
  private read = 0;

  constructor(private readonly decode: (ids: number[]) => string) {}

  push(id: number): string {
    this.ids.push(id);
    const prefixText = this.prefix < this.read ? this.decode(this.ids.slice(this.prefix, this.read)) : '';
    const full = this.decode(this.ids.slice(this.prefix));
    if (full.length > prefixText.length && !full.endsWith('\uFFFD')) {
      const delta = full.slice(prefixText.length);
      this.prefix = this.read;
      this.read = this.ids.length;
      return delta;
    }
    return '';
  }
}

/**
 * Decides how much of the streamed text is safe to send: never a stop string or what follows
 * it, never a tool-call block, and not a tail that may yet become one of those.
 */
export class ContentGate {
  private text = '';
  private sentLength = 0;
  private halted = false;
  private readonly maxLength: number;

  constructor(private readonly barriers: string[]) {
    this.maxLength = Math.max(0, ...barriers.map((b) => b.length));
  }

  get sent(): string {
    return this.text.slice(0, this.sentLength);
  }

  push(delta: string): string {
    if (this.halted || !delta) return '';
    this.text += delta;
    let limit = this.text.length;
    const from = Math.max(0, this.sentLength - this.maxLength);
    for (const b of this.barriers) {
      const at = this.text.indexOf(b, from);
      if (at >= 0 && at < limit) {
        limit = at;
        this.halted = true;
      }
    }
    if (!this.halted) {
      for (const b of this.barriers) {
        for (let k = Math.min(b.length - 1, this.text.length); k > 0; k--) {
          if (this.text.endsWith(b.slice(0, k))) {
            limit = Math.min(limit, this.text.length - k);
            break;
          }
        }
      }
    }
    if (limit <= this.sentLength) return '';
    const out = this.text.slice(this.sentLength, limit);
    this.sentLength = limit;
    return out;
  }
}

export function cutAtStop(text: string, stops: string[]): { text: string; hit: boolean } {
  let cut = -1;
  for (const s of stops) {
    const at = text.indexOf(s);
    if (at >= 0 && (cut < 0 || at < cut)) cut = at;
  }
  return cut >= 0 ? { text: text.slice(0, cut), hit: true } : { text, hit: false };
}

export interface LogprobEntry {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: { token: string; logprob: number; bytes: number[] }[];
}

export function finiteLogprob(x: number): number {
  return Number.isFinite(x) ? x : -9999;
}

export function tokenInfo(
  model: ChatModel,
  tokenId: number,
  logprob: number,
): { token: string; logprob: number; bytes: number[] } {
  const token = model.tokenText(tokenId);
  // A byte-level token may hold part of a character: its own bytes, not its text's U+FFFD.
  const bytes = model.tokenBytes?.(tokenId) ?? [...Buffer.from(token, 'utf8')];
  return { token, logprob: finiteLogprob(logprob), bytes };
}

export function logprobEntry(
  model: ChatModel,
  tokenId: number,
  logprob: number,
  top?: Sampled[],
): LogprobEntry {
  return {
    ...tokenInfo(model, tokenId, logprob),
    top_logprobs: (top ?? []).map((t) => tokenInfo(model, t.tokenId, t.logprob)),
  };
}
