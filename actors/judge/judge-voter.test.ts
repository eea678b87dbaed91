import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import {
  type FakeOpenAiServer,
  lastMessageText,
  nextStateText,
  startFakeOpenAiServer,
} from '../../test/helpers/fake-openai-server.js';
import { writeTinyPrm } from '../../test/helpers/tiny-prm.js';
import { JudgeVoter, type JudgeVoterOptions } from './judge-voter.js';
import type { JudgeInput } from './prompts.js';

const root = mkdtempSync(join(tmpdir(), 'clawray-judge-voter-'));
let server: FakeOpenAiServer;
let prmDir: string;

/** Replies by what the judge prompt contains, so the order of parallel requests does not matter. */
function respond(body: Record<string, unknown>) {
  const next = nextStateText(body);
  if (next.includes('server error')) return { status: 500, raw: '{"error":"boom"}' };
  if (lastMessageText(body).includes('[HINT_END]')) {
    return next.includes('meters')
      ? { content: '[HINT_START]Give the distance in meters, as the user asked.[HINT_END] \\boxed{1}' }
      : { content: 'Nothing to learn here. \\boxed{-1}' };
  }
  if (next.includes('redo')) return { content: 'The user asks to redo: (b). \\boxed{-1}' };
  if (next.includes('thanks')) return { content: 'Positive: (a). \\boxed{1}' };
  return { content: 'no verdict' };
}

const turn = (next: string | null, extra: Partial<JudgeInput> = {}): JudgeInput => ({
  messages: [{ role: 'user', content: 'Convert 5 miles to km.' }],
  response: 'That is about 8 km, so \\boxed{8}.',
  nextState: next === null ? null : { role: 'user', content: next },
  ...extra,
});

beforeAll(async () => {
  server = await startFakeOpenAiServer(respond);
  prmDir = writeTinyPrm(join(root, 'prm')).dir;
});

afterAll(async () => {
  await server.close();
  rmSync(root, { recursive: true, force: true });
});

