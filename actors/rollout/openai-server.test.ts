import { mkdtemp, readFile, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import OpenAI from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { actorErrorFrom, fromErrorInfo, toErrorInfo } from '../../common/errors.js';
import { endSession, endsSession } from '../../integrations/openclaw-plugin/session-end.js';
import { JsonlTurnSink, type TurnRecord, TurnRecorder } from './capture-recorder.js';
import type { ChatMessage, ChatModel, ToolCall, ToolSchema } from './chat-model.js';
import { createOpenAiServer, type OpenAiServerOptions } from './openai-server.js';
import {
  ContextLengthError,
  EngineBusyError,
  type GenerateRequest,
  type GenerateResult,
} from './rollout-engine.js';
import { rolloutMetrics } from './rollout-metrics.js';
import type { Sampled } from './sampler.js';
import { SessionKeys } from './session-keys.js';
import { TurnFeedback } from './turn-feedback.js';

const TOKEN = 'test-token-123';
const EOS = 0;
const GREETING = 'Hello, world! I am a fake model.';
const TOOL_TEXT =
  'Let me check. <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>';
const UNICODE = 'héllo wörld ✓ 🙂!';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What the fake model emits for a prompt whose last message contains a trigger word. */
function scriptFor(last: string): string {
  if (last.includes('weather')) return TOOL_TEXT;
  if (last.includes('long')) return 'x'.repeat(200);
  if (last.includes('unicode')) return UNICODE;
  return GREETING;
}

/** The fake logprob of the i-th generated token. */
const fakeLogprob = (i: number) => -0.05 - (i % 7) * 0.1;

/**
 * A deterministic ChatModel: one token per character (the id is the code point, 0 is EOS),
 * a trivial chat template, `<tool_call>` JSON blocks, and a generate() that emits a scripted
 * text token by token with small delays, honoring maxTokens and stop strings.
 */
class FakeModel implements ChatModel {
  readonly id = 'fake-model';
  weightVersion = 7;
  readonly requests: GenerateRequest[] = [];

  encodeChat(messages: ChatMessage[], tools?: ToolSchema[]): number[] {
    let s = tools ? `<tools>${tools.map((t) => t.function.name).join(',')}</tools>\n` : '';
    for (const m of messages) {
      const calls = m.tool_calls ? JSON.stringify(m.tool_calls.map((c) => c.function)) : '';
      s += `<|${m.role}|>${m.content ?? ''}${calls}\n`;
    }
    s += '<|assistant|>';
    return this.toIds(s);
  }

  protected toIds(text: string): number[] {
    return [...text].map((c) => c.codePointAt(0)!);
  }

  decode(ids: number[]): string {
    return String.fromCodePoint(...ids.filter((id) => id !== EOS));
  }

  tokenText(id: number): string {
    return id === EOS ? '<|end|>' : String.fromCodePoint(id);
  }

  parseToolCalls(text: string): { content: string; toolCalls: ToolCall[] } {
    const toolCalls: ToolCall[] = [];
    const content = text.replace(/<tool_call>([\s\S]*?)<\/tool_call>/g, (_, json: string) => {
      const call = JSON.parse(json) as { name: string; arguments: unknown };
      toolCalls.push({
        id: `call_${toolCalls.length}`,
        type: 'function',
        function: { name: call.name, arguments: JSON.stringify(call.arguments) },
      });
      return '';
    });
    return { content: content.trim(), toolCalls };
  }

  async generate(request: GenerateRequest): Promise<GenerateResult> {
    this.requests.push(request);
    const prompt = this.decode(request.promptTokenIds);
    const body = prompt.slice(0, -'<|assistant|>'.length);
    const last = body.slice(body.lastIndexOf('<|'));
    // As an engine behind an actor call would fail: wrapped in an ActorError, through the wire.
    const remote = (err: Error) => fromErrorInfo(toErrorInfo(actorErrorFrom(err, 'RolloutEngine.generate')));
    if (last.includes('remote busy'))
      throw remote(new EngineBusyError('the rollout engine queue is full (0 waiting); retry later'));
    if (last.includes('remote too long'))
      throw remote(new ContextLengthError('the conversation (1100 tokens) fills the model context of 1024'));
    if (last.includes('busy'))
      throw new EngineBusyError('the rollout engine queue is full (0 waiting); retry later');
    if (last.includes('explode')) throw new Error('secret internal detail');
    const script = scriptFor(last);
    const maxTokens = request.maxTokens ?? 256;
    const ids = [...this.toIds(script), EOS];
    const tokenIds: number[] = [];
    const logprobs: number[] = [];
    const top: Sampled[][] = [];
    let finishReason: GenerateResult['finishReason'] = 'length';
    let text = '';
    for (const [i, id] of ids.entries()) {
      await sleep(1);
      if (last.includes('midway') && i === 5) throw new Error('decoder crashed');
      const picked = { tokenId: id, logprob: fakeLogprob(i) };
      tokenIds.push(id);
      logprobs.push(picked.logprob);
      if (request.topLogprobs) {
        top.push(
          [
            picked,
            { tokenId: 'z'.codePointAt(0)!, logprob: picked.logprob - 1 },
            { tokenId: EOS, logprob: -9 },
          ].slice(0, request.topLogprobs),
        );
      }
      request.onToken?.(picked);
      text = this.decode(tokenIds);
      const hits = (request.stop ?? []).map((s) => text.indexOf(s)).filter((at) => at >= 0);
      if (hits.length > 0) {
        text = text.slice(0, Math.min(...hits));
        finishReason = 'stop';
        break;
      }
      if (id === EOS) {
        finishReason = 'stop';
        break;
      }
      if (tokenIds.length >= maxTokens) break;
    }
    return {
      promptTokenIds: request.promptTokenIds,
      sampling: {
        temperature: request.temperature ?? 1,
        topP: request.topP ?? 1,
        topK: request.topK ?? 0,
        seed: request.seed ?? 0,
      },
      tokenIds,
      logprobs,
      ...(request.topLogprobs ? { topLogprobs: top } : {}),
      finishReason,
      weightVersion: this.weightVersion,
      text,
    };
  }
}

/** The same model with one token per UTF-8 byte, so tokens split characters. */
class ByteModel extends FakeModel {
  protected override toIds(text: string): number[] {
    return [...Buffer.from(text, 'utf8')];
  }

  override decode(ids: number[]): string {
    return new TextDecoder().decode(Uint8Array.from(ids.filter((id) => id !== EOS)));
  }

  override tokenText(id: number): string {
    return id === EOS ? '<|end|>' : this.decode([id]);
  }
}

interface Running {
  app: FastifyInstance;
  url: string;
  client: OpenAI;
  registry: Registry;
  model: FakeModel;
}

async function start(
  options: { model?: FakeModel } & Partial<Omit<OpenAiServerOptions, 'model'>> = {},
): Promise<Running> {
  const model = options.model ?? new FakeModel();
  const registry = new Registry();
  const app = createOpenAiServer({ token: TOKEN, registry, ...options, model });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: TOKEN, maxRetries: 0 });
  return { app, url, client, registry, model };
}

