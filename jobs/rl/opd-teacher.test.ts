import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JudgePanel } from '../../actors/judge/judge-panel.js';
import type { JudgeInput } from '../../actors/judge/prompts.js';
import type { JudgeVote } from '../../actors/judge/votes.js';
import { initRandomModel } from '../../actors/models/model-init.js';
import { RolloutModel } from '../../actors/rollout/rollout-model.js';
import type { ScoredTokens, TopLogprobRows } from '../../actors/rollout/top-k.js';
import { decodeRecord, encodeRecord, RECORD_FIELD } from '../buffer/record-codec.js';
import type { TrajectoryRecord } from '../buffer/types.js';
import { buildSamples } from './batches.js';
import { liveRecord } from './fakes.test-support.js';
import { type JudgeStageOptions, judgeEpisode } from './judging.js';
import { type TeacherReply, type TopKScorer, teachTurn, topKOverlap } from './opd-teacher.js';

const rows = (k: number, ids: number[][]): TopLogprobRows => ({
  k,
  ids: ids.flat(),
  logprobs: ids.flat().map(() => -1),
});

describe('topKOverlap', () => {
  it('is the mean over positions of |teacher ∩ student| / K', () => {
    // K = 2; position 1 shares {3} (1/2), position 2 shares {1, 2} (2/2): (0.5 + 1) / 2 = 0.75
    const teacher = rows(2, [
      [3, 7],
      [1, 2],
    ]);
    const student = rows(2, [
      [5, 3],
      [2, 1],
    ]);
    expect(topKOverlap(teacher, student)).toBe(0.75);
    expect(topKOverlap(teacher, teacher)).toBe(1);
    expect(topKOverlap(rows(2, [[0, 1]]), rows(2, [[2, 3]]))).toBe(0);
    expect(topKOverlap(rows(2, []), rows(2, []))).toBe(0);
    expect(() => topKOverlap(rows(2, [[0, 1]]), rows(1, [[0]]))).toThrow(RangeError);
  });
});

/** The record as judged with `reward` (the judgement the judge stage adds before the teacher). */
const judgedAt = (r: TrajectoryRecord, reward: number): TrajectoryRecord => ({
  ...r,
  judgement: { reward, step: null, feedback: null, atLeastOne: false },
});

