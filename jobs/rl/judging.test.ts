import { describe, expect, it } from 'vitest';
import { JudgePanel } from '../../actors/judge/judge-panel.js';
import { JudgeVoter } from '../../actors/judge/judge-voter.js';
import type { JudgeInput } from '../../actors/judge/prompts.js';
import type { Feedback } from '../../actors/rollout/turn-feedback.js';
import { parseTrajectoryRecord, type TrajectoryRecord } from '../buffer/types.js';
import { buildSamples } from './batches.js';
import { judgedGroup } from './fakes.test-support.js';
import { FirstSignal, type JudgeStageOptions, judgeEpisode } from './judging.js';

/** A panel that scores +1 when the next state thanks, −1 when it says "no", else 0; records what it read. */
function panel() {
  const seen: JudgeInput[] = [];
  const fake = {
    async judge(input: JudgeInput, o: { mode: string }) {
      seen.push(input);
      const text = String(input.nextState?.content ?? '');
      const score = /thank/i.test(text) ? 1 : /\bno\b/i.test(text) ? -1 : 0;
      return o.mode === 'opd' ? { votes: [], score: 0, hint: null } : { votes: [{ score }], score };
    },
  };
  return { seen, panel: fake as unknown as JudgePanel };
}

function turn(session: string, next: string | null, requestId: string): TrajectoryRecord {
  const [r] = judgedGroup(0, [0], { prefix: session });
  return {
    ...r,
    sessionId: session,
    nextState: next === null ? null : { role: 'user', content: next },
    score: null,
    task: null,
    requestId,
    judgement: null,
  };
}

const options = (p: JudgePanel, o: Partial<JudgeStageOptions> = {}): JudgeStageOptions => ({
  panel: p,
  kind: 'turn',
  opd: false,
  prm: true,
  teacher: async () => [],
  encodeChat: () => [],
  ...o,
});

