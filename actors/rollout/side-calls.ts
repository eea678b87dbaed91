/**
 * Side calls: model requests an agent gateway makes on a session's behalf that are not the
 * agent answering its user (memory flushes before compaction, compaction summaries, heartbeat
 * and cron runs). They share the session's id, so recorded as main turns they would become
 * the previous turn's "next state" and teach the policy from a prompt nobody wrote.
 *
 * A request that says its turn type (`X-Turn-Type` / `turn_type`, as the clawray OpenClaw
 * plugin does) is taken at its word; one that does not is matched against these markers in its
 * last user message (or its system prompt). The defaults are the texts OpenClaw 2026.9 puts
 * there (test/fixtures/openclaw has the requests they come from); a deployment adds its own with
 * `serve.sideCalls` in the manifest.
 *
 * OpenClaw also appends a block of its own context (`<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>`) as
 * a user message after the user's real one: it is nobody's words, so it is skipped both here
 * and when a request's last message becomes the previous turn's next state.
 */
import { ConfigError } from '../../common/errors.js';
import type { ChatMessage } from './chat-model.js';

export interface SideCallPattern {
  /** What kind of side call this is (a metric label): memory_flush, compaction, heartbeat, cron, … */
  kind: string;
  /** Matched against the text of the request's last user message (default) or its system prompt. */
  pattern: RegExp;
  in?: 'user' | 'system';
}

export const DEFAULT_SIDE_CALLS: readonly SideCallPattern[] = [
  { kind: 'memory_flush', pattern: /^\s*Pre-compaction memory flush/i },
  { kind: 'compaction', pattern: /^\s*You are a context summarization assistant/i, in: 'system' },
  { kind: 'compaction', pattern: /^\s*<conversation>[\s\S]*<\/conversation>[\s\S]*\bSummari[sz]e\b/ },
  { kind: 'heartbeat', pattern: /^\s*Follow the heartbeat monitor|\bHEARTBEAT(?:\.md|_OK)\b/ },
  { kind: 'cron', pattern: /^\s*\[cron[:\] ]/ },
];

const GATEWAY_CONTEXT = /^\s*<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>/;

function textOf(message: ChatMessage | undefined): string {
  if (!message) return '';
  if (typeof message.content === 'string') return message.content;
  if (Array.isArray(message.content))
    return message.content.map((p) => (typeof p.text === 'string' ? p.text : '')).join('\n');
  return '';
}

/** The gateway's own context block, appended as a user message: nobody's words. */
export function isGatewayContext(message: ChatMessage): boolean {
  return message.role === 'user' && GATEWAY_CONTEXT.test(textOf(message));
}

/** A request's last message that somebody wrote (trailing gateway context blocks skipped). */
export function lastRealMessage(messages: readonly ChatMessage[]): ChatMessage | undefined {
  for (let i = messages.length - 1; i >= 0; i--) if (!isGatewayContext(messages[i])) return messages[i];
  return undefined;
}

/** Recognises side calls by the markers in a request's last user message. */
export class SideCallClassifier {
  constructor(private readonly patterns: readonly SideCallPattern[] = DEFAULT_SIDE_CALLS) {}

  /** `kind: regex` strings from a manifest, after the defaults. Throws `ConfigError` naming the bad one. */
  static withExtra(extra: Record<string, string> = {}, field = 'serve.sideCalls'): SideCallClassifier {
    const patterns = [...DEFAULT_SIDE_CALLS];
    for (const [kind, source] of Object.entries(extra)) {
      try {
        patterns.push({ kind, pattern: new RegExp(source, 'im') });
      } catch (err) {
        throw new ConfigError(`${field}.${kind}: not a regular expression: ${(err as Error).message}`, {
          fields: { field: `${field}.${kind}` },
          cause: err,
        });
      }
    }
    return new SideCallClassifier(patterns);
  }

  /** The kind of side call `messages` is, or undefined for an ordinary turn. */
  classify(messages: readonly ChatMessage[]): string | undefined {
    let user = '';
    for (let i = messages.length - 1; i >= 0; i--) {
      if (messages[i].role === 'user' && !isGatewayContext(messages[i])) {
        user = textOf(messages[i]);
        break;
      }
    }
    const system = textOf(messages.find((m) => m.role === 'system'));
    return this.patterns.find((p) => {
      const text = p.in === 'system' ? system : user;
      return text !== '' && p.pattern.test(text);
    })?.kind;
  }
}