describe('teachTurn (hint selection)', () => {
  const record = (): TrajectoryRecord => liveRecord('t', 0.7);
  // Each hint's prompt is [its length]; the teacher's rows under it are given per length.
  const scorer =
    (byPrompt: Map<number, number[][]>, calls: number[][]): TopKScorer =>
    async (prompt, _response, temperature, k) => {
      calls.push([...prompt, temperature, k]);
      const top = rows(k, byPrompt.get(prompt[0])!);
      return { logprobs: [-0.1, -0.2], top } satisfies ScoredTokens;
    };
  const student = rows(2, [
    [1, 2],
    [3, 4],
  ]);

  it('topk-overlap keeps the candidate with the highest overlap; a tie goes to the longest', async () => {
    const hints = ['a hint of 18 chars', 'hint of 14 chr', 'a much longer hint, 29 chars.'];
    const teacher = new Map([
      // 'hint of 14 chr': overlap (2/2 + 1/2)/2 = 0.75, the best
      [
        14,
        [
          [1, 2],
          [3, 9],
        ],
      ],
      [
        18,
        [
          [1, 9],
          [8, 9],
        ],
      ], // 0.25
      [
        29,
        [
          [9, 8],
          [3, 7],
        ],
      ], // 0.25
    ]);
    const calls: number[][] = [];
    const r = record();
    await teachTurn(r, hints, (h) => [h.length], {
      teacher: async () => [],
      distill: {
        k: 2,
        hintSelect: 'topk-overlap',
        teacherTopK: scorer(teacher, calls),
        studentTopK: async () => ({ logprobs: [], top: student }),
      },
    });
    expect(r.hint).toBe('hint of 14 chr');
    expect(r.teacher).toMatchObject({ hintOverlap: 0.75, hintCandidates: 3, logprobs: [-0.1, -0.2] });
    expect(r.teacher?.topK?.ids).toEqual([1, 2, 3, 9]);
    // Every candidate scored once, at the turn's temperature and K.
    expect(calls.map((c) => c[0]).sort()).toEqual([14, 18, 29]);
    expect(calls.every((c) => c[1] === 0.7 && c[2] === 2)).toBe(true);

    // Equal overlaps: the longest wins.
    const tie = record();
    teacher.set(14, [
      [9, 8],
      [3, 7],
    ]);
    await teachTurn(tie, hints, (h) => [h.length], {
      teacher: async () => [],
      distill: {
        k: 2,
        hintSelect: 'topk-overlap',
        teacherTopK: scorer(teacher, []),
        studentTopK: async () => ({ logprobs: [], top: student }),
      },
    });
    expect(tie.hint).toBe('a much longer hint, 29 chars.');
  });

  it('longest scores only the judge’s pick (the first hint); no usable hint means no teacher call', async () => {
    const calls: number[][] = [];
    const teacher = new Map([
      [
        29,
        [
          [1, 2],
          [3, 4],
        ],
      ],
    ]);
    const r = record();
    const distill = { k: 2, hintSelect: 'longest' as const, teacherTopK: scorer(teacher, calls) };
    await teachTurn(r, ['a much longer hint, 29 chars.', 'a hint of 18 chars'], (h) => [h.length], {
      teacher: async () => [],
      distill,
    });
    expect(r.hint).toBe('a much longer hint, 29 chars.');
    expect(calls).toHaveLength(1);
    expect(r.teacher?.hintOverlap).toBeNull();
    const none = record();
    await teachTurn(none, [''], (h) => [h.length], { teacher: async () => [], distill });
    expect(none.hint).toBeNull();
    expect(calls).toHaveLength(1);
    expect(none.teacher).toBeNull();
  });
});