function configError(options: unknown): ConfigError {
  try {
    new JudgeVoter(options as JudgeVoterOptions, { registry: new Registry() });
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('JudgeVoter options', () => {
  it('are checked at construction, naming the field', () => {
    expect(configError({ backend: 'llm', model: 'prm' }).message).toMatch(
      /invalid judge voter options: baseURL: .*expected string/,
    );
    expect(configError({ backend: 'llm', baseURL: 'ftp://x', model: 'prm' }).message).toContain(
      'baseURL: must be an http(s) URL',
    );
    expect(configError({ backend: 'llm', baseURL: 'http://h', model: 'p', mode: 'x' }).message).toMatch(
      /^.*mode:/,
    );
    expect(configError({ backend: 'llm', baseURL: 'http://h', model: 'p', temprature: 1 }).message).toContain(
      'temprature',
    );
    expect(configError({ backend: 'gpt' }).message).toMatch(/backend: .*'llm' \| 'onnx-prm' \| 'rule'/);
    expect(configError(undefined).fields.field).toBe('backend');
    expect(configError({ backend: 'rule', rule: 'vibes' }).message).toMatch(/rule: .*boxed-answer/);
    expect(configError({ backend: 'onnx-prm', modelDir: prmDir, threshold: 1.5 }).message).toMatch(
      /threshold:/,
    );
    expect(
      configError({ backend: 'llm', baseURL: 'http://h', model: 'p', apiKeyEnv: 'CLAWRAY_TEST_UNSET_KEY' })
        .message,
    ).toContain('apiKeyEnv: CLAWRAY_TEST_UNSET_KEY is not set');
    expect(
      configError({ backend: 'llm', baseURL: 'http://h', model: 'p', apiKey: 'k', apiKeyEnv: 'K' }).message,
    ).toContain('apiKeyEnv: give apiKey or apiKeyEnv, not both');
  });

  it('a bad ONNX model directory fails construction, naming the file', () => {
    const err = configError({ backend: 'onnx-prm', modelDir: join(root, 'missing') });
    expect(err.message).toContain(join(root, 'missing'));
    const noTokenizer = writeTinyPrm(join(root, 'no-tokenizer')).dir;
    rmSync(join(noTokenizer, 'tokenizer.json'));
    expect(configError({ backend: 'onnx-prm', modelDir: noTokenizer }).message).toContain(
      join(noTokenizer, 'tokenizer.json'),
    );
  });
});

describe('JudgeVoter, llm backend', () => {
  const llm = (extra: Record<string, unknown> = {}, registry = new Registry()) =>
    new JudgeVoter({ backend: 'llm', baseURL: server.baseURL, model: 'judge', ...extra }, { registry });

  it('gives one boxed vote per call, with text and latency', async () => {
    const voter = llm({ temperature: 0.6, maxTokens: 64, apiKey: 'sk-1' });
    expect(await voter.ready()).toEqual({
      backend: 'llm',
      mode: 'prm',
      model: 'judge',
      url: `${server.baseURL}/chat/completions`,
    });
    const before = server.requests.length;
    const vote = await voter.vote(turn('No, redo it in meters.'));
    expect(vote).toMatchObject({
      score: -1,
      backend: 'llm',
      text: 'The user asks to redo: (b). \\boxed{-1}',
    });
    expect(vote.hint).toBeUndefined();
    expect(vote.latencyMs).toBeGreaterThan(0);
    expect(server.requests.length).toBe(before + 1);
    const sent = server.requests[before];
    expect(sent.authorization).toBe('Bearer sk-1');
    expect(sent.body).toMatchObject({ model: 'judge', temperature: 0.6, max_tokens: 64, stream: false });
    expect((await voter.vote(turn('great, thanks'))).score).toBe(1);
  });

  it('reads the API key from the environment variable named by apiKeyEnv', async () => {
    process.env.CLAWRAY_TEST_JUDGE_KEY = 'sk-env';
    try {
      const before = server.requests.length;
      await llm({ apiKeyEnv: 'CLAWRAY_TEST_JUDGE_KEY' }).vote(turn('thanks'));
      expect(server.requests[before].authorization).toBe('Bearer sk-env');
    } finally {
      delete process.env.CLAWRAY_TEST_JUDGE_KEY;
    }
  });

  it('OPD mode, by option or per call, extracts the hint', async () => {
    const opd = await llm({ mode: 'opd' }).vote(turn('I wanted meters!'));
    expect(opd).toMatchObject({ score: 1, hint: 'Give the distance in meters, as the user asked.' });
    const perCall = await llm().vote(turn('ok'), { mode: 'opd' });
    expect(perCall).toMatchObject({ score: -1, hint: null });
  });

  it('backend failures and missing evidence are invalid votes, not exceptions', async () => {
    const failed = await llm().vote(turn('server error please'));
    expect(failed.score).toBeNull();
    expect(failed.error).toMatch(/HTTP 500/);
    expect(await llm().vote(turn('hmm'))).toMatchObject({ score: null, text: 'no verdict' });
    expect(await llm({ mode: 'opd' }).vote(turn(null))).toMatchObject({
      score: null,
      hint: null,
      error: 'no next state to judge the turn by',
    });
    const dead = new JudgeVoter(
      { backend: 'llm', baseURL: 'http://127.0.0.1:9', model: 'x', timeoutMs: 2000 },
      { registry: new Registry() },
    );
    expect((await dead.vote(turn('thanks'))).error).toBeTruthy();
  });

  it('a malformed input is the caller’s bug and throws ConfigError naming the field', async () => {
    const voter = llm();
    await expect(voter.vote({ messages: [], nextState: null } as unknown as JudgeInput)).rejects.toThrow(
      /invalid judge input: response:/,
    );
    await expect(
      voter.vote({ messages: 'hi', response: '', nextState: null } as unknown as JudgeInput),
    ).rejects.toBeInstanceOf(ConfigError);
  });

  it('counts votes by result and observes their latency', async () => {
    const registry = new Registry();
    const voter = llm({}, registry);
    await Promise.all([
      voter.vote(turn('thanks')),
      voter.vote(turn('thanks!')),
      voter.vote(turn('redo')),
      voter.vote(turn('hmm')),
      voter.vote(turn('server error')),
    ]);
    const votes = await registry.getSingleMetric('clawray_judge_votes_total')!.get();
    const byResult = Object.fromEntries(votes.values.map((v) => [v.labels.result, v.value]));
    expect(byResult).toEqual({ positive: 2, negative: 1, invalid: 2 });
    expect(votes.values.every((v) => v.labels.backend === 'llm')).toBe(true);
    const text = await registry.metrics();
    expect(text).toContain('clawray_judge_vote_latency_seconds_count{backend="llm"} 5');
  });
});

describe('JudgeVoter, onnx-prm backend', () => {
  it('votes +1/-1 from the positive-class probability, and reports what it loaded', async () => {
    const registry = new Registry();
    const voter = new JudgeVoter({ backend: 'onnx-prm', modelDir: prmDir, provider: 'cpu' }, { registry });
    expect(await voter.ready()).toEqual({
      backend: 'onnx-prm',
      labels: ['bad', 'good'],
      positiveLabel: 'good',
      threshold: 0.5,
      provider: 'cpu',
    });
    const good = await voter.vote(turn('thanks, great, perfect'));
    expect(good).toMatchObject({ score: 1, backend: 'onnx-prm' });
    expect(good.probability).toBeGreaterThan(0.5);
    const bad = await voter.vote(turn('wrong, redo it again'));
    expect(bad.score).toBe(-1);
    expect(bad.probability).toBeLessThan(0.5);
    expect(await voter.vote(turn(null))).toMatchObject({
      score: null,
      error: 'no next state to judge the turn by',
    });
    expect(await voter.vote(turn('thanks'), { mode: 'opd' })).toMatchObject({ score: null, hint: null });
    const text = await registry.metrics();
    expect(text).toContain('clawray_judge_votes_total{backend="onnx-prm",result="positive"} 1');
    expect(text).toContain('clawray_judge_votes_total{backend="onnx-prm",result="negative"} 1');
    expect(text).toContain('clawray_judge_votes_total{backend="onnx-prm",result="invalid"} 2');
    await voter[Symbol.asyncDispose]();
  });

  it('a model that onnxruntime cannot load rejects ready() and gives invalid votes', async () => {
    const dir = writeTinyPrm(join(root, 'corrupt')).dir;
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(dir, 'model.onnx'), 'garbage');
    const voter = new JudgeVoter({ backend: 'onnx-prm', modelDir: dir }, { registry: new Registry() });
    await expect(voter.ready()).rejects.toThrow(`${join(dir, 'model.onnx')}: onnxruntime cannot load it`);
    const vote = await voter.vote(turn('thanks'));
    expect(vote.score).toBeNull();
    expect(vote.error).toContain('model.onnx');
    await voter[Symbol.asyncDispose]();
  });
});

describe('JudgeVoter, rule backend', () => {
  const rule = (name: string) =>
    new JudgeVoter({ backend: 'rule', rule: name } as JudgeVoterOptions, { registry: new Registry() });

  it('boxed-answer compares the last box with reference.answer', async () => {
    const voter = rule('boxed-answer');
    expect(await voter.ready()).toEqual({ backend: 'rule', rule: 'boxed-answer' });
    expect(await voter.vote(turn(null, { reference: { answer: '8' } }))).toMatchObject({
      score: 1,
      reward: 1,
    });
    expect(await voter.vote(turn(null, { reference: { answer: '8.05' } }))).toMatchObject({
      score: -1,
      reward: -1,
    });
    expect(await voter.vote(turn(null))).toMatchObject({
      score: null,
      error: 'boxed-answer needs reference.answer',
    });
    expect(await voter.vote(turn(null), { mode: 'opd' })).toMatchObject({ score: null, hint: null });
  });

  it('tests-passed maps the pass rate to [-1, 1]; env-reward takes the environment verdict', async () => {
    const tests = rule('tests-passed');
    expect(await tests.vote(turn(null, { reference: { testsPassed: 3, testsTotal: 4 } }))).toMatchObject({
      score: 1,
      reward: 0.5,
    });
    expect(await tests.vote(turn(null, { reference: { testsPassed: 2, testsTotal: 4 } }))).toMatchObject({
      score: 0,
      reward: 0,
    });
    expect((await tests.vote(turn(null, { reference: { testsPassed: 5, testsTotal: 4 } }))).error).toMatch(
      /passed must be in \[0, 4\]/,
    );
    const env = rule('env-reward');
    expect(await env.vote(turn(null, { reference: { reward: -1 } }))).toMatchObject({
      score: -1,
      reward: -1,
    });
    expect((await env.vote(turn(null))).error).toBe('env-reward needs a finite reference.reward');
  });
});
