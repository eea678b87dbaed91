import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initRandomModel } from '../../models/model-init.js';
import { MemoryTurnSink, TurnRecorder } from '../../rollout/capture-recorder.js';
import { createOpenAiServer } from '../../rollout/openai-server.js';
import { RolloutModel } from '../../rollout/rollout-model.js';
import { evaluatePreference } from './evaluate.js';
import { PREFERENCE_KINDS } from './preferences.js';
import { SimulatedUser } from './simulated-user.js';
import {
  type AgentFn,
  ChatEndpointError,
  openAiAgent,
  requestSeed,
  runHttpSession,
  sessionHeaders,
} from './user-session.js';

describe('sessions through the OpenAI-compatible server of a random tiny model', () => {
  const root = mkdtempSync(join(tmpdir(), 'clawray-personal-'));
  const sink = new MemoryTurnSink();
  const recorder = new TurnRecorder({ sink, sweepMs: 0 });
  const token = 'personal-test-token';
  let model: RolloutModel;
  let app: FastifyInstance;
  let baseUrl = '';

  beforeAll(async () => {
    const dir = join(root, 'tiny');
    initRandomModel({ preset: 'tiny', outDir: dir, seed: 7 });
    model = await RolloutModel.load({ modelDir: dir });
    app = createOpenAiServer({ model, recorder, token });
    await app.listen({ host: '127.0.0.1', port: 0 });
    baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1`;
  });
  afterAll(async () => {
    await app?.close();
    await recorder.close();
    await model?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('records every turn under the session with the user’s reaction as next_state, done on the last', async () => {
    const user = new SimulatedUser({ preference: 'signoff', seed: 3, turnsPerSession: 3 });
    const session = user.openSession();
    const result = await runHttpSession(session, {
      baseUrl,
      model: model.id,
      apiKey: token,
      temperature: 1,
      maxTokens: 32,
      seed: 1,
    });
    await recorder.flush();

    const records = sink.records.filter((r) => r.session_id === session.id);
    expect(records.map((r) => r.turn)).toEqual([0, 1, 2]);
    const userMessages = result.messages.filter((m) => m.role === 'user').map((m) => m.content);
    for (const [k, record] of records.entries()) {
      expect(record.turn_type_defaulted).toBe(false);
      expect(record.response_text).toBe(result.turns[k].reply);
      // What the agent saw: the conversation up to the k-th user message.
      expect(record.messages.at(-1)).toEqual({ role: 'user', content: userMessages[k] });
      if (k < records.length - 1) {
        expect(record.next_state).toEqual({ role: 'user', content: result.turns[k].reaction });
        expect(record.session_done).toBe(false);
        expect(record.end).toBe('next_turn');
      } else {
        // The last request carried X-Session-Done: the user's last reaction never reached the server.
        expect(record.next_state).toBeNull();
        expect(record.session_done).toBe(true);
        expect(record.end).toBe('session_done');
      }
    }
    expect(recorder.stats().sessions).toBe(0);
  });

  it('sends side turns when asked to, which the capture serves but does not record', async () => {
    const before = sink.records.length;
    const user = new SimulatedUser({ preference: 'brackets', turnsPerSession: 2, sessionIdPrefix: 'side' });
    const result = await runHttpSession(user.openSession(), {
      baseUrl,
      model: model.id,
      apiKey: token,
      turnType: 'side',
      maxTokens: 8,
    });
    await recorder.flush();
    expect(result.replies).toBe(2);
    expect(sink.records.length).toBe(before);
  });

  it('fails with the server’s message on a refused request', async () => {
    const agent = openAiAgent({ baseUrl, model: model.id, apiKey: 'wrong' });
    const err = await agent([{ role: 'user', content: 'hi' }], { sessionId: 's', turn: 0, last: true }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ChatEndpointError);
    expect((err as ChatEndpointError).status).toBe(401);
    expect((err as Error).message).toMatch(/API key/);
  });

  it('measures the random tiny model’s preference score: at most 0.2 for every kind', async () => {
    const agent = openAiAgent({
      baseUrl,
      model: model.id,
      apiKey: token,
      turnType: 'side',
      temperature: 1,
      maxTokens: 48,
      seed: 11,
    });
    const scores: Record<string, number> = {};
    for (const kind of PREFERENCE_KINDS) {
      const report = await evaluatePreference(agent, {
        user: new SimulatedUser({ preference: kind, seed: 1 }),
        sessions: 16,
        concurrency: 8,
      });
      expect(report.replies).toBe(64);
      scores[report.preference] = report.score;
    }
    console.log('preference score of the random tiny model (16 held-out sessions x 4 replies):', scores);
    for (const score of Object.values(scores)) expect(score).toBeLessThanOrEqual(0.2);
  });
});

describe('openAiAgent without a server', () => {
  it('sets the gateway’s session headers and retries 503 (paused for a weight update)', async () => {
    const calls: { url: string; headers: Record<string, string>; body: Record<string, unknown> }[] = [];
    let refusals = 1;
    const fakeFetch = (async (url: string, init: RequestInit) => {
      calls.push({
        url,
        headers: init.headers as Record<string, string>,
        body: JSON.parse(init.body as string),
      });
      if (refusals-- > 0) {
        return new Response(JSON.stringify({ error: { message: 'submission paused for weight update' } }), {
          status: 503,
        });
      }
      return new Response(
        JSON.stringify({ choices: [{ message: { role: 'assistant', content: 'hello' } }] }),
      );
    }) as unknown as typeof fetch;
    const agent: AgentFn = openAiAgent({
      baseUrl: 'http://x:1',
      model: 'm',
      apiKey: 'k',
      maxTokens: 9,
      seed: 5,
      fetch: fakeFetch,
    });
    const reply = await agent([{ role: 'user', content: 'hi' }], { sessionId: 'abc', turn: 2, last: true });
    expect(reply).toBe('hello');
    expect(calls).toHaveLength(2);
    expect(calls[1].url).toBe('http://x:1/v1/chat/completions');
    expect(calls[1].headers).toMatchObject({
      'X-Session-Id': 'abc',
      'X-Turn-Type': 'main',
      'X-Session-Done': 'true',
      authorization: 'Bearer k',
    });
    expect(calls[1].body).toMatchObject({ model: 'm', max_tokens: 9, stream: false });
    const seed = requestSeed(5, { sessionId: 'abc', turn: 2, last: true });
    expect(calls[1].body.seed).toBe(seed);
    expect(requestSeed(5, { sessionId: 'abc', turn: 3, last: false })).not.toBe(seed);
    expect(sessionHeaders({ sessionId: 'abc', turn: 0, last: false })).toEqual({
      'X-Session-Id': 'abc',
      'X-Turn-Type': 'main',
    });
  });
});
