import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { chatCompletionsUrl, LlmJudge, LlmVoter } from './llm-judge.js';
import { buildHintMessages, buildPrmMessages, formatHintForUser, type JudgeInput } from './prompts.js';

type Scripted = { status?: number; content?: unknown; raw?: string };

let server: Server;
let baseURL: string;
let script: Scripted[] = [];
const seen: Array<{ url: string; auth: string | undefined; body: Record<string, unknown> }> = [];

function handle(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
    seen.push({ url: req.url ?? '', auth: req.headers.authorization, body });
    if (req.url !== '/v1/chat/completions') {
      res.writeHead(404).end('not found');
      return;
    }
    const next = script.shift() ?? { status: 500, raw: 'script exhausted' };
    if (next.raw !== undefined) {
      res.writeHead(next.status ?? 200, { 'content-type': 'application/json' }).end(next.raw);
      return;
    }
    res.writeHead(next.status ?? 200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        id: 'x',
        object: 'chat.completion',
        model: body.model,
        choices: [{ index: 0, message: { role: 'assistant', content: next.content }, finish_reason: 'stop' }],
      }),
    );
  });
}

beforeAll(async () => {
  server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  baseURL = `http://127.0.0.1:${port}/v1`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  script = [];
  seen.length = 0;
});

const input: JudgeInput = {
  messages: [
    { role: 'system', content: 'You are helpful.' },
    { role: 'user', content: [{ type: 'text', text: 'Convert 5 miles to km.' }] },
  ],
  response: 'That is about 8 km.',
  nextState: { role: 'user', content: 'No, I wanted meters, please redo it.' },
};

describe('prompts', () => {
  it('PRM prompt carries output, next state and the boxed instruction', () => {
    const [sys, user] = buildPrmMessages(input);
    expect(sys.role).toBe('system');
    expect(sys.content).toMatch(/redo/);
    expect(sys.content).toContain('\\boxed{-1}');
    expect(user.content).toContain('## Assistant output\nThat is about 8 km.');
    expect(user.content).toContain('## Next state [role: user]\nNo, I wanted meters, please redo it.');
    expect(user.content).toContain('Convert 5 miles to km.');
  });
  it('hint prompt asks for [HINT_START]…[HINT_END] and a boxed verdict', () => {
    const [sys, user] = buildHintMessages(input);
    expect(sys.content).toContain('[HINT_START]');
    expect(user.content).toContain('[HINT_END]');
    expect(user.content).toContain('\\boxed{1}');
    expect(formatHintForUser(' use meters ')).toBe("\n\n[user's hint / instruction]\nuse meters");
  });
});

