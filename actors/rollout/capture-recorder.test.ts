import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import {
  type CaptureContext,
  JsonlTurnSink,
  MemoryTurnSink,
  parseCaptureContext,
  sessionFromPromptCacheKey,
  type TurnOutcome,
  type TurnRecord,
  TurnRecorder,
} from './capture-recorder.js';
import type { ChatMessage } from './chat-model.js';
import { SideCallClassifier } from './side-calls.js';

const main = (sessionId: string, extra: Partial<CaptureContext> = {}): CaptureContext => ({
  sessionId,
  turnType: 'main',
  turnTypeDefaulted: false,
  done: false,
  ...extra,
});

function outcome(n: number): TurnOutcome {
  return {
    requestId: `chatcmpl-${n}`,
    model: 'm',
    weightVersion: 3,
    promptTokenIds: [1, 2, n],
    tokenIds: [10 + n, 0],
    logprobs: [-0.5, -0.1],
    text: `answer ${n}`,
    toolCalls: [],
    finishReason: 'stop',
    sampling: { temperature: 1, top_p: null, top_k: null, max_tokens: null, seed: null },
  };
}

const user = (content: string): ChatMessage[] => [{ role: 'user', content }];

describe('parseCaptureContext', () => {
  it('reads the headers, falling back to the body keys', () => {
    expect(
      parseCaptureContext({ 'x-session-id': ' s1 ', 'x-turn-type': 'SIDE', 'x-session-done': 'yes' }, {}),
    ).toEqual({
      sessionId: 's1',
      sessionSource: 'header',
      turnType: 'side',
      turnTypeDefaulted: false,
      done: true,
    });
    expect(parseCaptureContext({}, { session_id: 's2', turn_type: 'main', session_done: 1 })).toEqual({
      sessionId: 's2',
      sessionSource: 'body',
      turnType: 'main',
      turnTypeDefaulted: false,
      done: true,
    });
    expect(parseCaptureContext({ 'x-session-id': 'h' }, { session_id: 'b', session_done: 'off' })).toEqual({
      sessionId: 'h',
      sessionSource: 'header',
      turnType: 'main',
      turnTypeDefaulted: true,
      done: false,
    });
    expect(parseCaptureContext({}, {})).toEqual({ turnType: 'main', turnTypeDefaulted: true, done: false });
  });

  it("takes OpenClaw's prompt_cache_key last, and a session key before everything", () => {
    expect(parseCaptureContext({}, { prompt_cache_key: 'agent:main:abc-123:7' })).toMatchObject({
      sessionId: 'agent:main:abc-123',
      sessionSource: 'prompt_cache_key',
    });
    expect(sessionFromPromptCacheKey('plain-key')).toBe('plain-key');
    expect(parseCaptureContext({}, { session_id: 'b', prompt_cache_key: 'c:1' }).sessionId).toBe('b');
    expect(parseCaptureContext({}, { prompt_cache_key: 'c:1' }, { keySession: 'k' })).toMatchObject({
      sessionId: 'k',
      sessionSource: 'api_key',
    });
    expect(parseCaptureContext({ 'x-session-id': 'k' }, {}, { keySession: 'k' }).sessionId).toBe('k');
    // A key's holder may not file turns under somebody else's session.
    expect(() => parseCaptureContext({ 'x-session-id': 'other' }, {}, { keySession: 'k' })).toThrow(
      /X-Session-Id 'other' is not the session of this request's API key/,
    );
    expect(() => parseCaptureContext({}, { session_id: 'other' }, { keySession: 'k' })).toThrow(/session_id/);
  });

  it('recognises side calls by their markers only when no turn type was sent', () => {
    const sideCalls = new SideCallClassifier();
    const flush: ChatMessage[] = [
      { role: 'system', content: 'You are a personal assistant. Reply HEARTBEAT_OK to heartbeat polls.' },
      { role: 'user', content: 'Pre-compaction memory flush. Store durable memories now.' },
    ];
    expect(parseCaptureContext({ 'x-session-id': 's' }, {}, { messages: flush, sideCalls })).toMatchObject({
      turnType: 'side',
      turnTypeDefaulted: false,
      sideKind: 'memory_flush',
    });
    expect(
      parseCaptureContext({ 'x-session-id': 's', 'x-turn-type': 'main' }, {}, { messages: flush, sideCalls }),
    ).toMatchObject({ turnType: 'main' });
    // The system prompt's mention of heartbeats does not make an ordinary turn a side call.
    const ordinary: ChatMessage[] = [flush[0], { role: 'user', content: 'What is on my calendar?' }];
    expect(parseCaptureContext({ 'x-session-id': 's' }, {}, { messages: ordinary, sideCalls })).toMatchObject(
      {
        turnType: 'main',
        turnTypeDefaulted: true,
      },
    );
  });

  it('refuses malformed values, naming the header or key', () => {
    expect(() => parseCaptureContext({ 'x-turn-type': 'primary' })).toThrow(ConfigError);
    expect(() => parseCaptureContext({}, { turn_type: 'x' })).toThrow(/turn_type/);
    expect(() => parseCaptureContext({ 'x-session-done': 'maybe' })).toThrow(/X-Session-Done/);
    expect(() => parseCaptureContext({ 'x-session-id': 'x'.repeat(600) })).toThrow(/longer/);
  });
});

