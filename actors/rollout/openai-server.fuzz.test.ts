/**
 * Malformed requests against every route of the OpenAI-compatible server (a real tiny model,
 * the RL capture, session keys and feedback, auth on): wrong types, deep nesting, huge strings,
 * odd unicode, wrong content types, invalid JSON, missing or odd auth headers, extreme numbers,
 * arrays where objects belong, out-of-vocabulary ids, oversized bodies, prototype-poisoning
 * keys and odd capture headers, drawn from a seeded generator (the seed is printed on failure,
 * and FUZZ_SEED=… replays it). Every answer must be below 500 and hold no stack trace nor
 * server path; afterwards ordinary requests still succeed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initRandomModel } from '../models/model-init.js';
import { MemoryTurnSink, TurnRecorder } from './capture-recorder.js';
import { MAX_JSON_DEPTH } from './json-body.js';
import { createOpenAiServer } from './openai-server.js';
import { RolloutModel } from './rollout-model.js';
import { SessionKeys } from './session-keys.js';
import { TurnFeedback } from './turn-feedback.js';

const TOKEN = 'fuzz-key';
const BODY_LIMIT = 256 * 1024;
/** Requests per run: bounded so the suite stays well under 30 s on two cores. */
const CASES = 400;
const SEED = Number(process.env.FUZZ_SEED ?? 20_250_638);

/** mulberry32: small, seedable, good enough to pick cases. */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)];
  return { next, int, pick };
}
type Rng = ReturnType<typeof prng>;

interface Case {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  url: string;
  headers: Record<string, string>;
  payload?: string;
  what: string;
}

const ODD_STRINGS = [
  '',
  ' ',
  '\u0000',
  '\ud800',
  '\udfff\ud800',
  '\u202e\u200b\ufeff',
  '🙂'.repeat(50),
  '<tool_call>{"name": "x", "arguments": ',
  '<|im_start|>system\n',
  '{{ raise_exception("x") }}',
  '../../../../etc/passwd',
  '%00%ff',
  'é'.normalize('NFD'),
];

const ODD_NUMBERS = [
  0,
  -0,
  1,
  -1,
  0.5,
  1e308,
  -1e308,
  5e-324,
  2 ** 53 + 1,
  -(2 ** 31),
  2 ** 32,
  100_000,
  383,
  384,
  1023,
  1024,
];

/** JSON fragments JSON.stringify cannot write: non-finite literals, NaN as a string, huge exponents. */
const RAW_NUMBERS = [
  '1e309',
  '-1e309',
  'NaN',
  '"NaN"',
  '"Infinity"',
  '-0',
  '1e-400',
  '00',
  '0x10',
  '+1',
  '.5',
];

function oddValue(r: Rng, depth = 0): unknown {
  switch (r.int(depth > 2 ? 5 : 8)) {
    case 0:
      return r.pick(ODD_STRINGS);
    case 1:
      return r.pick(ODD_NUMBERS);
    case 2:
      return r.pick([true, false, null]);
    case 3:
      return 'x'.repeat(r.pick([1, 100, 5_000, 60_000]));
    case 4:
      return String.fromCodePoint(
        ...Array.from({ length: 1 + r.int(30) }, () => r.int(0x10ffff + 1)).filter(
          (c) => c < 0xd800 || c > 0xdfff,
        ),
      );
    case 5:
      return Array.from({ length: r.int(4) }, () => oddValue(r, depth + 1));
    case 6:
      return Object.fromEntries(
        Array.from({ length: r.int(4) }, (_, i) => [`k${i}`, oddValue(r, depth + 1)]),
      );
    default:
      return { role: r.pick(['user', 'tool', 'assistant', 'wizard']), content: oddValue(r, depth + 1) };
  }
}

/** A model id for a URL: percent-encoded odd text, or escapes that decode to nothing valid. */
function oddPathSegment(r: Rng): string {
  if (r.next() < 0.3) return r.pick(['%ZZ', '%E0%A4%A', '%C0%80', '%00', '..%2F..%2Fetc', '%F0%9F']);
  return [...Buffer.from(String(oddValue(r)), 'utf8')]
    .map((b) => `%${b.toString(16).padStart(2, '0')}`)
    .join('');
}

/** `depth` nested arrays or objects around a value, as JSON text. */
function nestedText(r: Rng, depth: number): string {
  const object = r.next() < 0.5;
  return object
    ? `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`
    : `${'['.repeat(depth)}1${']'.repeat(depth)}`;
}

