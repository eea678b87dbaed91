/**
 * Issue 38's HTTP items on a real tiny model behind the OpenAI-compatible server, as `clawray
 * serve --record` runs it: a session key sees only its own session in /rl/stats; a request the
 * engine refuses leaves no trace in the capture (no next state, no turn number); a client that
 * resets its stream mid-answer is a 499 and is not recorded; bodies nested past the limit are a
 * 400 naming it; template errors never carry the model directory's path; the /rl/* bodies are
 * checked by schema, unknown fields refused by name.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { initRandomModel } from '../models/model-init.js';
import { MemoryTurnSink, TurnRecorder } from './capture-recorder.js';
import { MAX_JSON_DEPTH } from './json-body.js';
import { createOpenAiServer, type OpenAiServerOptions } from './openai-server.js';
import { RolloutModel } from './rollout-model.js';
import { SessionKeys } from './session-keys.js';
import { TurnFeedback } from './turn-feedback.js';

const TOKEN = 'server-key';

interface Served {
  app: FastifyInstance;
  url: string;
  sink: MemoryTurnSink;
  recorder: TurnRecorder;
  registry: Registry;
}

/** `depth` nested objects around 1, as JSON text. */
const nested = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

describe('the OpenAI-compatible server: isolation and what gets recorded', () => {
  const root = mkdtempSync(join(tmpdir(), 'clawray-isolation-'));
  const modelDir = join(root, 'tiny');
  let model: RolloutModel;
  let running: Served | undefined;

  beforeAll(async () => {
    initRandomModel({ preset: 'tiny', outDir: modelDir, seed: 5 });
    // A template that refuses a conversation opening with a tool result, in its own words.
    const file = join(modelDir, 'tokenizer_config.json');
    const config = JSON.parse(readFileSync(file, 'utf8')) as { chat_template: string };
    config.chat_template = `{%- if messages[0].role == 'tool' %}{{ raise_exception('a conversation cannot open with a tool result') }}{%- endif %}${config.chat_template}`;
    writeFileSync(file, JSON.stringify(config));
    model = await RolloutModel.load({ modelDir, maxBatchSize: 4 });
  });
  afterEach(async () => {
    await running?.app.close();
    await running?.recorder.close();
    running = undefined;
  });
  afterAll(async () => {
    await model?.close();
    rmSync(root, { recursive: true, force: true });
  });

  async function serve(o: Partial<OpenAiServerOptions> = {}): Promise<Served> {
    const sink = new MemoryTurnSink();
    const recorder = new TurnRecorder({ sink, sweepMs: 0 });
    const registry = new Registry();
    const app = createOpenAiServer({
      model,
      token: TOKEN,
      recorder,
      registry,
      sessionKeys: new SessionKeys(),
      feedback: new TurnFeedback(),
      ...o,
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    running = {
      app,
      url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
      sink,
      recorder,
      registry,
    };
    return running;
  }

  const post = (
    url: string,
    path: string,
    body: unknown,
    key = TOKEN,
    headers: Record<string, string> = {},
  ) =>
    fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  const chat = (content: string, extra: Record<string, unknown> = {}) => ({
    model: 'tiny',
    messages: [{ role: 'user', content }],
    max_tokens: 4,
    ...extra,
  });

  it('answers /rl/stats for a session key with its own session only, and for the server key with all', async () => {
    const s = await serve();
    const keys: Record<string, string> = {};
    for (const id of ['alice', 'bob']) {
      const issued = (await (await post(s.url, '/rl/start_session', { session_id: id })).json()) as {
        api_key: string;
      };
      keys[id] = issued.api_key;
      expect((await post(s.url, '/v1/chat/completions', chat(`hi from ${id}`), issued.api_key)).status).toBe(
        200,
      );
    }
    await post(s.url, '/v1/chat/completions', chat('hi again'), keys.bob);
    const statsWith = async (key: string) =>
      (await (await fetch(`${s.url}/rl/stats`, { headers: { authorization: `Bearer ${key}` } })).json()) as {
        session_id?: string;
        capture: { perSession: Record<string, { mainTurns: number }>; records?: number };
        feedback?: unknown;
        session_keys?: number;
      };
    const alice = await statsWith(keys.alice);
    expect(alice.session_id).toBe('alice');
    expect(alice.capture).toEqual({ perSession: { alice: { mainTurns: 1, sideTurns: 0 } } });
    expect(JSON.stringify(alice)).not.toContain('bob');
    expect(alice).not.toHaveProperty('session_keys');
    const all = await statsWith(TOKEN);
    expect(all.capture.perSession).toEqual({
      alice: { mainTurns: 1, sideTurns: 0 },
      bob: { mainTurns: 2, sideTurns: 0 },
    });
    expect(all.session_keys).toBe(2);
  });

  it.each([false, true])(
    'a request the engine would refuse leaves no trace in the capture (stream %s)',
    async (stream) => {
      const s = await serve();
      const h = { 'x-session-id': 'r-1', 'x-turn-type': 'main' };
      expect((await post(s.url, '/v1/chat/completions', chat('first question'), TOKEN, h)).status).toBe(200);
      const refusals = [
        {
          body: chat('REFUSED out of vocabulary', { logit_bias: { '100000': 5 }, stream }),
          param: 'logit_bias',
        },
        { body: chat('REFUSED past the context', { max_tokens: 5000, stream }), param: 'max_tokens' },
      ];
      for (const { body, param } of refusals) {
        const res = await post(s.url, '/v1/chat/completions', body, TOKEN, h);
        expect(res.status).toBe(400);
        expect(((await res.json()) as { error: { param: string } }).error.param).toBe(param);
      }
      expect(s.recorder.sessionCounts('r-1').mainTurns).toBe(1);
      const last = await post(s.url, '/v1/chat/completions', chat('second question', { stream }), TOKEN, {
        ...h,
        'x-session-done': '1',
      });
      expect(last.status).toBe(200);
      await last.text();
      await s.recorder.flush();
      expect(s.sink.records.map((r) => [r.turn, r.next_state?.content ?? null])).toEqual([
        [0, 'second question'],
        [1, null],
      ]);
      expect(JSON.stringify(s.sink.records)).not.toContain('REFUSED');
    },
  );

  it('withdraws a turn the engine refuses after it was registered (its memory budget)', async () => {
    const strict = await RolloutModel.load({ modelDir, memoryBudgetBytes: 1024 });
    try {
      const s = await serve({ model: strict });
      const h = { 'x-session-id': 'm-1' };
      const refused = await post(s.url, '/v1/chat/completions', chat('REFUSED too big'), TOKEN, h);
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe(
        'context_length_exceeded',
      );
      expect(s.recorder.stats()).toMatchObject({ mainTurns: 0 });
      expect(s.recorder.sessionCounts('m-1').mainTurns).toBe(0);
    } finally {
      await strict.close();
    }
  });

  it('counts a stream the client resets mid-answer as 499 and records nothing of that turn', async () => {
    const s = await serve();
    const h = { 'x-session-id': 'z-1', 'x-turn-type': 'main' };
    expect((await post(s.url, '/v1/chat/completions', chat('before'), TOKEN, h)).status).toBe(200);
    const { port } = new URL(s.url);
    const received = await new Promise<number>((resolve, reject) => {
      const req = http.request({
        host: '127.0.0.1',
        port: Number(port),
        path: '/v1/chat/completions',
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}`, ...h },
      });
      req.on('error', () => {});
      req.on('response', (res) => {
        let bytes = 0;
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (bytes >= 600) {
            req.destroy();
            resolve(bytes);
          }
        });
        res.on('end', () => reject(new Error(`the answer ended after ${bytes} bytes, before the reset`)));
      });
      req.end(JSON.stringify(chat('reset me', { stream: true, max_tokens: 1000, temperature: 0 })));
    });
    expect(received).toBeGreaterThanOrEqual(600);
    const metric = async () =>
      (await s.registry.metrics()).match(/clawray_rollout_requests_total\{status="499"\} (\d+)/)?.[1];
    for (let i = 0; i < 200 && !(await metric()); i++) await new Promise((r) => setTimeout(r, 10));
    expect(await metric()).toBe('1');
    s.recorder.endSession('z-1');
    await s.recorder.flush();
    // Turn 0 is recorded (the reset request's message was its next state); the reset turn is not.
    expect(s.sink.records.map((r) => [r.turn, r.next_state?.content])).toEqual([[0, 'reset me']]);
  });

  it('refuses bodies nested past the limit with a 400 naming it, wherever the nesting is', async () => {
    const s = await serve();
    const deep = nested(20_000);
    const bodies = [
      `{"model":"tiny","messages":[{"role":"assistant","content":"x","tool_calls":[{"id":"c","function":{"name":"f","arguments":${deep}}}]},{"role":"user","content":"hi"}]}`,
      `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":${deep}}}]}`,
      `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":${nested(MAX_JSON_DEPTH)}}`,
    ];
    for (const body of bodies) {
      const res = await post(s.url, '/v1/chat/completions', body);
      expect(res.status).toBe(400);
      const error = ((await res.json()) as { error: { message: string; code: string } }).error;
      expect(error.code).toBe('json_too_deep');
      expect(error.message).toContain(`${MAX_JSON_DEPTH} levels`);
    }
    for (const path of ['/v1/completions', '/rl/set_reward']) {
      expect((await post(s.url, path, `{"x":${deep}}`)).status).toBe(400);
    }
    // Just inside the limit is parsed (and then judged on its content).
    const inside = await post(
      s.url,
      '/v1/chat/completions',
      `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"chat_template_kwargs":{"k":${nested(MAX_JSON_DEPTH - 2)}}}`,
    );
    expect(inside.status).toBe(200);
  });

  it("passes the chat template's own reason to the client without the model directory's path", async () => {
    const s = await serve();
    const res = await post(s.url, '/v1/chat/completions', {
      model: 'tiny',
      messages: [{ role: 'tool', content: '{}', tool_call_id: 'c1' }],
    });
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(text).toContain('a conversation cannot open with a tool result');
    expect(text).not.toContain(modelDir);
    expect(text).not.toContain('tokenizer_config.json');
  });

  it('checks the /rl/* bodies by schema: unknown fields by name, types by field; rewards go to the feedback book', async () => {
    const s = await serve();
    const issued = (await (await post(s.url, '/rl/start_session', {})).json()) as { api_key: string };
    await post(s.url, '/v1/chat/completions', chat('rate me'), issued.api_key);
    const refused = async (path: string, body: unknown, key = TOKEN) => {
      const res = await post(s.url, path, body, key);
      return {
        status: res.status,
        error: ((await res.json()) as { error: { message: string; param: string } }).error,
      };
    };
    expect(await refused('/rl/set_reward', { reward: 1, bonus: 2 }, issued.api_key)).toMatchObject({
      status: 400,
      error: { param: 'bonus', message: expect.stringContaining('bonus') },
    });
    expect(await refused('/rl/set_reward', { reward: '1' }, issued.api_key)).toMatchObject({
      status: 400,
      error: { param: 'reward' },
    });
    expect(await refused('/rl/start_session', { session_id: 7 })).toMatchObject({
      status: 400,
      error: { param: 'session_id' },
    });
    expect(await refused('/rl/start_session', ['alice'])).toMatchObject({ status: 400 });
    expect(await refused('/rl/end_session', {})).toMatchObject({
      status: 400,
      error: { param: 'session_id' },
    });
    // A finite reward reaches the feedback book, which holds it to its range.
    expect(await refused('/rl/set_reward', { reward: 1e308 }, issued.api_key)).toMatchObject({
      status: 400,
      error: { param: 'reward' },
    });
    expect((await post(s.url, '/rl/set_reward', { reward: 0.5 }, issued.api_key)).status).toBe(200);
    expect(
      (await post(s.url, '/rl/end_session', '', issued.api_key, { 'content-type': 'text/plain' })).status,
    ).toBe(200);
  });
});
