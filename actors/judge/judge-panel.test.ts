import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import {
  type FakeOpenAiServer,
  lastMessageText,
  nextStateText,
  startFakeOpenAiServer,
} from '../../test/helpers/fake-openai-server.js';
import { JudgePanel, judgeTurn, type LocalVoter } from './judge-panel.js';
import { JudgeVoter, type VoteOptions } from './judge-voter.js';
import { LlmJudge } from './llm-judge.js';
import type { JudgeInput } from './prompts.js';
import type { JudgeScore, JudgeVote } from './votes.js';

/**
 * Each judge model has a fixed temper, so the votes of a panel do not depend on the order in
 * which parallel requests arrive: `yes` approves, `no` disapproves, `mute` never boxes a verdict,
 * `down` fails with HTTP 503. In OPD prompts `yes` gives a long hint and `terse` a too-short one.
 */
function respond(body: Record<string, unknown>) {
  const opd = lastMessageText(body).includes('[HINT_END]');
  const next = nextStateText(body);
  switch (body.model) {
    case 'yes':
      return opd
        ? {
            content: `[HINT_START]Answer in meters: the user asked for meters (${next.length}).[HINT_END] \\boxed{1}`,
          }
        : { content: '(a) \\boxed{1}' };
    case 'terse':
      return { content: '[HINT_START]meters[HINT_END] \\boxed{1}' };
    case 'no':
      return { content: '(b) \\boxed{-1}' };
    case 'mute':
      return { content: 'I cannot decide.' };
    default:
      return { status: 503, raw: 'overloaded' };
  }
}

let server: FakeOpenAiServer;
const registries: Registry[] = [];

beforeAll(async () => {
  server = await startFakeOpenAiServer(respond);
});
afterAll(() => server.close());

const input: JudgeInput = {
  messages: [{ role: 'user', content: 'Convert 5 miles to km.' }],
  response: 'About 8 km.',
  nextState: { role: 'user', content: 'No, I wanted meters.' },
};

function voters(models: string[], mode: 'prm' | 'opd' = 'prm'): JudgeVoter[] {
  const registry = new Registry();
  registries.push(registry);
  return models.map(
    (model) => new JudgeVoter({ backend: 'llm', baseURL: server.baseURL, model, mode }, { registry }),
  );
}

/** A voter that answers with scripted scores (cycling) and records what it was asked. */
class Stub implements LocalVoter {
  calls: Array<VoteOptions | undefined> = [];
  constructor(
    readonly scores: Array<JudgeScore | null | 'throw' | 'hang'>,
    readonly delayMs = 0,
  ) {}
  async vote(_input: JudgeInput, options?: VoteOptions): Promise<JudgeVote> {
    const s = this.scores[this.calls.length % this.scores.length];
    this.calls.push(options);
    if (s === 'throw') throw new Error('actor died');
    if (s === 'hang') return new Promise(() => {});
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    return { score: s, latencyMs: this.delayMs };
  }
}

async function metric(registry: Registry, name: string) {
  return (await registry.getSingleMetric(name)!.get()).values;
}

describe('JudgePanel over JudgeVoters', () => {
  it('takes the majority of m parallel votes, dropping invalid ones', async () => {
    const panel = new JudgePanel(voters(['yes', 'yes', 'mute']), { votes: 3, registry: new Registry() });
    const r = await panel.judge(input);
    expect(r).toMatchObject({ score: 1, valid: 2, agreement: 1 });
    expect(r.votes.map((v) => v.score)).toEqual([1, 1, null]);
    expect(r.hint).toBeUndefined();
    expect(r.latencyMs).toBeGreaterThan(0);
  });

  it('a tie, or no valid vote, scores 0', async () => {
    const registry = new Registry();
    const tie = await judgeTurn(voters(['yes', 'no', 'down']), input, { registry });
    expect(tie).toMatchObject({ score: 0, valid: 2, agreement: 0 });
    expect(tie.votes[2]).toMatchObject({ score: null, backend: 'llm' });
    expect(tie.votes[2].error).toMatch(/HTTP 503/);
    const none = await judgeTurn(voters(['mute', 'down', 'mute']), input, { registry });
    expect(none).toMatchObject({ score: 0, valid: 0, agreement: 0 });
    const turns = await metric(registry, 'clawray_judge_turns_total');
    expect(Object.fromEntries(turns.map((v) => [v.labels.result, v.value]))).toEqual({
      neutral: 1,
      no_valid_vote: 1,
    });
  });

  it('returns what LlmJudge returns for the same votes', async () => {
    const viaPanel = await judgeTurn(voters(['no', 'no', 'no']), input, { registry: new Registry() });
    const direct = await new LlmJudge({
      baseURL: server.baseURL,
      model: 'no',
      registry: new Registry(),
    }).judge(input);
    expect(Object.keys(viaPanel).sort()).toEqual(Object.keys(direct).sort());
    expect({ ...viaPanel, latencyMs: 0, votes: [] }).toEqual({ ...direct, latencyMs: 0, votes: [] });
    const strip = (v: JudgeVote) => ({ ...v, latencyMs: 0 });
    expect(viaPanel.votes.map(strip)).toEqual(direct.votes.map(strip));
  });

  it('OPD: keeps the longest +1 hint over 10 characters and counts hints accepted and rejected', async () => {
    const registry = new Registry();
    const panel = new JudgePanel(voters(['yes', 'terse', 'no'], 'opd'), { registry });
    const accepted = await panel.judge(input);
    expect(accepted.score).toBe(1);
    expect(accepted.agreement).toBeCloseTo(2 / 3);
    expect(accepted.hint).toBe(
      `Answer in meters: the user asked for meters (${'No, I wanted meters.'.length}).`,
    );
    const rejected = await new JudgePanel(voters(['terse', 'no', 'down'], 'opd'), { registry }).judge(input);
    expect(rejected).toMatchObject({ score: 0, hint: null });
    // A PRM panel asked for hints per call.
    const perCall = await new JudgePanel(voters(['no', 'down']), { votes: 2, registry }).hint(input);
    expect(perCall).toMatchObject({ score: -1, hint: null });
    const hints = await metric(registry, 'clawray_judge_hints_total');
    expect(Object.fromEntries(hints.map((v) => [v.labels.result, v.value]))).toEqual({
      accepted: 1,
      rejected: 2,
    });
    const text = await registry.metrics();
    expect(text).toContain('clawray_judge_turn_latency_seconds_count 3');
    // Agreement: 2/3, 1/2 (terse +1 vs no −1 tie: majority 0, no vote agrees → 0), 1/1.
    expect(text).toContain('clawray_judge_agreement_ratio_count 3');
    expect(text).toMatch(/clawray_judge_agreement_ratio_sum 1\.666666/);
    expect(text).toContain('clawray_judge_agreement_ratio_bucket{le="0.2"} 1');
    expect(text).toContain('clawray_judge_agreement_ratio_bucket{le="0.999"} 2');
  });

  it('without an explicit mode, OPD voters make an OPD result', async () => {
    const registry = new Registry();
    const opd = await judgeTurn(voters(['yes'], 'opd'), input, { votes: 1, registry });
    expect(opd.hint).toMatch(/^Answer in meters/);
    const prm = await judgeTurn(voters(['yes']), input, { votes: 1, registry });
    expect('hint' in prm).toBe(false);
  });

  it('counts each voter’s votes by result in the voters’ registry', async () => {
    const vs = voters(['yes', 'no', 'mute', 'down']);
    await judgeTurn(vs, input, { votes: 4, registry: new Registry() });
    const votes = await metric(registries[registries.length - 1], 'clawray_judge_votes_total');
    expect(Object.fromEntries(votes.map((v) => [v.labels.result, v.value]))).toEqual({
      positive: 1,
      negative: 1,
      invalid: 2,
    });
  });
});