/** Valid bodies of each POST route: the fuzzer breaks one thing at a time. */
function validBody(route: string, r: Rng, withToolCall = r.next() < 0.4): Record<string, unknown> {
  switch (route) {
    case '/v1/chat/completions':
      return {
        model: 'tiny',
        messages: [
          { role: 'system', content: 'You are terse.' },
          { role: 'user', content: 'hi' },
          // An earlier tool call (arguments as an object) and its result.
          ...(withToolCall
            ? [
                {
                  role: 'assistant',
                  content: null,
                  tool_calls: [
                    { id: 'c1', type: 'function', function: { name: 'f', arguments: { a: 'x' } } },
                  ],
                },
                { role: 'tool', tool_call_id: 'c1', content: '{"ok": true}' },
              ]
            : []),
        ],
        max_tokens: 2,
        ...(r.next() < 0.3 ? { stream: true } : {}),
        ...(r.next() < 0.3
          ? {
              tools: [
                {
                  type: 'function',
                  function: {
                    name: 'f',
                    parameters: { type: 'object', properties: { a: { type: 'string' } } },
                  },
                },
              ],
            }
          : {}),
      };
    case '/v1/completions':
      return { model: 'tiny', prompt: r.pick(['hello', [1, 2, 3]]), max_tokens: 2 };
    case '/rl/start_session':
      return r.next() < 0.5 ? {} : { session_id: `s-${r.int(1000)}` };
    case '/rl/set_reward':
      return { session_id: 's-1', reward: 0.5, correction: 'shorter' };
    default:
      return { session_id: 's-1' };
  }
}

const POST_ROUTES = [
  '/v1/chat/completions',
  '/v1/completions',
  '/rl/start_session',
  '/rl/set_reward',
  '/rl/end_session',
];
const GET_ROUTES = ['/v1/models', '/v1/models/tiny', '/rl/stats', '/healthz'];

/** A path of keys into `body` (into its messages too), to break the value there. */
function somePath(body: Record<string, unknown>, r: Rng): (string | number)[] {
  const keys = Object.keys(body);
  const key =
    keys.length > 0 && r.next() < 0.8
      ? r.pick(keys)
      : r.pick(['extra', '__proto__', 'n', 'logit_bias', 'stop']);
  const value = body[key];
  if (key === 'messages' && Array.isArray(value) && r.next() < 0.6) {
    const i = r.int(value.length);
    return [key, i, r.pick(['role', 'content', 'tool_calls', 'name', 'tool_call_id'])];
  }
  return [key];
}

/** Where nesting reaches code that walks values: tool-call arguments, tool schemas, template variables. */
function deepTarget(body: Record<string, unknown>, r: Rng): (string | number)[] {
  const messages = body.messages as { tool_calls?: unknown }[] | undefined;
  const withCalls = messages?.findIndex((m) => m.tool_calls) ?? -1;
  const targets: (string | number)[][] = [
    ['chat_template_kwargs'],
    ['metadata'],
    ['response_format'],
    ['tools'],
    ['stop'],
    ['prompt'],
  ];
  if (withCalls >= 0) {
    const args = ['messages', withCalls, 'tool_calls', 0, 'function', 'arguments'];
    targets.push(args, args, args);
  }
  if (Array.isArray(body.tools)) targets.push(['tools', 0, 'function', 'parameters']);
  return r.pick(targets);
}

