/**
 * Side calls: model requests an agent gateway makes on a session's behalf that are not the
 * agent answering its user (memory flushes before compaction, compaction summaries, heartbeat
 * and cron runs). They share the session's id, so recorded as main turns they would become
 * the previous turn's "next state" and teach the policy from a prompt nobody wrote.
 *
 * A request that says its turn type (`X-Turn-Type` / `turn_type`, as the clawray OpenClaw
 * plugin does) is taken at its word; one that does not is matched against these markers in its
 * last user message. The defaults are the texts current OpenClaw puts there; a deployment adds
 * its own with `serve.sideCalls` in the manifest.
 */
import { ConfigError } from '../../common/errors.js';
import type { ChatMessage } from './chat-model.js';

export interface SideCallPattern {
  /** What kind of side call this is (a metric label): memory_flush, compaction, heartbeat, cron, … */
  kind: string;
  /** Matched against the text of the request's last user message. */
  pattern: RegExp;
}

export const DEFAULT_SIDE_CALLS: readonly SideCallPattern[] = [
  { kind: 'memory_flush', pattern: /Pre-compaction memory flush/i },
  { kind: 'compaction', pattern: /<conversation-to-summarize>|summarize the conversation (?:so far|above)/i },
  { kind: 'heartbeat', pattern: /\bHEARTBEAT(?:\.md|_OK)\b/ },
  { kind: 'cron', pattern: /^\s*\[cron[:\] ]/im },
];

function textOf(message: ChatMessage | undefined): string {
  if (!message || typeof message.content !== 'string') return '';
  return message.content;
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
    let last: ChatMessage | undefined;
    for (let i = messages.length - 1; i >= 0; i--) {
      if (messages[i].role === 'user') {
        last = messages[i];
        break;
      }
    }
    const text = textOf(last);
    if (!text) return undefined;
    return this.patterns.find((p) => p.pattern.test(text))?.kind;
  }
}