/** The non-standard RL fields of a response. */
interface RlFields {
  prompt_token_ids: number[];
  weight_version: number;
  session_id?: string;
  choices: { token_ids: number[] }[];
}

const hello: ChatCompletionMessageParam[] = [
  { role: 'system', content: 'You are a test.' },
  { role: 'user', content: 'Say hello' },
];

const weatherTool: ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

async function collect(stream: AsyncIterable<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const chunks: ChatCompletionChunk[] = [];
  for await (const c of stream) chunks.push(c);
  return chunks;
}

function contentOf(chunks: ChatCompletionChunk[]): string {
  return chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
}

async function readRecords(file: string): Promise<TurnRecord[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as TurnRecord);
}

async function expectApiError(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(OpenAI.APIError);
    return err as InstanceType<typeof OpenAI.APIError>;
  }
  throw new Error('expected the request to fail');
}

describe('OpenAI-compatible server', () => {
  let s: Running;

  beforeAll(async () => {
    s = await start();
  });
  afterAll(async () => {
    await s.app.close();
  });

  it('answers a chat completion with usage, token ids and the weight version', async () => {
    const res = await s.client.chat.completions.create({ model: 'fake-model', messages: hello });
    expect(res.id).toMatch(/^chatcmpl-/);
    expect(res.object).toBe('chat.completion');
    expect(res.model).toBe('fake-model');
    expect(res.choices).toHaveLength(1);
    expect(res.choices[0].message).toMatchObject({ role: 'assistant', content: GREETING });
    expect(res.choices[0].finish_reason).toBe('stop');
    expect(res.choices[0].logprobs).toBeNull();
    const rl = res as unknown as RlFields;
    const prompt = s.model.encodeChat([
      { role: 'system', content: 'You are a test.' },
      { role: 'user', content: 'Say hello' },
    ]);
    expect(rl.prompt_token_ids).toEqual(prompt);
    expect(rl.choices[0].token_ids).toHaveLength(GREETING.length + 1); // + EOS
    expect(rl.choices[0].token_ids.at(-1)).toBe(EOS);
    expect(rl.weight_version).toBe(7);
    expect(res.usage).toEqual({
      prompt_tokens: prompt.length,
      completion_tokens: GREETING.length + 1,
      total_tokens: prompt.length + GREETING.length + 1,
    });
  });

  it('passes sampling parameters to the engine and honors max_tokens and stop', async () => {
    const capped = await s.client.chat.completions.create({
      model: 'fake-model',
      messages: hello,
      max_tokens: 5,
      temperature: 0.7,
      top_p: 0.9,
      seed: 42,
      top_k: 20,
    } as ChatCompletionCreateParamsNonStreaming);
    expect(capped.choices[0].message.content).toBe('Hello');
    expect(capped.choices[0].finish_reason).toBe('length');
    expect(s.model.requests.at(-1)).toMatchObject({
      maxTokens: 5,
      temperature: 0.7,
      topP: 0.9,
      seed: 42,
      topK: 20,
    });

    const newer = await s.client.chat.completions.create({
      model: 'fake-model',
      messages: hello,
      max_completion_tokens: 3,
    });
    expect(newer.choices[0].message.content).toBe('Hel');

    const stopped = await s.client.chat.completions.create({
      model: 'fake-model',
      messages: hello,
      stop: 'world',
    });
    expect(stopped.choices[0].message.content).toBe('Hello, ');
    expect(stopped.choices[0].finish_reason).toBe('stop');
  });

  it('joins text content parts and accepts developer messages', async () => {
    await s.client.chat.completions.create({
      model: 'fake-model',
      messages: [
        { role: 'developer', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'part one' },
            { type: 'text', text: 'part two' },
          ],
        },
      ],
    });
    const prompt = s.model.decode(s.model.requests.at(-1)!.promptTokenIds);
    expect(prompt).toBe('<|system|>Be brief.\n<|user|>part one\npart two\n<|assistant|>');
  });

  it('streams token by token over SSE', async () => {
    const stream = await s.client.chat.completions.create({
      model: 'fake-model',
      messages: hello,
      stream: true,
      stream_options: { include_usage: true },
    });
    const arrivals: number[] = [];
    const chunks: ChatCompletionChunk[] = [];
    for await (const c of stream) {
      chunks.push(c);
      arrivals.push(performance.now());
    }
    const withText = chunks.filter((c) => c.choices[0]?.delta.content);
    expect(withText.length).toBeGreaterThanOrEqual(GREETING.length - 1);
    expect(arrivals.at(-1)! - arrivals[0]).toBeGreaterThan(10); // spread over the generation
    expect(chunks[0].choices[0].delta.role).toBe('assistant');
    expect(contentOf(chunks)).toBe(GREETING);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    const finishing = chunks.filter((c) => c.choices[0]?.finish_reason);
    expect(finishing).toHaveLength(1);
    expect(finishing[0].choices[0].finish_reason).toBe('stop');
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage?.completion_tokens).toBe(GREETING.length + 1);
  });

  it('sends the SSE headers and ends with [DONE]', async () => {
    const res = await fetch(`${s.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake-model', messages: hello, stream: true }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const text = await res.text();
    const events = text.split('\n\n').filter(Boolean);
    expect(events.every((e) => e.startsWith('data: '))).toBe(true);
    expect(events.at(-1)).toBe('data: [DONE]');
  });

  it('never streams a stop string or what follows it', async () => {
    const chunks = await collect(
      await s.client.chat.completions.create({
        model: 'fake-model',
        messages: hello,
        stream: true,
        stop: ['world!'],
      }),
    );
    expect(contentOf(chunks)).toBe('Hello, ');
    expect(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0].finish_reason).toBe('stop');
  });

  it('returns logprobs and top_logprobs of the sampled tokens', async () => {
    const res = await s.client.chat.completions.create({
      model: 'fake-model',
      messages: hello,
      logprobs: true,
      top_logprobs: 2,
    });
    const entries = res.choices[0].logprobs!.content!;
    const ids = (res as unknown as RlFields).choices[0].token_ids;
    expect(entries).toHaveLength(ids.length);
    expect(entries[0]).toEqual({
      token: 'H',
      logprob: fakeLogprob(0),
      bytes: [72],
      top_logprobs: [
        { token: 'H', logprob: fakeLogprob(0), bytes: [72] },
        { token: 'z', logprob: fakeLogprob(0) - 1, bytes: [122] },
      ],
    });
    entries.forEach((e, i) => {
      expect(e.logprob).toBeCloseTo(fakeLogprob(i), 12);
    });
    expect(entries.at(-1)!.token).toBe('<|end|>');
    expect(s.model.requests.at(-1)!.topLogprobs).toBe(2);

    const plain = await s.client.chat.completions.create({
      model: 'fake-model',
      messages: hello,
      logprobs: true,
    });
    expect(plain.choices[0].logprobs!.content![1]).toMatchObject({ token: 'e', top_logprobs: [] });
  });

  it('streams logprobs per token, or all at the end when top_logprobs are asked for', async () => {
    const perToken = await collect(
      await s.client.chat.completions.create({
        model: 'fake-model',
        messages: hello,
        stream: true,
        logprobs: true,
      }),
    );
    const streamed = perToken.flatMap((c) => c.choices[0]?.logprobs?.content ?? []);
    expect(streamed.map((e) => e.token).join('')).toBe(`${GREETING}<|end|>`);
    expect(streamed[3].logprob).toBeCloseTo(fakeLogprob(3), 12);

    const deferred = await collect(
      await s.client.chat.completions.create({
        model: 'fake-model',
        messages: hello,
        stream: true,
        logprobs: true,
        top_logprobs: 1,
      }),
    );
    const finishing = deferred.find((c) => c.choices[0]?.finish_reason)!;
    expect(finishing.choices[0].logprobs!.content).toHaveLength(GREETING.length + 1);
    expect(finishing.choices[0].logprobs!.content![0].top_logprobs).toHaveLength(1);
    expect(contentOf(deferred)).toBe(GREETING);
  });

  it('parses tool calls when tools are given', async () => {
    const res = await s.client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'what is the weather in Paris?' }],
      tools: [weatherTool],
    });
    const choice = res.choices[0];
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBe('Let me check.');
    expect(choice.message.tool_calls).toHaveLength(1);
    const call = choice.message.tool_calls![0];
    expect(call.type).toBe('function');
    if (call.type !== 'function') throw new Error('expected a function call');
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'Paris' });
    expect(s.model.decode(s.model.requests.at(-1)!.promptTokenIds)).toMatch(/^<tools>get_weather<\/tools>/);

    const none = await s.client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'what is the weather in Paris?' }],
      tools: [weatherTool],
      tool_choice: 'none',
    });
    expect(none.choices[0].finish_reason).toBe('stop');
    expect(none.choices[0].message.content).toBe(TOOL_TEXT);
  });

  it('streams tool calls without leaking the tool-call markup into content', async () => {
    const stream = s.client.chat.completions.stream({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'what is the weather in Paris?' }],
      tools: [weatherTool],
    });
    const deltas: string[] = [];
    stream.on('content', (delta) => deltas.push(delta));
    const final = await stream.finalChatCompletion();
    expect(deltas.join('')).not.toContain('<tool');
    expect(final.choices[0].finish_reason).toBe('tool_calls');
    const call = final.choices[0].message.tool_calls![0];
    if (call.type !== 'function') throw new Error('expected a function call');
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'Paris' });
    expect(final.choices[0].message.content?.trim()).toBe('Let me check.');
  });

  it('rejects bad requests with 400 naming the field', async () => {
    const missing = await expectApiError(
      s.client.chat.completions.create({ model: 'fake-model' } as ChatCompletionCreateParamsNonStreaming),
    );
    expect(missing.status).toBe(400);
    expect(missing.type).toBe('invalid_request_error');
    expect(missing.param).toBe('messages');

    const n2 = await expectApiError(
      s.client.chat.completions.create({ model: 'fake-model', messages: hello, n: 2, stream: true }),
    );
    expect(n2.status).toBe(400);
    expect(n2.param).toBe('n');
    const n99 = await expectApiError(
      s.client.chat.completions.create({ model: 'fake-model', messages: hello, n: 99 }),
    );
    expect(n99.param).toBe('n');
    const schema = await expectApiError(
      s.client.chat.completions.create({
        model: 'fake-model',
        messages: hello,
        response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } },
      }),
    );
    expect(schema.param).toBe('response_format');
    const forced = await expectApiError(
      s.client.chat.completions.create({
        model: 'fake-model',
        messages: hello,
        tools: [weatherTool],
        tool_choice: 'required',
        response_format: { type: 'json_object' },
      }),
    );
    expect(forced.param).toBe('response_format');

    const role = await expectApiError(
      s.client.chat.completions.create({
        model: 'fake-model',
        messages: [{ role: 'robot', content: 'x' }],
      } as unknown as ChatCompletionCreateParamsNonStreaming),
    );
    expect(role.param).toBe('messages[0].role');
    expect(role.message).toContain('messages[0].role');

    const image = await expectApiError(
      s.client.chat.completions.create({
        model: 'fake-model',
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'http://x/y.png' } }] }],
      }),
    );
    expect(image.param).toBe('messages[0].content[0].type');

    const temp = await expectApiError(
      s.client.chat.completions.create({ model: 'fake-model', messages: hello, temperature: 3 }),
    );
    expect(temp.param).toBe('temperature');

    const choice = await expectApiError(
      s.client.chat.completions.create({
        model: 'fake-model',
        messages: hello,
        tools: [weatherTool],
        tool_choice: 'required',
      }),
    );
    expect(choice.param).toBe('tool_choice');

    const badJson = await fetch(`${s.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: '{"model": ',
    });
    expect(badJson.status).toBe(400);
    expect(((await badJson.json()) as { error: { type: string } }).error.type).toBe('invalid_request_error');
  });

  it('refuses unknown fields by name, as OpenAI does, and accepts the bookkeeping ones', async () => {
    const unknown = await expectApiError(
      s.client.chat.completions.create({
        model: 'fake-model',
        messages: hello,
        best_of: 3,
      } as unknown as ChatCompletionCreateParamsNonStreaming),
    );
    expect(unknown.status).toBe(400);
    expect(unknown.param).toBe('best_of');
    expect(unknown.message).toMatch(/Unrecognized request argument supplied: best_of/);
    const res = await s.client.chat.completions.create({
      model: 'fake-model',
      messages: hello,
      user: 'someone',
      metadata: { a: 'b' },
      store: false,
      parallel_tool_calls: true,
    });
    expect(res.choices[0].message.content).toBe(GREETING);
  });

  it('answers 401 for a wrong or missing key', async () => {
    const wrong = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'nope', maxRetries: 0 });
    const err = await expectApiError(wrong.chat.completions.create({ model: 'fake-model', messages: hello }));
    expect(err.status).toBe(401);
    expect(err.code).toBe('invalid_api_key');
    expect(err.type).toBe('invalid_request_error');
    const models = await fetch(`${s.url}/v1/models`);
    expect(models.status).toBe(401);
    expect(models.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('answers 404 for an unknown model or route', async () => {
    const err = await expectApiError(s.client.chat.completions.create({ model: 'gpt-4o', messages: hello }));
    expect(err.status).toBe(404);
    expect(err.code).toBe('model_not_found');
    expect(err.param).toBe('model');
    const route = await fetch(`${s.url}/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(route.status).toBe(404);
    const body = (await route.json()) as { error: { message: string; type: string } };
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.message).toContain('/v1/embeddings');
  });

  it('answers 429 with retry-after when the engine is busy, streaming or not', async () => {
    const err = await expectApiError(
      s.client.chat.completions.create({
        model: 'fake-model',
        messages: [{ role: 'user', content: 'busy?' }],
      }),
    );
    expect(err.status).toBe(429);
    expect(err.code).toBe('rate_limit_exceeded');
    expect(err.headers?.get('retry-after')).toBe('1');
    const streamed = await expectApiError(
      s.client.chat.completions.create({
        model: 'fake-model',
        messages: [{ role: 'user', content: 'busy?' }],
        stream: true,
      }),
    );
    expect(streamed.status).toBe(429);
  });

  it('answers 429 and 400 for engine errors that arrive inside an ActorError from a remote engine', async () => {
    const busy = await expectApiError(
      s.client.chat.completions.create({
        model: 'fake-model',
        messages: [{ role: 'user', content: 'remote busy' }],
      }),
    );
    expect(busy.status).toBe(429);
    expect(busy.code).toBe('rate_limit_exceeded');
    expect(busy.message).toContain('queue is full');
    const tooLong = await expectApiError(
      s.client.chat.completions.create({
        model: 'fake-model',
        messages: [{ role: 'user', content: 'remote too long' }],
        stream: true,
      }),
    );
    expect(tooLong.status).toBe(400);
    expect(tooLong.code).toBe('context_length_exceeded');
  });

  it('answers 500 without internals, and reports a mid-stream failure in the stream', async () => {
    const err = await expectApiError(
      s.client.chat.completions.create({
        model: 'fake-model',
        messages: [{ role: 'user', content: 'explode' }],
      }),
    );
    expect(err.status).toBe(500);
    expect(err.type).toBe('server_error');
    expect(err.message).not.toContain('secret');
    const stream = await s.client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'fail midway' }],
      stream: true,
    });
    await expect(collect(stream)).rejects.toBeInstanceOf(OpenAI.APIError);
  });

  it('keeps serving after a streaming client disconnects', async () => {
    const controller = new AbortController();
    const stream = await s.client.chat.completions.create(
      { model: 'fake-model', messages: [{ role: 'user', content: 'something long' }], stream: true },
      { signal: controller.signal },
    );
    let seen = 0;
    // The client ends the iteration quietly on abort.
    for await (const _ of stream) {
      if (++seen === 3) controller.abort();
    }
    expect(seen).toBeLessThan(20);
    // The generation runs to its end before the server notices.
    await expect
      .poll(() => s.registry.metrics(), { timeout: 10_000 })
      .toMatch(/clawray_rollout_requests_total\{status="499"\} 1/);
    // The same for a plain request whose client gives up before the answer.
    const gaveUp = new AbortController();
    setTimeout(() => gaveUp.abort(), 30);
    await expect(
      fetch(`${s.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'long please' }] }),
        signal: gaveUp.signal,
      }),
    ).rejects.toThrow();
    await expect
      .poll(() => s.registry.metrics(), { timeout: 10_000 })
      .toMatch(/clawray_rollout_requests_total\{status="499"\} 2/);
    const res = await s.client.chat.completions.create({ model: 'fake-model', messages: hello });
    expect(res.choices[0].message.content).toBe(GREETING);
  });

  it('serves /healthz without a token and lists the model', async () => {
    const health = await fetch(`${s.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok', model: 'fake-model', weightVersion: 7 });
    const models = await s.client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['fake-model']);
    expect((await s.client.models.retrieve('fake-model')).object).toBe('model');
    expect((await expectApiError(s.client.models.retrieve('other'))).status).toBe(404);
  });

  it('exports its metrics', async () => {
    await s.client.chat.completions.create({ model: 'fake-model', messages: hello });
    const text = await s.registry.metrics();
    for (const name of ['clawray_rollout_requests_total', 'clawray_rollout_capture_missing_headers_total']) {
      expect(text).toContain(name);
    }
    expect(text).toMatch(/clawray_rollout_requests_total\{status="200"\} \d+/);
    expect(text).toMatch(/clawray_rollout_requests_total\{status="400"\} \d+/);
    expect(text).toMatch(/clawray_rollout_requests_total\{status="429"\} \d+/);
  });
});

describe('tokens that split characters', () => {
  it('streams whole characters only', async () => {
    const b = await start({ model: new ByteModel() });
    try {
      const chunks = await collect(
        await b.client.chat.completions.create({
          model: 'fake-model',
          messages: [{ role: 'user', content: 'some unicode ✓' }],
          stream: true,
        }),
      );
      const pieces = chunks.map((c) => c.choices[0]?.delta.content ?? '');
      expect(pieces.join('')).toBe(UNICODE);
      expect(pieces.some((p) => p.includes('\uFFFD'))).toBe(false);
      const res = await b.client.chat.completions.create({
        model: 'fake-model',
        messages: [{ role: 'user', content: 'unicode again' }],
        logprobs: true,
      });
      expect(res.choices[0].message.content).toBe(UNICODE);
      expect(res.choices[0].logprobs!.content!.length).toBe(Buffer.byteLength(UNICODE) + 1);
    } finally {
      await b.app.close();
    }
  });
});

describe('server metrics next to the engine metrics', () => {
  it('leaves the token metrics to the engine when they share a registry', async () => {
    const registry = new Registry();
    rolloutMetrics(registry, () => undefined);
    const app = createOpenAiServer({ model: new FakeModel(), registry });
    const second = createOpenAiServer({ model: new FakeModel(), registry });
    const res = await app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      payload: { model: 'fake-model', messages: hello },
    });
    expect(res.statusCode).toBe(200);
    const text = await registry.metrics();
    expect(text).toMatch(/clawray_rollout_tokens_total 0/); // the engine's, fed by its observer only
    expect(text).toMatch(/clawray_rollout_requests_total\{status="200"\} 1/);
    await app.close();
    await second.close();
  });

  it('shares its request counter between servers on one registry', async () => {
    const registry = new Registry();
    const apps = [
      createOpenAiServer({ model: new FakeModel(), registry }),
      createOpenAiServer({ model: new FakeModel(), registry }),
    ];
    for (const app of apps) {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/chat/completions',
        payload: { model: 'fake-model', messages: hello, max_tokens: 4 },
      });
      expect(res.statusCode).toBe(200);
      await app.close();
    }
    expect(await registry.metrics()).toMatch(/clawray_rollout_requests_total\{status="200"\} 2/);
  });
});

describe('RL capture through the server', () => {
  let dir: string;
  let running: Running | undefined;
  let recorder: TurnRecorder | undefined;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'clawray-capture-'));
  });
  afterEach(async () => {
    await running?.app.close();
    await recorder?.close();
    running = undefined;
    recorder = undefined;
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('records main turns with engine tokens and chains next_state; side turns are not recorded', async () => {
    const file = join(dir, 'nested', 'turns.jsonl');
    recorder = new TurnRecorder({ sink: new JsonlTurnSink(file), sweepMs: 0 });
    running = await start({ recorder });
    const { client } = running;
    const headers = (extra: Record<string, string> = {}) => ({ 'X-Session-Id': 'sess-1', ...extra });

    // Turn 0 (main).
    const convo: ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You are an agent.' },
      { role: 'user', content: 'Say hello' },
    ];
    const r0 = await client.chat.completions.create(
      { model: 'fake-model', messages: convo, logprobs: true },
      { headers: headers({ 'X-Turn-Type': 'main' }) },
    );
    convo.push({ role: 'assistant', content: r0.choices[0].message.content });
    convo.push({ role: 'user', content: 'what is the weather in Paris?' });

    // Turn 1 (main by default: no X-Turn-Type), streamed.
    const stream = client.chat.completions.stream(
      { model: 'fake-model', messages: convo, tools: [weatherTool] },
      { headers: headers() },
    );
    const r1 = await stream.finalChatCompletion();
    expect(r1.choices[0].finish_reason).toBe('tool_calls');
    const call = r1.choices[0].message.tool_calls![0];

    // A side turn (e.g. a memory flush) in between.
    await client.chat.completions.create(
      { model: 'fake-model', messages: [{ role: 'user', content: 'SIDE summarize the memory' }] },
      { headers: headers({ 'X-Turn-Type': 'side' }) },
    );

    // Turn 2 (main) answers with the tool result, and ends the session.
    convo.push({
      role: 'assistant',
      content: r1.choices[0].message.content,
      tool_calls: r1.choices[0].message.tool_calls,
    });
    convo.push({ role: 'tool', tool_call_id: call.id, content: '{"temp_c": 18}' });
    const r2 = await client.chat.completions.create(
      { model: 'fake-model', messages: convo, tools: [weatherTool] },
      { headers: headers({ 'X-Turn-Type': 'main', 'X-Session-Done': 'true' }) },
    );
    await recorder.flush();

    const records = await readRecords(file);
    expect(records).toHaveLength(3);
    expect(records.map((r) => r.turn)).toEqual([0, 1, 2]);
    expect(records.every((r) => r.session_id === 'sess-1')).toBe(true);
    expect(JSON.stringify(records)).not.toContain('SIDE');

    const [t0, t1, t2] = records;
    // Tokens and logprobs exactly as the engine produced them.
    const rl0 = r0 as unknown as RlFields;
    expect(t0.prompt_token_ids).toEqual(rl0.prompt_token_ids);
    expect(t0.response_token_ids).toEqual(rl0.choices[0].token_ids);
    expect(t0.response_logprobs).toEqual(r0.choices[0].logprobs!.content!.map((e) => e.logprob));
    expect(t0.response_logprobs).toEqual(t0.response_token_ids.map((_, i) => fakeLogprob(i)));
    expect(t0.response_text).toBe(GREETING);
    expect(t0.request_id).toBe(r0.id);
    expect(t0.weight_version).toBe(7);
    expect(t0.messages).toEqual([
      { role: 'system', content: 'You are an agent.' },
      { role: 'user', content: 'Say hello' },
    ]);
    expect(t0.tools).toBeNull();
    expect(t1.response_token_ids).toEqual([...[...TOOL_TEXT].map((c) => c.codePointAt(0)), EOS]);
    expect(t1.tools?.[0].function.name).toBe('get_weather');
    expect(t1.tool_calls[0].function.name).toBe('get_weather');
    expect(t1.finish_reason).toBe('tool_calls');
    expect(t2.prompt_token_ids).toEqual((r2 as unknown as RlFields).prompt_token_ids);

    // next_state: the last message of the next main request.
    expect(t0.next_state).toEqual({ role: 'user', content: 'what is the weather in Paris?' });
    expect(t1.next_state).toEqual({ role: 'tool', content: '{"temp_c": 18}', tool_call_id: call.id });
    expect(t2.next_state).toBeNull();
    expect(records.map((r) => r.session_done)).toEqual([false, false, true]);
    expect(records.map((r) => r.end)).toEqual(['next_turn', 'next_turn', 'session_done']);

    // The missing turn type defaulted to main, counted and flagged.
    expect(records.map((r) => r.turn_type_defaulted)).toEqual([false, true, false]);
    const metrics = await running.registry.metrics();
    expect(metrics).toMatch(/clawray_rollout_capture_missing_headers_total\{header="turn_type"\} 1/);
    expect(recorder.stats()).toMatchObject({
      records: 3,
      mainTurns: 3,
      sideTurns: 1,
      defaultedTurnType: 1,
      sessions: 0,
    });
  });

  it('takes the session keys from the body like the headers, and skips requests without a session', async () => {
    const file = join(dir, 'body.jsonl');
    recorder = new TurnRecorder({ sink: new JsonlTurnSink(file), sweepMs: 0 });
    running = await start({ recorder });
    const { client } = running;
    const body = (messages: ChatCompletionMessageParam[], keys: Record<string, unknown>) =>
      ({ model: 'fake-model', messages, ...keys }) as ChatCompletionCreateParamsNonStreaming;

    const first = await client.chat.completions.create(
      body([{ role: 'user', content: 'hi' }], { session_id: 'b-1', turn_type: 'main' }),
    );
    expect((first as unknown as RlFields).session_id).toBe('b-1');
    await client.chat.completions.create(body([{ role: 'user', content: 'no session here' }], {}));
    await client.chat.completions.create(
      body([{ role: 'user', content: 'side work' }], { session_id: 'b-1', turn_type: 'side' }),
    );
    await client.chat.completions.create(
      body(
        [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: GREETING },
          { role: 'user', content: 'thanks' },
        ],
        { session_id: 'b-1', turn_type: 'main', session_done: true },
      ),
    );
    await recorder.flush();
    const records = await readRecords(file);
    expect(records).toHaveLength(2);
    expect(records[0].next_state).toEqual({ role: 'user', content: 'thanks' });
    expect(records[1]).toMatchObject({ session_done: true, next_state: null });
    expect(JSON.stringify(records)).not.toContain('no session here');
    const metrics = await running.registry.metrics();
    expect(metrics).toMatch(/clawray_rollout_capture_missing_headers_total\{header="session_id"\} 1/);
    expect(recorder.stats().missingSessionId).toBe(1);
  });

  it('rejects a turn type that is neither main nor side', async () => {
    recorder = new TurnRecorder({ sink: new JsonlTurnSink(join(dir, 'bad.jsonl')), sweepMs: 0 });
    running = await start({ recorder });
    const err = await expectApiError(
      running.client.chat.completions.create(
        { model: 'fake-model', messages: hello },
        { headers: { 'X-Session-Id': 'x', 'X-Turn-Type': 'primary' } },
      ),
    );
    expect(err.status).toBe(400);
    expect(err.param).toBe('X-Turn-Type');
  });

  it('does not record a turn whose generation failed, nor let it take a turn number', async () => {
    const file = join(dir, 'failed.jsonl');
    recorder = new TurnRecorder({ sink: new JsonlTurnSink(file), sweepMs: 0 });
    running = await start({ recorder });
    const h = { headers: { 'X-Session-Id': 'f-1', 'X-Turn-Type': 'main' } };
    await expectApiError(
      running.client.chat.completions.create(
        { model: 'fake-model', messages: [{ role: 'user', content: 'busy' }] },
        h,
      ),
    );
    await running.client.chat.completions.create(
      { model: 'fake-model', messages: [{ role: 'user', content: 'hello' }] },
      { headers: { ...h.headers, 'X-Session-Done': '1' } },
    );
    await recorder.flush();
    const records = await readRecords(file);
    expect(records).toHaveLength(1);
    // The refused request (429) left no trace: the turn served next is the session's first.
    expect(records[0]).toMatchObject({ turn: 0, response_text: GREETING, session_done: true });
  });
});

describe('live sessions: session keys, feedback, side calls and oversized requests', () => {
  let dir: string;
  let running: Running | undefined;
  let recorder: TurnRecorder | undefined;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'clawray-live-'));
  });
  afterEach(async () => {
    await running?.app.close();
    await recorder?.close();
    running = undefined;
    recorder = undefined;
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const post = (path: string, body: unknown, key = TOKEN) =>
    fetch(`${running!.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify(body),
    });

  it("ends a session when the OpenClaw plugin reports OpenClaw's session_end (/new, /reset…)", async () => {
    const file = join(dir, 'plugin-end.jsonl');
    recorder = new TurnRecorder({ sink: new JsonlTurnSink(file), sweepMs: 0 });
    running = await start({ recorder });
    const h = { headers: { 'X-Session-Id': 'oc-1', 'X-Turn-Type': 'main' } };
    await running.client.chat.completions.create({ model: 'fake-model', messages: hello }, h);
    await recorder.flush();
    // The turn waits for its next state until the session ends.
    expect(await readFile(file, 'utf8').catch(() => '')).toBe('');
    for (const reason of ['new', 'reset', 'idle', 'daily', 'deleted', 'compaction'])
      expect(endsSession(reason)).toBe(true);
    for (const reason of ['shutdown', 'restart', 'unknown', undefined])
      expect(endsSession(reason)).toBe(false);
    // The provider's baseUrl is the OpenAI base (…/v1); the RL routes live beside it.
    expect(await endSession({ baseUrl: `${running.url}/v1/`, apiKey: TOKEN, sessionId: 'oc-1' })).toEqual({
      ok: true,
      status: 200,
    });
    await recorder.flush();
    const records = await readRecords(file);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ session_id: 'oc-1', turn: 0, next_state: null, session_done: true });
    expect(
      (await endSession({ baseUrl: `${running.url}/v1`, apiKey: 'wrong', sessionId: 'oc-1' })).status,
    ).toBe(401);
  });

  it('files requests under the session of their key, takes feedback on its turns, and ends it', async () => {
    const file = join(dir, 'keys.jsonl');
    recorder = new TurnRecorder({ sink: new JsonlTurnSink(file), sweepMs: 0 });
    const feedback = new TurnFeedback();
    running = await start({ recorder, sessionKeys: new SessionKeys(), feedback });
    const started = await post('/rl/start_session', { session_id: 'alice' });
    expect(started.status).toBe(200);
    const { session_id, api_key } = (await started.json()) as { session_id: string; api_key: string };
    expect(session_id).toBe('alice');
    // A session key is a credential of its own: no server key needed.
    const client = new OpenAI({ baseURL: `${running.url}/v1`, apiKey: api_key, maxRetries: 0 });
    const t0 = await client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'Say hello' }],
    });
    expect((t0 as unknown as RlFields).session_id).toBe('alice');
    // A side call (no turn type, memory-flush marker) is served, not recorded.
    await client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'Pre-compaction memory flush. Write memories to disk.' }],
    });
    expect((await post('/rl/set_reward', { reward: 1, correction: 'shorter please' }, api_key)).status).toBe(
      200,
    );
    await client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'Say hello again' }],
    });
    await recorder.flush();
    const records = (await readFile(file, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as TurnRecord);
    expect(records.map((r) => [r.session_id, r.turn, r.next_state?.content])).toEqual([
      ['alice', 0, 'Say hello again'],
    ]);
    // What the judge takes when it judges turn 0.
    expect(feedback.take(t0.id)).toMatchObject({ reward: 1, correction: 'shorter please' });
    const late = await post('/rl/set_reward', { interaction_id: t0.id, reward: -1 }, api_key);
    expect(late.status).toBe(409);
    expect(((await late.json()) as { error: { code: string } }).error.code).toBe('conflict');
    expect(
      (await post('/rl/set_reward', { interaction_id: 'chatcmpl-nope', reward: 1 }, api_key)).status,
    ).toBe(404);
    // The key's holder cannot act for another session, nor start sessions.
    expect((await post('/rl/end_session', { session_id: 'bob' }, api_key)).status).toBe(400);
    expect((await post('/rl/start_session', {}, api_key)).status).toBe(403);
    const stats = (await (
      await fetch(`${running.url}/rl/stats`, { headers: { authorization: `Bearer ${TOKEN}` } })
    ).json()) as {
      capture: { mainTurns: number; sideTurns: number };
    };
    expect(stats.capture).toMatchObject({ mainTurns: 2, sideTurns: 1 });
    expect((await post('/rl/end_session', {}, api_key)).status).toBe(200);
    await recorder.flush();
    expect((await readFile(file, 'utf8')).trim().split('\n')).toHaveLength(2);
    // Ended: the key is revoked.
    const gone = await expectApiError(
      client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'hi' }] }),
    );
    expect(gone.status).toBe(401);
    const metrics = await running.registry.metrics();
    expect(metrics).toMatch(
      /clawray_rollout_capture_turns_total\{type="side",kind="memory_flush",session="api_key"\} 1/,
    );
  });

  it('answers an oversized body 413 and an over-long prompt 400 while other requests keep being served', async () => {
    class BoundedModel extends FakeModel {
      readonly maxContext = 4096;
      async encodeChatWithin(messages: ChatMessage[], tools: ToolSchema[] | undefined, maxTokens: number) {
        const { encodeWithin } = await import('./prompt-budget.js');
        if (tools) throw new Error('no tools here');
        const text = `${messages.map((m) => `<|${m.role}|>${m.content ?? ''}\n`).join('')}<|assistant|>`;
        return encodeWithin(text, (t) => this.toIds(t), maxTokens, { pieceChars: 8192 });
      }
    }
    running = await start({ model: new BoundedModel(), bodyLimit: 1024 * 1024 });
    const huge = 'word '.repeat(2_200_000); // 11 MB
    const tooBig = await expectApiError(
      running.client.chat.completions.create({
        model: 'fake-model',
        messages: [{ role: 'user', content: huge }],
      }),
    );
    expect(tooBig.status).toBe(413);
    expect(tooBig.code).toBe('request_too_large');
    const [long, ok] = await Promise.all([
      expectApiError(
        running.client.chat.completions.create({
          model: 'fake-model',
          messages: [{ role: 'user', content: 'x'.repeat(900_000) }],
        }),
      ),
      running.client.chat.completions.create({ model: 'fake-model', messages: hello }),
    ]);
    expect(long.status).toBe(400);
    expect(long.code).toBe('context_length_exceeded');
    expect(long.message).toMatch(/context holds 4095/);
    expect(ok.choices[0].message.content).toBe(GREETING);
  });
});