describe('JudgePanel mechanics', () => {
  it('sends votes round-robin over the replicas, continuing across turns', async () => {
    const stubs = [new Stub([1]), new Stub([1]), new Stub([1])];
    const panel = new JudgePanel(stubs, { votes: 2, registry: new Registry() });
    await panel.judge(input);
    expect(stubs.map((s) => s.calls.length)).toEqual([1, 1, 0]);
    await panel.judge(input);
    expect(stubs.map((s) => s.calls.length)).toEqual([2, 1, 1]);
    // judgeTurn over the same array continues the same rotation.
    await judgeTurn(stubs, input, { votes: 2, registry: new Registry() });
    expect(stubs.map((s) => s.calls.length)).toEqual([2, 2, 2]);
    // More votes than replicas: replicas vote more than once.
    const two = [new Stub([1]), new Stub([-1])];
    const r = await judgeTurn(two, input, { votes: 5, registry: new Registry() });
    expect(two.map((s) => s.calls.length)).toEqual([3, 2]);
    expect(r).toMatchObject({ score: 1, valid: 5, agreement: 3 / 5 });
  });

  it('sends the votes of a turn in parallel', async () => {
    const stubs = [new Stub([1], 150), new Stub([1], 150), new Stub([1], 150)];
    const t0 = performance.now();
    await judgeTurn(stubs, input, { votes: 3, registry: new Registry() });
    expect(performance.now() - t0).toBeLessThan(400);
  });

  it('passes the mode to every voter', async () => {
    const stub = new Stub([1]);
    await judgeTurn([stub], input, { votes: 2, mode: 'opd', registry: new Registry() });
    await judgeTurn([stub], input, { votes: 1, registry: new Registry() });
    expect(stub.calls).toEqual([{ mode: 'opd' }, { mode: 'opd' }, {}]);
  });

  it('a failed or unanswered call is an invalid vote, and is counted', async () => {
    const registry = new Registry();
    const panel = new JudgePanel([new Stub([-1]), new Stub(['throw']), new Stub(['hang']), new Stub([-1])], {
      votes: 4,
      timeoutMs: 200,
      mode: 'opd',
      registry,
    });
    const r = await panel.judge(input);
    expect(r).toMatchObject({ score: -1, valid: 2, agreement: 1, hint: null });
    expect(r.votes[1]).toMatchObject({ score: null, hint: null, error: 'vote call failed: actor died' });
    expect(r.votes[2]).toMatchObject({ score: null, error: 'vote call failed: no vote within 200 ms' });
    expect((await metric(registry, 'clawray_judge_vote_call_errors_total'))[0].value).toBe(2);
  });

  it('rejects malformed inputs and bad settings', async () => {
    const stub = new Stub([1]);
    await expect(
      judgeTurn([stub], { messages: [], response: 3 } as unknown as JudgeInput, { registry: new Registry() }),
    ).rejects.toBeInstanceOf(ConfigError);
    expect(stub.calls).toHaveLength(0);
    expect(() => new JudgePanel([])).toThrow(/at least one voter/);
    expect(() => new JudgePanel([stub], { votes: 0 })).toThrow(RangeError);
    expect(() => new JudgePanel([stub], { timeoutMs: -1 })).toThrow(RangeError);
  });
});
