import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initRandomModel } from '../actors/models/model-init.js';
import { distEntry } from '../common/package-root.js';
import { eventually } from './helpers/processes.js';

describe('clawray serve with a random model, driven by the openai client', () => {
  const root = mkdtempSync(join(tmpdir(), 'clawray-serve-'));
  const modelDir = join(root, 'tiny');
  const record = join(root, 'turns.jsonl');
  const token = 'serve-test-token';
  let child: ChildProcess;
  let baseURL = '';
  let client: OpenAI;

  beforeAll(async () => {
    initRandomModel({ preset: 'tiny', outDir: modelDir, seed: 5 });
    child = spawn(
      process.execPath,
      [
        distEntry('cli/main'),
        'serve',
        '--model',
        modelDir,
        '--port',
        '0',
        '--token',
        token,
        '--record',
        record,
        // Engine settings as a vLLM user passes them: each reaches the engine (see the last test).
        '--dtype',
        'bfloat16',
        '--intra-op-threads',
        '1',
        '--no-spinning',
        '--prefill-chunk-tokens',
        '8',
        '--max-queue',
        '64',
      ],
      { env: { ...process.env, CLAWRAY_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    baseURL = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const match = / on (http:\/\/\S+\/v1)/.exec(line);
        if (match) resolve(match[1]);
      });
      child.once('exit', (code) => reject(new Error(`clawray serve exited with ${code}`)));
    });
    client = new OpenAI({ baseURL, apiKey: token, maxRetries: 0 });
  });
  afterAll(() => {
    child.kill('SIGKILL');
    rmSync(root, { recursive: true, force: true });
  });

  it('answers chat completions with the engine’s token ids and logprobs', async () => {
    const res = await client.chat.completions.create({
      model: 'tiny',
      messages: [{ role: 'user', content: 'hello' }],
      max_tokens: 8,
      logprobs: true,
      top_logprobs: 2,
      seed: 1,
    });
    const choice = res.choices[0] as (typeof res.choices)[0] & { token_ids: number[] };
    expect(choice.token_ids.length).toBeGreaterThan(0);
    expect(choice.logprobs?.content).toHaveLength(choice.token_ids.length);
    expect(choice.logprobs?.content?.[0].top_logprobs).toHaveLength(2);
    expect(res.usage?.completion_tokens).toBe(choice.token_ids.length);
  });

  it('streams token by token', async () => {
    const stream = await client.chat.completions.create({
      model: 'tiny',
      messages: [{ role: 'user', content: 'stream please' }],
      max_tokens: 10,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    // A random model may write bytes that are no whole character (held back, then one U+FFFD):
    // count tokens, not content chunks.
    expect(chunks[0].choices[0]?.delta.role).toBe('assistant');
    const finished = chunks.find((c) => c.choices[0]?.finish_reason);
    expect(finished?.choices[0]?.finish_reason).toMatch(/stop|length/);
    expect(chunks.at(-1)?.usage?.completion_tokens).toBeGreaterThan(0);
  });

  it('answers response_format json_object with one JSON object, streamed or not', async () => {
    // A random model: biasing a few JSON characters makes it write short objects; the constraint
    // still decides every byte (inside a key '}' is text, after a number ':' is not allowed...).
    const vocab = JSON.parse(readFileSync(join(modelDir, 'tokenizer.json'), 'utf8')).model.vocab as Record<
      string,
      number
    >;
    const bias = Object.fromEntries(['"', ':', '1', '}'].map((c) => [vocab[c], 10]));
    expect(Object.keys(bias)).toHaveLength(4);
    for (const seed of [1, 2, 3]) {
      const res = await client.chat.completions.create({
        model: 'tiny',
        messages: [{ role: 'user', content: 'Reply in JSON.' }],
        response_format: { type: 'json_object' },
        logit_bias: bias,
        max_tokens: 64,
        seed,
      });
      const content = res.choices[0].message.content ?? '';
      expect(res.choices[0].finish_reason, content).toBe('stop');
      const parsed = JSON.parse(content);
      expect(typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed), content).toBe(true);
    }
    // Unbiased and streamed: whatever it writes before max_tokens is the start of an object.
    const stream = await client.chat.completions.create({
      model: 'tiny',
      messages: [{ role: 'user', content: 'Reply in JSON.' }],
      response_format: { type: 'json_object' },
      max_tokens: 24,
      seed: 4,
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text.trimStart().startsWith('{'), text).toBe(true);
  });

  it('records main turns of a session with next_state, and skips side turns', async () => {
    const session = (turn: string, done = false) => ({
      headers: { 'X-Session-Id': 's1', 'X-Turn-Type': turn, ...(done ? { 'X-Session-Done': 'true' } : {}) },
    });
    const first = [{ role: 'user' as const, content: 'first question' }];
    await client.chat.completions.create({ model: 'tiny', messages: first, max_tokens: 4 }, session('main'));
    await client.chat.completions.create({ model: 'tiny', messages: first, max_tokens: 4 }, session('side'));
    const second = [
      ...first,
      { role: 'assistant' as const, content: 'an answer' },
      { role: 'user' as const, content: 'a reply' },
    ];
    await client.chat.completions.create(
      { model: 'tiny', messages: second, max_tokens: 4 },
      session('main', true),
    );
    const lines = await eventually(() => {
      const text = readFileSync(record, 'utf8').trim();
      const rows = text ? text.split('\n').map((l) => JSON.parse(l)) : [];
      return rows.length === 2 ? rows : undefined;
    });
    expect(lines[0].next_state).toMatchObject({ role: 'user', content: 'a reply' });
    expect(lines[1].next_state).toBeNull();
    for (const row of lines) expect(JSON.stringify(row)).toContain('token_ids');
  });

  it('refuses a wrong key and serves metrics behind the token', async () => {
    const wrong = new OpenAI({ baseURL, apiKey: 'nope', maxRetries: 0 });
    await expect(
      wrong.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toMatchObject({
      status: 401,
    });
    const metrics = await fetch(`${baseURL.replace(/\/v1$/, '')}/metrics`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const text = await metrics.text();
    expect(text).toMatch(/clawray_rollout_tokens_total [1-9]/);
    expect(text).toContain('clawray_rollout_execution_provider{provider="cpu",kv_cache="host"} 1');
  });

  it('honours the engine flags: a request over --memory-budget-mib is a 400 naming it; a bad value exits 2', async () => {
    const serve = (...flags: string[]) =>
      spawn(
        process.execPath,
        [distEntry('cli/main'), 'serve', '--model', modelDir, '--port', '0', '--no-auth', ...flags],
        {
          env: { ...process.env, CLAWRAY_LOG_LEVEL: 'warn' },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
    const bad = serve('--dtype', 'int4');
    let stderr = '';
    bad.stderr!.on('data', (d) => {
      stderr += d;
    });
    expect(await new Promise((r) => bad.once('exit', r))).toBe(2);
    expect(stderr).toContain('--dtype expects one of float32, float16, bfloat16');
    const zero = serve('--memory-budget-mib', '0');
    let zeroErr = '';
    zero.stderr!.on('data', (d) => {
      zeroErr += d;
    });
    expect(await new Promise((r) => zero.once('exit', r))).toBe(2);
    expect(zeroErr).toContain('--memory-budget-mib expects a number > 0, got 0');

    const small = serve('--memory-budget-mib', '0.05', '--prefill-chunk-tokens', '16');
    try {
      const url = await new Promise<string>((resolve, reject) => {
        createInterface({ input: small.stdout! }).on('line', (line) => {
          const match = / on (http:\/\/\S+\/v1)/.exec(line);
          if (match) resolve(match[1]);
        });
        small.once('exit', (code) => reject(new Error(`clawray serve exited with ${code}`)));
      });
      const c = new OpenAI({ baseURL: url, apiKey: 'none', maxRetries: 0 });
      const err = await c.chat.completions
        .create({ model: 'tiny', messages: [{ role: 'user', content: 'x'.repeat(800) }], max_tokens: 8 })
        .catch((e: unknown) => e);
      expect(err).toMatchObject({ status: 400 });
      expect((err as Error).message).toContain('prefill in chunks of 16');
      expect((err as Error).message).toContain("the rollout engine's memory budget is 51.2 KiB");
      const ok = await c.chat.completions.create({
        model: 'tiny',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 4,
      });
      expect(ok.choices[0].finish_reason).toBeDefined();
    } finally {
      small.kill('SIGKILL');
    }
  });

  // Last: it stops the server.
  it('writes the turns still waiting for their next state when it stops (SIGTERM)', async () => {
    const rows = () =>
      readFileSync(record, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { session_id: string; next_state: unknown; end: string });
    // The README's single request: its record waits for the session's next turn.
    await client.chat.completions.create(
      { model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, logprobs: true },
      { headers: { 'X-Session-Id': 'pending-at-stop', 'X-Turn-Type': 'main' } },
    );
    expect(rows().filter((r) => r.session_id === 'pending-at-stop')).toEqual([]);
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(rows().filter((r) => r.session_id === 'pending-at-stop')).toMatchObject([
      { next_state: null, end: 'shutdown', session_done: false },
    ]);
  });
});