describe('judgeEpisode on live turns', () => {
  it("uses the user's reward in place of the judge, and a correction as the judge's evidence", async () => {
    const p = panel();
    const feedback = new Map<string, Feedback>([
      ['r1', { reward: 0.5, at: '' }],
      ['r2', { correction: 'no, in Celsius', at: '' }],
    ]);
    const take = (r: TrajectoryRecord) => feedback.get(String(r.requestId));
    const [a] = await judgeEpisode([turn('s', 'thanks!', 'r1')], options(p.panel, { feedback: take }), null);
    expect(a.score).toBe(0.5);
    expect(a.judgement).toEqual({
      reward: 0.5,
      step: null,
      feedback: { reward: 0.5, at: '' },
      atLeastOne: false,
    });
    expect(p.seen).toHaveLength(0);
    const [b] = await judgeEpisode([turn('s', 'thanks!', 'r2')], options(p.panel, { feedback: take }), null);
    expect(p.seen[0].nextState).toEqual({ role: 'user', content: 'no, in Celsius' });
    expect(b.score).toBe(-1);
  });

  it("a reward plugin judges in the panel's place; the user's reward still wins; a NaN reward's turn is dropped, not trained", async () => {
    const p = panel();
    const read: unknown[] = [];
    const turnReward = async (input: Parameters<NonNullable<JudgeStageOptions['turnReward']>>[0]) => {
      read.push(input);
      return /poison/.test(String(input.nextState?.content)) ? Number.NaN : 0.25;
    };
    const take = (r: TrajectoryRecord): Feedback | undefined =>
      r.requestId === 'r3' ? { reward: -1, correction: 'shorter', at: '' } : undefined;
    const o = options(p.panel, { turnReward, feedback: take });
    const [a] = await judgeEpisode([turn('s', 'thanks!', 'r1')], o, null);
    expect(a.score).toBe(0.25);
    expect(a.votes).toEqual([]);
    expect(a.judgement?.reward).toBe(0.25);
    expect(read[0]).toMatchObject({
      sessionId: 's',
      response: 'an answer',
      nextState: { content: 'thanks!' },
    });
    const [b] = await judgeEpisode([turn('s', 'poison', 'r2')], o, null);
    // The record stays valid: the judge's NaN is a null score and a null (not finite) reward.
    expect(b.score).toBeNull();
    expect(b.judgement?.reward).toBeNull();
    expect(() => parseTrajectoryRecord(b)).not.toThrow();
    const [c] = await judgeEpisode([turn('s', 'thanks!', 'r3')], o, null);
    expect(c.score).toBe(-1);
    expect(read).toHaveLength(2);
    expect(p.seen).toHaveLength(0);
    // In the batch, the turn with a NaN reward is dropped (non_finite) and the others train.
    const [ta, tb, tc] = [a, b, c].map((r, i) => ({ ...r, trajectoryId: `t${i}` }));
    const { samples, use } = buildSamples([[[ta]], [[tb]], [[tc]]], 0, { method: 'rl', samplesPerPrompt: 1 });
    expect(samples.map((x) => x.advantages)).toEqual([0.25, -1]);
    expect(use.nonFinite).toEqual(['t1']);
    expect(use.trained).toEqual(['t0', 't2']);
  });

  it("at-least-one: a session's first scored turn is kept at score 0, once, and never an unscored one", async () => {
    const p = panel();
    const firstSignal = new FirstSignal();
    const judge = async (r: TrajectoryRecord) =>
      (await judgeEpisode([r], options(p.panel, { firstSignal }), null))[0];
    expect((await judge(turn('a', null, 'x0'))).judgement?.atLeastOne).toBe(false); // no next state: not scored
    expect((await judge(turn('a', 'ok', 'x1'))).judgement?.atLeastOne).toBe(true);
    expect((await judge(turn('a', 'ok', 'x2'))).judgement?.atLeastOne).toBe(false);
    // A session whose first scored turn has a signal needs no promotion.
    expect((await judge(turn('b', 'thanks', 'y1'))).judgement?.atLeastOne).toBe(false);
    expect((await judge(turn('b', 'ok', 'y2'))).judgement?.atLeastOne).toBe(false);
  });

  it("scores an OPD hint with the teacher at the turn's sampling temperature, and trains at it", async () => {
    const asked: number[] = [];
    const hinted = {
      async judge(_input: JudgeInput, o: { mode: string }) {
        return o.mode === 'opd' ? { votes: [], score: 0, hint: 'use Celsius' } : { votes: [], score: 0 };
      },
    } as unknown as JudgePanel;
    const r = turn('t', 'ok', 'z1');
    r.sampling = { ...r.sampling, temperature: 0.6 };
    const [judged] = await judgeEpisode(
      [r],
      options(hinted, {
        opd: true,
        prm: false,
        teacher: async (_prompt, response, temperature) => {
          asked.push(temperature);
          return response.map(() => -0.1);
        },
      }),
      null,
    );
    expect(asked).toEqual([0.6]);
    const { samples } = buildSamples([[[judged]]], 0, { method: 'opd', samplesPerPrompt: 1 });
    expect(samples[0].temperature).toBe(0.6);
    expect(samples[0].advantages).toEqual([-0.1 + 0.5, -0.1 + 0.7]);
  });

  it('trains each turn at the temperature it was sampled with; a greedy (temperature 0) turn is not trained', () => {
    const [old, greedy, hot] = judgedGroup(0, [1, -1, 1]);
    greedy.sampling = { ...greedy.sampling, temperature: 0 };
    hot.sampling = { ...hot.sampling, temperature: 0.6 };
    const { samples, use } = buildSamples([[old, greedy, hot].map((r) => [r])], 0, {
      method: 'rl',
      samplesPerPrompt: 3,
    });
    expect(samples.map((s) => s.temperature)).toEqual([1, 0.6]);
    expect(use.greedy).toEqual([greedy.trajectoryId]);
    expect(use.trained).toEqual([old.trajectoryId, hot.trajectoryId]);
  });

  it('the trainer keeps a promoted turn at advantage 0 and drops other zero-score turns', () => {
    const promoted = { ...turn('a', 'ok', 'x1'), trajectoryId: 'p' };
    promoted.judgement = { reward: 0, step: null, feedback: null, atLeastOne: true };
    const plain = { ...turn('a', 'ok', 'x2'), trajectoryId: 'q' };
    plain.judgement = { reward: 0, step: null, feedback: null, atLeastOne: false };
    const { samples, use } = buildSamples([[[promoted]], [[plain]]], 0, {
      method: 'rl',
      samplesPerPrompt: 1,
    });
    expect(samples.map((s) => s.advantages)).toEqual([0]);
    expect(use).toMatchObject({ trained: ['p'], noSignal: ['q'] });
  });
});