describe('judgeEpisode with top-K distillation on a real engine', () => {
  const root = mkdtempSync(join(tmpdir(), 'clawray-opd-topk-'));
  let model: RolloutModel;

  beforeAll(async () => {
    initRandomModel({ preset: 'tiny', outDir: join(root, 'tiny'), seed: 3 });
    model = await RolloutModel.load({ modelDir: join(root, 'tiny') });
  });
  afterAll(async () => {
    await model.close();
    rmSync(root, { recursive: true, force: true });
  });

  /** A live turn the engine answered at T = 0.7, with the user's reaction as its next state. */
  async function liveTurn(id: string): Promise<TrajectoryRecord> {
    const messages = [{ role: 'user', content: 'What is the boiling point of water?' }];
    const promptTokenIds = model.encodeChat(messages);
    const out = await model.generate({ promptTokenIds, maxTokens: 8, temperature: 0.7, seed: 1 });
    return liveRecord(id, 0.7, {
      messages,
      promptTokenIds,
      tokenIds: out.tokenIds,
      logprobs: out.logprobs,
      nextState: { role: 'user', content: 'no, in Celsius please' },
    });
  }

  /** m = 3 OPD votes, each +1 with its own hint (the judge's candidates). */
  function panel(hints: string[]): JudgePanel {
    let i = 0;
    const voter = {
      async vote(_input: JudgeInput): Promise<JudgeVote> {
        return { score: 1, hint: hints[i++ % hints.length], latencyMs: 0 };
      },
    };
    return new JudgePanel([voter], { votes: hints.length, mode: 'opd', registry: new Registry() });
  }

  const engineScorer =
    (prompts: number[][]): TopKScorer =>
    async (prompt, response, temperature, k) => {
      prompts.push(prompt);
      return model.engine.computeTopLogprobs([...prompt, ...response], prompt.length, temperature, k);
    };

  const options = (p: JudgePanel, o: Partial<JudgeStageOptions>): JudgeStageOptions => ({
    panel: p,
    kind: 'turn',
    opd: true,
    prm: false,
    teacher: async () => {
      throw new Error('top-K mode scores through distill.teacherTopK');
    },
    encodeChat: (messages) => model.encodeChat(messages),
    ...o,
  });

  it('stores the teacher’s top-K (at the turn’s temperature) in the record, and batches train on it', async () => {
    const hints = ['Answer in Celsius.', 'Give the answer in degrees Celsius.', 'Use Celsius units.'];
    const prompts: number[][] = [];
    const [r] = await judgeEpisode(
      [await liveTurn('a')],
      options(panel(hints), {
        distill: { k: 4, hintSelect: 'longest', teacherTopK: engineScorer(prompts) },
      }),
      null,
    );
    expect(r.hint).toBe('Give the answer in degrees Celsius.');
    expect(prompts).toHaveLength(1);
    const top = r.teacher?.topK as TopLogprobRows;
    const L = r.tokenIds.length;
    expect(top.k).toBe(4);
    expect(top.ids).toHaveLength(4 * L);
    // Exactly the engine's top-K of the response under the hint-augmented prompt, at T = 0.7.
    const direct = await model.engine.computeTopLogprobs(
      [...prompts[0], ...r.tokenIds],
      prompts[0].length,
      0.7,
      4,
    );
    expect(top).toEqual(direct.top);
    expect(r.teacher?.logprobs).toEqual(direct.logprobs);
    // The hint is in the teacher's prompt, not the student's.
    expect(prompts[0].length).toBeGreaterThan(r.promptTokenIds.length);
    // A record with top-K rows goes through the Redis codec whole.
    expect(decodeRecord(RECORD_FIELD, encodeRecord(r).bytes).teacher?.topK).toEqual(top);

    // opd: the top-K KL is the objective (advantage 0); combine: w_rl·A in PPO, w_opd on the KL.
    const opd = buildSamples([[[judgedAt(r, 1)]]], 0, {
      method: 'opd',
      samplesPerPrompt: 1,
    });
    expect(opd.samples[0]).toMatchObject({
      advantages: 0,
      distillWeight: 1,
      teacherTopK: top,
      temperature: 0.7,
    });
    const combine = buildSamples([[[judgedAt(r, -1)]]], 0, {
      method: 'combine',
      samplesPerPrompt: 1,
      combine: { opdWeight: 0.5, rlWeight: 2 },
    });
    expect(combine.samples[0]).toMatchObject({ advantages: -2, distillWeight: 0.5, teacherTopK: top });
  });

  it('distillOn teacher: the teacher’s greedy reply under the hint, the student’s logprobs of it unhinted, and the batch trains on that reply', async () => {
    const hints = ['Answer in Celsius.'];
    const turn = await liveTurn('c');
    const generated: number[][] = [];
    const [r] = await judgeEpisode(
      [turn],
      options(panel(hints), {
        distill: { k: 4, hintSelect: 'longest', teacherTopK: engineScorer([]) },
        teacherReply: {
          generate: async (prompt, maxTokens) => {
            generated.push(prompt);
            return (await model.generate({ promptTokenIds: prompt, maxTokens, temperature: 0 })).tokenIds;
          },
          studentLogprobs: async (prompt, response, temperature) =>
            (await model.engine.computeLogprobs([...prompt, ...response], prompt.length, temperature)).slice(
              -response.length,
            ),
          maxTokens: 6,
          maxContext: 4096,
        },
      }),
      null,
    );
    const reply = r.teacher?.reply as TeacherReply;
    // Written under the hint-augmented prompt, greedily, within maxTokens.
    expect(generated).toHaveLength(1);
    expect(generated[0].length).toBeGreaterThan(turn.promptTokenIds.length);
    const greedy = await model.generate({ promptTokenIds: generated[0], maxTokens: 6, temperature: 0 });
    expect(reply.tokenIds).toEqual(greedy.tokenIds);
    // The teacher's top-K along its own reply (hinted), the student's logprobs of it (unhinted), at T = 0.7.
    const teacherRows = await model.engine.computeTopLogprobs(
      [...generated[0], ...reply.tokenIds],
      generated[0].length,
      0.7,
      4,
    );
    expect(reply.teacherTopK).toEqual(teacherRows.top);
    const unhinted = await model.engine.computeLogprobs(
      [...turn.promptTokenIds, ...reply.tokenIds],
      turn.promptTokenIds.length,
      0.7,
    );
    expect(reply.logprobs).toEqual(unhinted.slice(-reply.tokenIds.length));
    expect(decodeRecord(RECORD_FIELD, encodeRecord(r).bytes).teacher?.reply).toEqual(reply);

    const batch = (distillOn: 'student' | 'teacher' | 'both') =>
      buildSamples([[[judgedAt(r, 1)]]], 0, {
        method: 'opd',
        samplesPerPrompt: 1,
        distillOn,
      }).samples;
    const own = { tokenIds: [...turn.promptTokenIds, ...turn.tokenIds], teacherTopK: r.teacher?.topK };
    const teachers = {
      tokenIds: [...turn.promptTokenIds, ...reply.tokenIds],
      responseStart: turn.promptTokenIds.length,
      oldLogprobs: reply.logprobs,
      advantages: 0,
      distillWeight: 1,
      teacherTopK: reply.teacherTopK,
      temperature: 0.7,
    };
    expect(batch('student')).toMatchObject([own]);
    expect(batch('teacher')).toMatchObject([teachers]);
    expect(batch('both')).toMatchObject([own, teachers]);
    // No room for a reply in the context: the turn's own tokens are distilled instead.
    const [full] = await judgeEpisode(
      [await liveTurn('d')],
      options(panel(hints), {
        distill: { k: 4, hintSelect: 'longest', teacherTopK: engineScorer([]) },
        teacherReply: {
          generate: async () => {
            throw new Error('no room: never asked');
          },
          studentLogprobs: async () => [],
          maxTokens: 6,
          maxContext: turn.promptTokenIds.length,
        },
      }),
      null,
    );
    expect(full.teacher?.reply).toBeNull();
    expect(
      buildSamples([[[judgedAt(full, 1)]]], 0, {
        method: 'opd',
        samplesPerPrompt: 1,
        distillOn: 'teacher',
      }).samples,
    ).toMatchObject([{ teacherTopK: full.teacher?.topK }]);
  });

  it('topk-overlap scores every candidate against the student’s own top-K and keeps the best', async () => {
    const hints = [
      'Answer in Celsius.',
      'Give the answer in degrees Celsius.',
      'Reply with one number only.',
    ];
    const teacherPrompts: number[][] = [];
    const studentPrompts: number[][] = [];
    const turn = await liveTurn('b');
    const [r] = await judgeEpisode(
      [turn],
      options(panel(hints), {
        distill: {
          k: 4,
          hintSelect: 'topk-overlap',
          teacherTopK: engineScorer(teacherPrompts),
          studentTopK: engineScorer(studentPrompts),
        },
      }),
      null,
    );
    expect(teacherPrompts).toHaveLength(3);
    expect(studentPrompts).toEqual([turn.promptTokenIds]);
    const student = await model.engine.computeTopLogprobs(
      [...turn.promptTokenIds, ...turn.tokenIds],
      turn.promptTokenIds.length,
      0.7,
      4,
    );
    // Candidates are scored longest first, so the i-th teacher prompt is the i-th longest hint's.
    const byLength = [...hints].sort((a, b) => b.length - a.length);
    const scored = await Promise.all(
      teacherPrompts.map(async (p, i) => {
        const t = await model.engine.computeTopLogprobs([...p, ...turn.tokenIds], p.length, 0.7, 4);
        return { hint: byLength[i], top: t.top, overlap: topKOverlap(t.top, student.top) };
      }),
    );
    const best = Math.max(...scored.map((s) => s.overlap));
    // The first (longest) candidate with the best overlap, and its rows, are what the record keeps.
    const winner = scored.find((s) => s.overlap === best)!;
    expect(r.hint).toBe(winner.hint);
    expect(r.teacher?.topK).toEqual(winner.top);
    expect(r.teacher?.hintOverlap).toBe(best);
    expect(r.teacher?.hintCandidates).toBe(3);
    expect(best).toBeGreaterThan(0);
  });
});