describe('OpenAI parameters beyond one plain choice', () => {
  let s: Running | undefined;
  afterEach(async () => {
    await s?.app.close();
    s = undefined;
  });

  /** Answers by script, records each request, encodes plain text and gives raw token bytes. */
  class ScriptModel extends FakeModel {
    readonly maxContext = 4096;
    lastPrompt = '';
    encodeText(text: string): number[] {
      return this.toIds(text);
    }
    tokenBytes(id: number): number[] {
      return [id & 0xff, 0x80];
    }
    override encodeChat(
      messages: ChatMessage[],
      tools?: ToolSchema[],
      kwargs?: Record<string, unknown>,
    ): number[] {
      const ids = super.encodeChat(messages, tools);
      return kwargs?.enable_thinking === false ? [...this.toIds('<no-think>'), ...ids] : ids;
    }
    override async generate(request: GenerateRequest): Promise<GenerateResult> {
      this.requests.push(request);
      this.lastPrompt = this.decode(request.promptTokenIds);
      const forced = this.lastPrompt.endsWith('"arguments": ');
      const text = forced ? '{"city": "Oslo"}}\n</tool_call>' : `seed ${request.seed ?? 'none'}`;
      const tokenIds = this.toIds(text);
      return {
        promptTokenIds: request.promptTokenIds,
        sampling: {
          temperature: request.temperature ?? 1,
          topP: request.topP ?? 1,
          topK: request.topK ?? 0,
          seed: request.seed ?? 0,
        },
        tokenIds,
        logprobs: tokenIds.map(() => -0.25),
        finishReason: 'stop',
        weightVersion: this.weightVersion,
        text,
      };
    }
  }

  it('n choices (each with its own seed), logit_bias and penalties passed to the engine, template kwargs', async () => {
    const model = new ScriptModel();
    s = await start({ model });
    const r = await s.client.chat.completions.create({
      model: 'fake-model',
      messages: hello,
      n: 3,
      seed: 10,
      logit_bias: { '65': 5 },
      presence_penalty: 0.5,
      frequency_penalty: 0.25,
    });
    expect(r.choices.map((c) => [c.index, c.message.content])).toEqual([
      [0, 'seed 10'],
      [1, 'seed 11'],
      [2, 'seed 12'],
    ]);
    expect(r.usage?.completion_tokens).toBe(3 * 'seed 10'.length);
    expect(model.requests[0]).toMatchObject({
      logitBias: [[65, 5]],
      presencePenalty: 0.5,
      frequencyPenalty: 0.25,
    });
    await s.client.chat.completions.create({
      model: 'fake-model',
      messages: hello,
      chat_template_kwargs: { enable_thinking: false },
    } as ChatCompletionCreateParamsNonStreaming);
    expect(model.lastPrompt.startsWith('<no-think>')).toBe(true);
  });

  it('tool_choice naming a function starts the answer with that call; logprobs carry raw token bytes', async () => {
    const model = new ScriptModel();
    s = await start({ model });
    const r = await s.client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'weather in Oslo?' }],
      tools: [weatherTool],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      logprobs: true,
    });
    expect(model.lastPrompt.endsWith('<tool_call>\n{"name": "get_weather", "arguments": ')).toBe(true);
    expect(r.choices[0].finish_reason).toBe('tool_calls');
    const call = r.choices[0].message.tool_calls?.[0] as { function: { name: string; arguments: string } };
    expect(call.function).toEqual({ name: 'get_weather', arguments: '{"city":"Oslo"}' });
    expect(r.choices[0].logprobs?.content?.[0].bytes).toEqual(['{'.charCodeAt(0), 0x80]);
    const unknownTool = await expectApiError(
      s.client.chat.completions.create({
        model: 'fake-model',
        messages: hello,
        tools: [weatherTool],
        tool_choice: { type: 'function', function: { name: 'nope' } },
      }),
    );
    expect(unknownTool.param).toBe('tool_choice');
  });
});