describe('TurnRecorder', () => {
  it('chains next_state in arrival order even when the next turn arrives before the previous one finishes', async () => {
    const sink = new MemoryTurnSink();
    const rec = new TurnRecorder({ sink, sweepMs: 0 });
    const a = rec.begin(main('s'), { messages: user('q0') });
    const b = rec.begin(main('s'), { messages: user('q1') }); // arrives while turn 0 still generates
    b.complete(outcome(1));
    expect(sink.records).toHaveLength(0);
    a.complete(outcome(0));
    await rec.flush();
    expect(sink.records.map((r) => [r.turn, r.next_state?.content])).toEqual([[0, 'q1']]);
    rec.endSession('s');
    await rec.flush();
    expect(sink.records.map((r) => [r.turn, r.next_state, r.session_done])).toEqual([
      [0, { role: 'user', content: 'q1' }, false],
      [1, null, true],
    ]);
    await rec.close();
  });

  it('records nothing for aborted turns and side turns, and writes in-flight turns of a done session at completion', async () => {
    const sink = new MemoryTurnSink();
    const rec = new TurnRecorder({ sink, sweepMs: 0 });
    const t0 = rec.begin(main('s'), { messages: user('q0') });
    t0.complete(outcome(0));
    const side = rec.begin(main('s', { turnType: 'side' }), { messages: user('flush memory') });
    expect(side.recorded).toBe(false);
    side.complete(outcome(99));
    const t1 = rec.begin(main('s'), { messages: user('q1') });
    t1.abort();
    const t2 = rec.begin(main('s', { done: true }), { messages: user('q1 again') });
    expect(rec.stats().sessions).toBe(0); // done: a new request with this id starts over
    t2.complete(outcome(2));
    await rec.flush();
    expect(sink.records.map((r) => [r.turn, r.next_state?.content ?? null, r.end])).toEqual([
      [0, 'q1', 'next_turn'],
      [2, null, 'session_done'],
    ]);
    expect(rec.stats()).toMatchObject({ records: 2, mainTurns: 3, sideTurns: 1 });
    await rec.close();
  });

  it("hands a turn's message to the previous turn only once it is answered (commit)", async () => {
    const sink = new MemoryTurnSink();
    const rec = new TurnRecorder({ sink, sweepMs: 0 });
    rec.begin(main('s'), { messages: user('q0') }).complete(outcome(0));
    const t1 = rec.begin(main('s'), { messages: user('q1') });
    await rec.flush();
    expect(sink.records).toHaveLength(0);
    t1.commit();
    await rec.flush();
    expect(sink.records.map((r) => [r.turn, r.next_state?.content])).toEqual([[0, 'q1']]);
    await rec.close();
  });

  it('a withdrawn turn leaves no trace: no next state, no turn number, no count', async () => {
    const sink = new MemoryTurnSink();
    const rec = new TurnRecorder({ sink, sweepMs: 0 });
    rec.begin(main('s'), { messages: user('q0') }).complete(outcome(0));
    rec.begin(main('s'), { messages: user('refused by the engine') }).withdraw();
    expect(rec.sessionCounts('s')).toEqual({ mainTurns: 1, sideTurns: 0 });
    const t1 = rec.begin(main('s', { done: true }), { messages: user('q1') });
    t1.complete(outcome(1));
    await rec.flush();
    expect(sink.records.map((r) => [r.turn, r.next_state?.content ?? null, r.end])).toEqual([
      [0, 'q1', 'next_turn'],
      [1, null, 'session_done'],
    ]);
    expect(JSON.stringify(sink.records)).not.toContain('refused');
    expect(rec.stats()).toMatchObject({ mainTurns: 2, records: 2 });
    // After its answer began, withdrawing is aborting: the message stays the next state.
    rec.begin(main('t'), { messages: user('a0') }).complete(outcome(2));
    const late = rec.begin(main('t'), { messages: user('a1') });
    late.commit();
    late.withdraw();
    await rec.flush();
    expect(sink.records.at(-1)).toMatchObject({ session_id: 't', turn: 0, next_state: { content: 'a1' } });
    expect(rec.sessionCounts('t').mainTurns).toBe(2);
    await rec.close();
  });

  it('gives the message of a later turn to the turn before a withdrawn one', async () => {
    const sink = new MemoryTurnSink();
    const rec = new TurnRecorder({ sink, sweepMs: 0 });
    rec.begin(main('s'), { messages: user('q0') }).complete(outcome(0));
    const refused = rec.begin(main('s'), { messages: user('refused') });
    // A later turn answered before the refused one was turned away…
    const answered = rec.begin(main('s'), { messages: user('q2') });
    answered.commit();
    // … and one not answered yet.
    const waiting = rec.begin(main('u'), { messages: user('u0') });
    waiting.complete(outcome(9));
    const u1 = rec.begin(main('u'), { messages: user('refused too') });
    const u2 = rec.begin(main('u'), { messages: user('u2') });
    refused.withdraw();
    u1.withdraw();
    await rec.flush();
    expect(sink.records.map((r) => [r.session_id, r.turn, r.next_state?.content])).toEqual([['s', 0, 'q2']]);
    u2.commit();
    await rec.flush();
    expect(sink.records.map((r) => [r.session_id, r.turn, r.next_state?.content])).toEqual([
      ['s', 0, 'q2'],
      ['u', 0, 'u2'],
    ]);
    await rec.close();
  });

  it("a withdrawn request's X-Session-Done does not end the session; an end meanwhile waits for the answer", async () => {
    const sink = new MemoryTurnSink();
    const rec = new TurnRecorder({ sink, sweepMs: 0 });
    rec.begin(main('s'), { messages: user('q0') }).complete(outcome(0));
    rec.begin(main('s', { done: true }), { messages: user('refused bye') }).withdraw();
    expect(rec.stats().sessions).toBe(1);
    await rec.flush();
    expect(sink.records).toHaveLength(0);
    // The session ends while its next turn is still unanswered: turn 0 waits for it.
    const t1 = rec.begin(main('s'), { messages: user('q1') });
    rec.endSession('s');
    await rec.flush();
    expect(sink.records).toHaveLength(0);
    t1.withdraw();
    await rec.flush();
    expect(sink.records.map((r) => [r.turn, r.next_state, r.end])).toEqual([[0, null, 'session_done']]);
    // Answered instead, its message is the next state.
    rec.begin(main('t'), { messages: user('a0') }).complete(outcome(1));
    const t = rec.begin(main('t'), { messages: user('a1') });
    rec.endSession('t');
    t.commit();
    await rec.flush();
    expect(sink.records.at(-1)).toMatchObject({ session_id: 't', turn: 0, end: 'next_turn' });
    await rec.close();
  });

  it('evicts idle sessions, writing their pending turn with next_state null', async () => {
    let now = 1_000_000;
    const sink = new MemoryTurnSink();
    const rec = new TurnRecorder({ sink, idleMs: 60_000, sweepMs: 0, now: () => now });
    rec.begin(main('old'), { messages: user('a') }).complete(outcome(0));
    const busy = rec.begin(main('busy'), { messages: user('b') }); // still generating
    now += 30_000;
    rec.begin(main('fresh'), { messages: user('c') }).complete(outcome(1));
    now += 40_000;
    expect(rec.sweep()).toBe(1);
    await rec.flush();
    expect(sink.records.map((r) => [r.session_id, r.end, r.next_state])).toEqual([
      ['old', 'idle_eviction', null],
    ]);
    expect(rec.stats()).toMatchObject({ sessions: 2, evictedSessions: 1 });
    busy.complete(outcome(2));
    now += 61_000;
    expect(rec.sweep()).toBe(2);
    await rec.close();
    expect(sink.records).toHaveLength(3);
  });

  it('bounds the number of sessions', async () => {
    const sink = new MemoryTurnSink();
    const rec = new TurnRecorder({ sink, maxSessions: 2, sweepMs: 0 });
    for (const id of ['a', 'b', 'c']) rec.begin(main(id), { messages: user(id) }).complete(outcome(0));
    await rec.flush();
    expect(rec.stats().sessions).toBe(2);
    expect(sink.records.map((r) => r.session_id)).toEqual(['a']);
    await rec.close();
    expect(sink.records.map((r) => [r.session_id, r.end])).toEqual([
      ['a', 'idle_eviction'],
      ['b', 'shutdown'],
      ['c', 'shutdown'],
    ]);
  });

  it('counts missing session ids and defaulted turn types', () => {
    const rec = new TurnRecorder({ sink: new MemoryTurnSink(), sweepMs: 0 });
    expect(
      rec.begin({ turnType: 'main', turnTypeDefaulted: true, done: false }, { messages: user('x') }).recorded,
    ).toBe(false);
    rec.begin(main('s', { turnTypeDefaulted: true }), { messages: user('y') });
    rec.begin(main('s', { turnTypeDefaulted: true }), { messages: user('z') });
    expect(rec.stats()).toMatchObject({ missingSessionId: 1, defaultedTurnType: 2 });
  });

  it('keeps going when the sink fails', async () => {
    let fail = true;
    const written: TurnRecord[] = [];
    const rec = new TurnRecorder({
      sink: {
        async write(r) {
          if (fail) throw new Error('disk full');
          written.push(r);
        },
      },
      sweepMs: 0,
    });
    rec.begin(main('s', { done: true }), { messages: user('a') }).complete(outcome(0));
    await rec.flush();
    fail = false;
    rec.begin(main('t', { done: true }), { messages: user('b') }).complete(outcome(1));
    await rec.flush();
    expect(rec.stats().writeErrors).toBe(1);
    expect(written.map((r) => r.session_id)).toEqual(['t']);
    await rec.close();
  });

  it('appends JSON lines to a file, creating its directory', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clawray-jsonl-'));
    try {
      const file = join(dir, 'a', 'b', 'turns.jsonl');
      const rec = new TurnRecorder({ sink: new JsonlTurnSink(file), sweepMs: 0 });
      rec.begin(main('s'), { messages: user('q0') }).complete(outcome(0));
      rec.begin(main('s', { done: true }), { messages: user('q1') }).complete(outcome(1));
      await rec.close();
      const lines = (await readFile(file, 'utf8')).trim().split('\n');
      expect(lines).toHaveLength(2);
      const first = JSON.parse(lines[0]) as TurnRecord;
      expect(first).toMatchObject({
        session_id: 's',
        turn: 0,
        request_id: 'chatcmpl-0',
        prompt_token_ids: [1, 2, 0],
        response_token_ids: [10, 0],
        response_logprobs: [-0.5, -0.1],
        next_state: { role: 'user', content: 'q1' },
        weight_version: 3,
      });
      expect(Date.parse(first.started_at)).not.toBeNaN();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
