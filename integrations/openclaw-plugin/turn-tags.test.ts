/**
 * The plugin's decisions without OpenClaw: request ids as OpenClaw 2026.9 forms them, triggers
 * to turn types, the bounded run table. test/openclaw-plugin.test.ts proves the same on the
 * real OpenClaw.
 */
import { describe, expect, it } from 'vitest';
import { parseRequestId, RunTriggers, tagsFor, turnTypeOfTrigger } from './turn-tags.js';

describe('turn tags', () => {
  it('maps the run trigger to a turn type: only a user turn is main', () => {
    expect(turnTypeOfTrigger('user')).toBe('main');
    for (const trigger of ['memory', 'heartbeat', 'cron', 'manual', 'overflow', 'something-new']) {
      expect(turnTypeOfTrigger(trigger)).toBe('side');
    }
    expect(turnTypeOfTrigger(undefined)).toBeUndefined();
    expect(turnTypeOfTrigger('')).toBeUndefined();
  });

  it('reads run ids and compaction sessions from request ids', () => {
    expect(parseRequestId('eb977d62-0de6-4972-926b-ff4058d0d902:model:1')).toEqual({
      runId: 'eb977d62-0de6-4972-926b-ff4058d0d902',
    });
    expect(parseRequestId('s1:compaction:cmp-mwv2onke-Dzujmw:model:1')).toEqual({ compactionOf: 's1' });
    // A session id may itself contain colons.
    expect(parseRequestId('a:b:compaction:cmp-1:model:2')).toEqual({ compactionOf: 'a:b' });
    expect(parseRequestId(undefined)).toEqual({});
    expect(parseRequestId('plain')).toEqual({ runId: 'plain' });
  });

  it('tags a request from its options and the trigger its run noted', () => {
    const runs = new RunTriggers();
    runs.note('run-user', 'user');
    runs.note('run-flush', 'memory');
    expect(tagsFor({ sessionId: 's1', requestId: 'run-user:model:1' }, runs)).toEqual({
      'X-Session-Id': 's1',
      'X-Turn-Type': 'main',
    });
    // A memory flush runs under an internal session, but the request names the user's.
    expect(tagsFor({ sessionId: 's1', requestId: 'run-flush:model:1' }, runs)).toEqual({
      'X-Session-Id': 's1',
      'X-Turn-Type': 'side',
    });
    // Compaction summaries have no session id in their options and no run hooks.
    expect(tagsFor({ requestId: 's1:compaction:cmp-1:model:1' }, runs)).toEqual({
      'X-Session-Id': 's1',
      'X-Turn-Type': 'side',
    });
    // Unknown trigger (hooks not allowed): the session only; the server classifies the text.
    expect(tagsFor({ sessionId: 's2', requestId: 'run-other:model:1' }, runs)).toEqual({
      'X-Session-Id': 's2',
    });
    expect(tagsFor({ sessionId: 's2' }, runs, { utility: true })).toEqual({
      'X-Session-Id': 's2',
      'X-Turn-Type': 'side',
    });
    expect(tagsFor({}, runs)).toEqual({});
  });

  it('forgets runs at their end and never holds more than its bound', () => {
    const runs = new RunTriggers(3);
    for (const id of ['a', 'b', 'c', 'd']) runs.note(id, 'user');
    expect(runs.size).toBe(3);
    expect(runs.get('a')).toBeUndefined();
    expect(runs.get('d')).toBe('user');
    runs.end('d');
    expect(runs.get('d')).toBeUndefined();
    runs.note('x', undefined);
    runs.note(undefined, 'user');
    expect(runs.size).toBe(2);
  });
});