describe('process + outcome on an env track (a model judge scores steps, the rule keeps the outcome)', () => {
  /** A three-turn episode of a toolcall-like task whose final answer is right (outcome +1). */
  function episode(prefix: string, finalAnswer: string): TrajectoryRecord[] {
    return [0, 1, 2].map((t) => {
      const [r] = judgedGroup(0, [0], { prefix: `${prefix}-t${t}` });
      return {
        ...r,
        trajectoryId: `${prefix}-${t}`,
        turn: t,
        tokenIds: Array.from({ length: 2 + t }, (_, k) => 10 + k),
        logprobs: Array.from({ length: 2 + t }, () => -0.5),
        score: null,
        judgement: null,
        group: { id: 'g', size: 2, index: prefix === 'a' ? 0 : 1 },
        episode: { id: prefix, turns: 3, finalMessages: null },
        responseText: t === 2 ? `the answer is \\boxed{${finalAnswer}}` : `step ${t}`,
      };
    });
  }

  it('keeps the env outcome, adds coef · step score over real spans, and normalises per group and step', async () => {
    // The judge's per-step verdicts: +1, −1, +1 (whatever the turn says).
    const verdicts = [1, -1, 1];
    let call = 0;
    const fake = {
      async judge() {
        const score = verdicts[call++ % 3];
        return { votes: [{ score }], score };
      },
    } as unknown as JudgePanel;
    const o = {
      ...options(fake, {
        kind: 'episode' as const,
        stepRewardCoef: 0.5,
        outcomeRule: 'boxed-answer' as const,
      }),
    };
    const good = await judgeEpisode(episode('a', '42'), o, { reward: 0, answer: '42' });
    // outcome +1 (the rule), final = 1 + 0.5 · mean(1, −1, 1) = 1 + 0.5/3
    expect(good[0].judgement?.reward).toBeCloseTo(1 + 0.5 / 3, 10);
    expect(good.map((r) => r.judgement?.step?.reward)).toEqual([1.5, 0.5, 1.5]);
    expect(good.map((r) => r.judgement?.step?.outcome)).toEqual([1, 1, 1]);
    expect(good.map((r) => r.judgement?.step?.span)).toEqual([
      [0, 2],
      [2, 5],
      [5, 9],
    ]);
    expect(good.map((r) => r.score)).toEqual([1, -1, 1]);
    call = 0;
    const bad = await judgeEpisode(episode('b', '41'), o, { reward: 0, answer: '42' });
    // The outcome is the rule's −1, not the judge's: −1 + 0.5/3 (the old code logged 0 + 0.5·…).
    expect(bad[0].judgement?.reward).toBeCloseTo(-1 + 0.5 / 3, 10);
    expect(bad.map((r) => r.judgement?.step?.reward)).toEqual([-0.5, -1.5, -0.5]);

    // Step-wise: at every step index the two episodes differ by 2 → advantages ±1/√2·… (z-scores).
    const { samples } = buildSamples([[good, bad]], 0, { method: 'rl', samplesPerPrompt: 2 });
    const adv = samples.map((s) => s.advantages as number);
    expect(adv).toHaveLength(6);
    for (let t = 0; t < 3; t++) {
      // good's turn t and bad's turn t: equal and opposite, |z| = 1/√2 with the unbiased std of two values.
      expect(adv[t]).toBeCloseTo(Math.SQRT1_2, 5);
      expect(adv[3 + t]).toBeCloseTo(-Math.SQRT1_2, 5);
    }
  });
});