describe('POST /v1/completions', () => {
  let s: Running | undefined;
  afterEach(async () => {
    await s?.app.close();
    s = undefined;
  });

  class TextModel extends FakeModel {
    readonly maxContext = 4096;
    readonly scored: [number[], number][] = [];
    encodeText(text: string): number[] {
      return this.toIds(`<|user|>${text}\n<|assistant|>`);
    }
    async computeLogprobs(ids: number[], from: number): Promise<number[]> {
      this.scored.push([ids, from]);
      return ids.slice(from).map(() => -0.125);
    }
  }

  it('completes plain prompts (string or token ids), n choices, legacy logprobs and streaming', async () => {
    s = await start({ model: new TextModel() });
    const r = await s.client.completions.create({
      model: 'fake-model',
      prompt: 'Say hello',
      n: 2,
      seed: 1,
      logprobs: 2,
    });
    expect(r.object).toBe('text_completion');
    expect(r.choices.map((c) => [c.index, c.text, c.finish_reason])).toEqual([
      [0, GREETING, 'stop'],
      [1, GREETING, 'stop'],
    ]);
    expect(r.choices[0].logprobs?.tokens?.slice(0, 3)).toEqual(['H', 'e', 'l']);
    expect(r.choices[0].logprobs?.text_offset?.slice(0, 3)).toEqual([0, 1, 2]);
    expect(Object.keys(r.choices[0].logprobs?.top_logprobs?.[0] ?? {})).toHaveLength(2);
    const byIds = await s.client.completions.create({
      model: 'fake-model',
      prompt: [...'<|user|>long\n<|assistant|>'].map((c) => c.codePointAt(0)!),
      max_tokens: 5,
    });
    expect(byIds.choices[0]).toMatchObject({ text: 'xxxxx', finish_reason: 'length' });
    const stream = await s.client.completions.create({
      model: 'fake-model',
      prompt: 'Say hello',
      stream: true,
    });
    let text = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.text ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(text).toBe(GREETING);
    expect(finish).toBe('stop');
    const suffix = await expectApiError(
      s.client.completions.create({ model: 'fake-model', prompt: 'x', suffix: 'y' }),
    );
    expect(suffix.param).toBe('suffix');
  });

  it('echo puts the scored prompt first; best_of keeps the n best by mean logprob', async () => {
    const model = new TextModel();
    s = await start({ model });
    const echoed = await s.client.completions.create({
      model: 'fake-model',
      prompt: 'Say hello',
      echo: true,
      logprobs: 0,
    });
    const promptIds = model.encodeText('Say hello');
    expect(echoed.choices[0].text).toBe(`Say hello${GREETING}`);
    const lp = echoed.choices[0].logprobs!;
    expect(lp.tokens?.length).toBe(promptIds.length + GREETING.length + 1);
    expect(lp.token_logprobs?.[0]).toBeNull();
    expect(lp.token_logprobs?.[1]).toBe(-0.125);
    expect(model.scored).toEqual([[promptIds, 1]]);
    const best = await s.client.completions.create({
      model: 'fake-model',
      prompt: 'Say hello',
      n: 2,
      best_of: 3,
      seed: 5,
    });
    expect(best.choices).toHaveLength(2);
    expect(best.usage?.completion_tokens).toBe(3 * (GREETING.length + 1));
    const tooFew = await expectApiError(
      s.client.completions.create({ model: 'fake-model', prompt: 'x', n: 3, best_of: 2 }),
    );
    expect(tooFew.param).toBe('best_of');
  });
});