describe('LlmJudge against a local HTTP server', () => {
  it('builds the completions URL from a root or /v1 base', () => {
    expect(chatCompletionsUrl('http://h:1')).toBe('http://h:1/v1/chat/completions');
    expect(chatCompletionsUrl('http://h:1/v1/')).toBe('http://h:1/v1/chat/completions');
  });

  it('majority of m parallel votes, dropping garbage', async () => {
    script = [
      { content: 'The user asks to redo: (b). \\boxed{-1}' },
      { content: 'garbage with no verdict' },
      { content: 'Initially \\boxed{1} but the user corrected it, so \\boxed{-1}' },
      { content: '\\boxed{1}' },
      { content: '\\boxed{7}' },
    ];
    const judge = new LlmJudge({ baseURL, apiKey: 'sk-test', model: 'prm', votes: 5, maxTokens: 256 });
    const r = await judge.judge(input);
    expect(r.score).toBe(-1);
    expect(r.valid).toBe(3);
    expect(r.agreement).toBeCloseTo(2 / 3);
    expect(r.votes).toHaveLength(5);
    expect(r.votes.filter((v) => v.score === null)).toHaveLength(2);
    expect(r.hint).toBeUndefined();
    expect(r.latencyMs).toBeGreaterThanOrEqual(0);
    expect(seen).toHaveLength(5);
    for (const s of seen) {
      expect(s.auth).toBe('Bearer sk-test');
      expect(s.body).toMatchObject({ model: 'prm', temperature: 1, max_tokens: 256, stream: false });
    }
  });

  it('an HTTP 500 for one vote is an invalid vote, not a crash', async () => {
    script = [{ content: '\\boxed{1}' }, { status: 500, raw: '{"error":"boom"}' }, { content: '\\boxed{1}' }];
    const judge = new LlmJudge({ baseURL, model: 'prm' });
    const r = await judge.judge(input);
    expect(r).toMatchObject({ score: 1, valid: 2, agreement: 1 });
    const failed = r.votes.filter((v) => v.error);
    expect(failed).toHaveLength(1);
    expect(failed[0].error).toMatch(/HTTP 500/);
    expect(failed[0].score).toBeNull();
    expect(seen[0].auth).toBeUndefined();
    expect(seen[0].body.max_tokens).toBeUndefined();
  });

  it('malformed bodies and ties give score 0', async () => {
    script = [{ content: '\\boxed{1}' }, { raw: 'not json' }, { content: '\\boxed{-1}' }, { content: null }];
    const judge = new LlmJudge({ baseURL, model: 'prm', votes: 4, temperature: 0.6 });
    const r = await judge.judge(input);
    expect(r).toMatchObject({ score: 0, valid: 2, agreement: 0 });
    expect(r.votes.filter((v) => v.error)).toHaveLength(2);
    expect(seen[0].body.temperature).toBe(0.6);
  });

  it('an unreachable endpoint yields all-invalid votes and score 0', async () => {
    const dead = createServer();
    await new Promise<void>((resolve) => dead.listen(0, '127.0.0.1', resolve));
    const { port } = dead.address() as AddressInfo;
    await new Promise<void>((resolve) => dead.close(() => resolve()));
    const judge = new LlmJudge({ baseURL: `http://127.0.0.1:${port}`, model: 'prm', votes: 2 });
    const r = await judge.judge(input);
    expect(r).toMatchObject({ score: 0, valid: 0, agreement: 0 });
    expect(r.votes.every((v) => v.score === null && typeof v.error === 'string')).toBe(true);
  });

  it('OPD mode keeps the longest +1 hint over 10 characters', async () => {
    script = [
      { content: '[HINT_START]Use meters.[HINT_END] \\boxed{1}' },
      { content: '[HINT_START]The user wants the result in meters, not kilometers.[HINT_END]\n\\boxed{1}' },
      {
        content:
          '[HINT_START]An even longer hint from a negative vote that must be ignored.[HINT_END] \\boxed{-1}',
      },
    ];
    const judge = new LlmJudge({ baseURL, model: 'prm' });
    const r = await judge.hint(input);
    expect(r.score).toBe(1);
    expect(r.agreement).toBeCloseTo(2 / 3);
    expect(r.hint).toBe('The user wants the result in meters, not kilometers.');
    expect(r.votes.filter((v) => v.score === -1).map((v) => v.hint)).toEqual([
      'An even longer hint from a negative vote that must be ignored.',
    ]);
    expect(String((seen[0].body.messages as Array<{ content: string }>)[0].content)).toContain(
      '[HINT_START]',
    );
  });

  it('OPD mode without a usable hint returns hint null', async () => {
    script = [
      { content: '[HINT_START]too short[HINT_END] \\boxed{1}' },
      { status: 500, raw: 'down' },
      { content: '\\boxed{-1}' },
    ];
    const judge = new LlmJudge({ baseURL, model: 'prm' });
    const r = await judge.hint(input);
    expect(r.hint).toBeNull();
    expect(r.score).toBe(0);
    expect(r.valid).toBe(2);
  });

  it('rejects a non-positive vote count', () => {
    expect(() => new LlmJudge({ baseURL, model: 'prm', votes: 0 })).toThrow(RangeError);
  });
});

describe('LlmJudge metrics', () => {
  it('counts its votes and turns in the given registry', async () => {
    script = [{ content: '\\boxed{1}' }, { content: '\\boxed{1}' }, { content: 'no box' }];
    const registry = new Registry();
    const judge = new LlmJudge({ baseURL, model: 'prm', registry });
    await judge.judge(input);
    script = [
      { content: '[HINT_START]Give the result in meters.[HINT_END] \\boxed{1}' },
      { status: 500 },
      {},
    ];
    await judge.hint(input);
    const text = await registry.metrics();
    expect(text).toContain('clawray_judge_votes_total{backend="llm",result="positive"} 3');
    expect(text).toContain('clawray_judge_votes_total{backend="llm",result="invalid"} 3');
    expect(text).toContain('clawray_judge_vote_latency_seconds_count{backend="llm"} 6');
    expect(text).toContain('clawray_judge_turns_total{result="positive"} 2');
    expect(text).toContain('clawray_judge_turn_latency_seconds_count 2');
    expect(text).toContain('clawray_judge_agreement_ratio_sum 2');
    expect(text).toContain('clawray_judge_hints_total{result="accepted"} 1');
  });
});

describe('LlmVoter.serving (a judge model the job serves itself)', () => {
  it('votes with the given completion and the voter’s sampling; a failing completion is an invalid vote', async () => {
    const seen: unknown[] = [];
    const voter = LlmVoter.serving(
      { model: 'judge', temperature: 0.6, maxTokens: 64 },
      async (messages, sampling) => {
        seen.push(sampling);
        return messages.some((m) => m.content.includes('thanks')) ? 'fulfilled \\boxed{1}' : '\\boxed{-1}';
      },
    );
    const input = {
      messages: [{ role: 'user', content: 'hi' }],
      response: 'hello',
      nextState: { role: 'user', content: 'thanks' },
    };
    expect((await voter.voteOn(input, 'prm')).score).toBe(1);
    expect(seen).toEqual([{ temperature: 0.6, maxTokens: 64 }]);
    expect(voter.url).toBe('in-job:judge');
    const broken = LlmVoter.serving({ model: 'judge' }, async () => {
      throw new Error('the judge prompt is 5000 tokens');
    });
    expect(await broken.voteOn(input, 'prm')).toMatchObject({
      score: null,
      error: 'the judge prompt is 5000 tokens',
    });
  });
});
