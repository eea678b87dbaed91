import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../common/package-root.js';
import type { ChatMessage } from './chat-model.js';
import { isGatewayContext, lastRealMessage, SideCallClassifier } from './side-calls.js';

/** Requests real OpenClaw 2026.9 sent to a custom provider (test/fixtures/openclaw), by what they were. */
const dir = join(packageRoot(), 'test', 'fixtures', 'openclaw');
const fixtures = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .map((f) => {
    const d = JSON.parse(readFileSync(join(dir, f), 'utf8')) as {
      kind: string;
      request: { body: { messages: { role: string; content: unknown }[] } };
    };
    const messages: ChatMessage[] = d.request.body.messages.map((m) => ({
      role: m.role,
      content: Array.isArray(m.content)
        ? (m.content as { text?: string }[]).map((p) => p.text ?? '').join('\n')
        : (m.content as string),
    }));
    return { file: f, kind: d.kind, messages };
  });

describe("side calls in OpenClaw's real requests", () => {
  const classifier = new SideCallClassifier();

  it.each(fixtures)('$file ($kind)', ({ kind, messages }) => {
    expect(classifier.classify(messages)).toBe(kind === 'main' ? undefined : kind);
  });

  it('covers every kind OpenClaw sends', () => {
    expect(new Set(fixtures.map((f) => f.kind))).toEqual(
      new Set(['main', 'memory_flush', 'compaction', 'heartbeat', 'cron']),
    );
  });

  it("skips OpenClaw's trailing context block: the user's own message is the next state", () => {
    const first = fixtures.find((f) => f.file === 'main-first-openclaw-defaults.json')!;
    expect(isGatewayContext(first.messages.at(-1)!)).toBe(true);
    expect(lastRealMessage(first.messages)?.content).toMatch(/^\[.*UTC\] hello there/);
  });

  it('takes extra markers from the manifest and refuses a bad one by name', () => {
    const extra = SideCallClassifier.withExtra({ digest: '^Daily digest:' });
    expect(extra.classify([{ role: 'user', content: 'Daily digest: 3 mails' }])).toBe('digest');
    expect(() => SideCallClassifier.withExtra({ bad: '(' })).toThrow(
      /serve\.sideCalls\.bad: not a regular expression/,
    );
  });
});