describe('process rewards from a step rule (judge.stepRule toolcall-step)', () => {
  /** A toolcall episode: a calculator call, the tool's reply, then a boxed answer. */
  function episode(prefix: string, expression: string, result: string, answer: string): TrajectoryRecord[] {
    const system = { role: 'system', content: 'Use the calculator.' };
    const user = { role: 'user', content: 'Sum 45 and 67.' };
    const callMessage = {
      role: 'assistant',
      content: '',
      tool_calls: [
        {
          id: 'call_1',
          type: 'function',
          function: { name: 'calculator', arguments: JSON.stringify({ expression }) },
        },
      ],
    };
    const reply = { role: 'tool', tool_call_id: 'call_1', content: result };
    const final = { role: 'assistant', content: `\\boxed{${answer}}` };
    const prompts = [
      [system, user],
      [system, user, callMessage, reply],
    ];
    return [0, 1].map((t) => {
      const [r] = judgedGroup(0, [0], { prefix: `${prefix}-t${t}` });
      return {
        ...r,
        trajectoryId: `${prefix}-${t}`,
        turn: t,
        messages: prompts[t] as TrajectoryRecord['messages'],
        nextState: (t === 0 ? reply : final) as TrajectoryRecord['nextState'],
        score: null,
        judgement: null,
        group: { id: 'g', size: 2, index: 0 },
        episode: {
          id: prefix,
          turns: 2,
          finalMessages:
            t === 1 ? ([system, user, callMessage, reply, final] as TrajectoryRecord['messages']) : null,
        },
        responseText: t === 0 ? '' : `\\boxed{${answer}}`,
      };
    });
  }

  it("scores the call by its result and the answer by its faithfulness; the rule's outcome stays", async () => {
    const outcomePanel = panel();
    const stepPanel = new JudgePanel([new JudgeVoter({ backend: 'rule', rule: 'toolcall-step' })], {
      votes: 1,
    });
    const o = options(outcomePanel.panel, {
      kind: 'episode',
      stepRewardCoef: 0.5,
      stepPanel,
      outcomeRule: 'boxed-answer',
    });
    // Right call, wrong copy: the call step earns +1 though the outcome is −1.
    const miscopied = await judgeEpisode(episode('a', '45+67', '112', '121'), o, {
      reward: 0,
      answer: '112',
    });
    expect(miscopied.map((r) => r.score)).toEqual([1, -1]);
    expect(miscopied[0].judgement?.reward).toBeCloseTo(-1 + 0.5 * 0, 10);
    expect(miscopied.map((r) => r.judgement?.step?.reward)).toEqual([-0.5, -1.5]);
    // Wrong operation, faithful copy: 0 for the call, +1 for the answer.
    const wrongOp = await judgeEpisode(episode('b', '45*67', '3015', '3015'), o, {
      reward: 0,
      answer: '112',
    });
    expect(wrongOp.map((r) => r.score)).toEqual([0, 1]);
    expect(wrongOp[0].judgement?.reward).toBeCloseTo(-1 + 0.5 * 0.5, 10);
    const solved = await judgeEpisode(episode('c', '45+67', '112', '112'), o, { reward: 0, answer: '112' });
    expect(solved[0].judgement?.reward).toBeCloseTo(1.5, 10);
    // The outcome panel (the rule voters) was never asked about steps.
    expect(outcomePanel.seen).toHaveLength(0);
  });
});