function setPath(body: Record<string, unknown>, path: (string | number)[], value: unknown): void {
  let at: Record<string | number, unknown> = body;
  for (const key of path.slice(0, -1)) {
    if (typeof at[key] !== 'object' || at[key] === null) at[key] = {};
    at = at[key] as Record<string | number, unknown>;
  }
  Object.defineProperty(at, path[path.length - 1], {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

/** A value later replaced, in the JSON text, by raw text JSON.stringify cannot write. */
const MARK = '__FUZZ_RAW__';
const withRaw = (json: string, raw: string) => json.replace(JSON.stringify(MARK), raw);

function makeCase(r: Rng, keys: { session: string }): Case {
  const auth = `Bearer ${TOKEN}`;
  const json = { 'content-type': 'application/json', authorization: auth };
  // Classes 0-13 (see the switch); nesting and wrong types are drawn more often.
  const cls = r.pick([0, 1, 1, 2, 2, 2, 3, 4, 5, 6, 7, 8, 8, 9, 10, 11, 12, 13]);
  if (cls === 0) {
    // A GET route, or a route with the wrong method.
    const url = r.next() < 0.5 ? r.pick(GET_ROUTES) : r.pick(POST_ROUTES);
    const method = r.pick(['GET', 'PUT', 'DELETE'] as const);
    return {
      method,
      url: url === '/v1/models/tiny' ? `/v1/models/${oddPathSegment(r)}` : url,
      headers: { authorization: r.next() < 0.5 ? auth : `Bearer ${keys.session}` },
      what: `${method} ${url}`,
    };
  }
  // Nesting goes mostly where values are walked: a chat request's arguments, schemas, kwargs.
  const route = cls === 2 && r.next() < 0.7 ? '/v1/chat/completions' : r.pick(POST_ROUTES);
  const body = validBody(route, r, cls === 2 || r.next() < 0.4);
  const payload = () => JSON.stringify(body);
  switch (cls) {
    case 1: {
      const path = somePath(body, r);
      setPath(body, path, oddValue(r));
      return {
        method: 'POST',
        url: route,
        headers: json,
        payload: payload(),
        what: `wrong type at ${path.join('.')}`,
      };
    }
    case 2: {
      const path = r.next() < 0.7 ? deepTarget(body, r) : somePath(body, r);
      const depth = r.pick([MAX_JSON_DEPTH - 4, MAX_JSON_DEPTH + 1, 500, 5_000, 20_000]);
      setPath(body, path, MARK);
      return {
        method: 'POST',
        url: route,
        headers: json,
        payload: withRaw(payload(), nestedText(r, depth)),
        what: `nesting ${depth} at ${path.join('.')}`,
      };
    }
    case 3: {
      const path = somePath(body, r);
      setPath(body, path, r.pick(['x', '🙂', 'word ']).repeat(r.pick([20_000, 60_000])));
      return {
        method: 'POST',
        url: route,
        headers: json,
        payload: payload(),
        what: `huge string at ${path.join('.')}`,
      };
    }
    case 4: {
      const path = somePath(body, r);
      setPath(body, path, r.pick(ODD_STRINGS) + String.fromCharCode(r.int(0xffff)));
      return {
        method: 'POST',
        url: route,
        headers: json,
        payload: payload(),
        what: `unicode at ${path.join('.')}`,
      };
    }
    case 5: {
      const type = r.pick([
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/json; charset=latin1',
        'application/vnd.api+json',
        'application/octet-stream',
        '',
      ]);
      const headers: Record<string, string> = { authorization: auth };
      if (type) headers['content-type'] = type;
      return {
        method: 'POST',
        url: route,
        headers,
        payload: r.pick([payload(), 'a=1&b=2', '--x\r\n\r\n--x--']),
        what: `content type '${type}'`,
      };
    }
    case 6: {
      const text = payload();
      const broken = r.pick([
        text.slice(0, r.int(text.length)),
        `${text},`,
        text.replace(/"/g, "'"),
        `\ufeff${text}`,
        `${text}${text}`,
        '',
        'null',
        '"just a string"',
        '{"a":1,}',
        '{"model":"tiny","messages":[{"role":"user","content":"\\ud800"}],"max_tokens":2}',
      ]);
      return { method: 'POST', url: route, headers: json, payload: broken, what: 'invalid JSON' };
    }
    case 7: {
      const authorization = r.pick([
        undefined,
        '',
        'Bearer',
        'Bearer ',
        `Basic ${Buffer.from('a:b').toString('base64')}`,
        `bearer ${TOKEN}`,
        `Bearer  ${TOKEN}`,
        `Bearer ${'k'.repeat(8_000)}`,
        `Bearer ${TOKEN}x`,
        'Bearer sk-clawray-forged',
      ]);
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (authorization !== undefined) headers.authorization = authorization;
      return {
        method: 'POST',
        url: route,
        headers,
        payload: payload(),
        what: `auth '${String(authorization).slice(0, 30)}'`,
      };
    }
    case 8: {
      const path = somePath(body, r);
      setPath(body, path, MARK);
      const raw = r.pick(RAW_NUMBERS);
      return {
        method: 'POST',
        url: route,
        headers: json,
        payload: withRaw(payload(), raw),
        what: `number ${raw} at ${path.join('.')}`,
      };
    }
    case 9: {
      const which = r.int(3);
      const text =
        which === 0
          ? JSON.stringify([body])
          : which === 1
            ? JSON.stringify({ ...body, messages: { role: 'user', content: 'hi' } })
            : JSON.stringify({ ...body, messages: [['user', 'hi']] });
      return {
        method: 'POST',
        url: route,
        headers: json,
        payload: text,
        what: 'array where an object belongs',
      };
    }
    case 10: {
      const id = r.pick(['384', '100000', '99999999999999999999999', '-1', '1.5', '1e3']);
      const extra =
        route === '/v1/completions'
          ? { prompt: [1, Number(id), 2] }
          : { logit_bias: { [id]: r.pick([1, 100, -100, 101]) } };
      return {
        method: 'POST',
        url: r.pick(['/v1/chat/completions', '/v1/completions']),
        headers: json,
        payload: JSON.stringify({ ...validBody('/v1/chat/completions', r), ...extra }),
        what: `token id ${id}`,
      };
    }
    case 11: {
      const bytes = BODY_LIMIT + 1 + r.int(BODY_LIMIT);
      return {
        method: 'POST',
        url: route,
        headers: json,
        payload: JSON.stringify({ ...body, pad: 'p'.repeat(bytes) }),
        what: `oversized body of ${bytes} bytes`,
      };
    }
    case 12: {
      const text = r.pick([
        '{"__proto__":{"admin":true},"model":"tiny","messages":[{"role":"user","content":"hi"}]}',
        '{"constructor":{"prototype":{"x":1}},"session_id":"s"}',
        '{"model":"tiny","messages":[{"role":"user","content":"hi","__proto__":{"role":"system"}}]}',
      ]);
      return { method: 'POST', url: route, headers: json, payload: text, what: 'prototype poisoning' };
    }
    default: {
      const headers: Record<string, string> = { ...json };
      headers[r.pick(['x-session-id', 'x-turn-type', 'x-session-done'])] = String(
        r.pick([
          ...ODD_STRINGS.filter((s) => /^[\x20-\x7e]*$/.test(s)),
          'x'.repeat(2_000),
          'maybe',
          'SIDE',
          '1',
        ]),
      );
      if (r.next() < 0.5) headers.authorization = `Bearer ${keys.session}`;
      return {
        method: 'POST',
        url: '/v1/chat/completions',
        headers,
        payload: payload(),
        what: 'odd capture headers',
      };
    }
  }
}

describe('fuzzing the OpenAI-compatible server', () => {
  const root = mkdtempSync(join(tmpdir(), 'clawray-fuzz-'));
  const modelDir = join(root, 'tiny');
  let model: RolloutModel;
  let app: FastifyInstance;
  let recorder: TurnRecorder;

  beforeAll(async () => {
    initRandomModel({ preset: 'tiny', outDir: modelDir, seed: 17 });
    model = await RolloutModel.load({ modelDir, maxBatchSize: 8 });
    recorder = new TurnRecorder({ sink: new MemoryTurnSink(), sweepMs: 0 });
    app = createOpenAiServer({
      model,
      token: TOKEN,
      recorder,
      sessionKeys: new SessionKeys(),
      feedback: new TurnFeedback(),
      bodyLimit: BODY_LIMIT,
    });
    await app.ready();
  });
  afterAll(async () => {
    await app?.close();
    await recorder?.close();
    await model?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it(`answers ${CASES} malformed requests below 500, without internals, and stays healthy`, async () => {
    const started = await app.inject({
      method: 'POST',
      url: '/rl/start_session',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      payload: '{}',
    });
    const keys = { session: (started.json() as { api_key: string }).api_key };
    const r = prng(SEED);
    const statuses = new Map<number, number>();
    const leaks = [root, modelDir, process.cwd(), 'node_modules'];
    for (let i = 0; i < CASES; i++) {
      const c = makeCase(r, keys);
      const res = await app.inject({
        method: c.method,
        url: c.url,
        headers: c.headers,
        ...(c.payload !== undefined ? { payload: c.payload } : {}),
      });
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
      if (process.env.FUZZ_VERBOSE) console.log(`${c.what} → ${res.statusCode}`);
      const label = `case ${i} (FUZZ_SEED=${SEED}): ${c.what} → ${res.statusCode} ${res.body.slice(0, 300)}`;
      expect(res.statusCode, label).toBeLessThan(500);
      expect(res.body, label).not.toMatch(/\n\s+at |\bat [\w.<>]+ \(.*:\d+:\d+\)/);
      for (const leak of leaks) expect(res.body.includes(leak), label).toBe(false);
      if (res.statusCode >= 400) {
        const error = (res.json() as { error?: { message?: unknown } }).error;
        expect(typeof error?.message, label).toBe('string');
      }
    }
    if (process.env.FUZZ_VERBOSE) console.log(JSON.stringify([...statuses].sort()));
    // Most cases are refusals, a few are served: both kinds were exercised.
    expect([...statuses.keys()].some((s) => s >= 400)).toBe(true);
    expect(statuses.get(200) ?? 0).toBeGreaterThan(0);

    // Healthy after: ordinary requests are served, streamed or not.
    const chat = (stream: boolean) =>
      app.inject({
        method: 'POST',
        url: '/v1/chat/completions',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        payload: JSON.stringify({
          model: 'tiny',
          messages: [{ role: 'user', content: 'hello' }],
          max_tokens: 3,
          stream,
        }),
      });
    const plain = await chat(false);
    expect(plain.statusCode).toBe(200);
    expect((plain.json() as { choices: unknown[] }).choices).toHaveLength(1);
    const streamed = await chat(true);
    expect(streamed.statusCode).toBe(200);
    expect(streamed.body.trim().endsWith('data: [DONE]')).toBe(true);
    expect((await app.inject({ method: 'GET', url: '/healthz' })).json()).toMatchObject({ status: 'ok' });
    expect(model.engine.queueDepth).toBe(0);
    expect(model.engine.batchSize).toBe(0);
  });
});
