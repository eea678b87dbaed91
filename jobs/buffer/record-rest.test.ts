import { describe, expect, it } from 'vitest';
import { checkRecordRest } from './record-rest.js';
import { RecordRestSchema } from './types.js';

const base = () => ({
  schemaVersion: 2,
  trajectoryId: 't1',
  sessionId: 's1',
  turn: 2,
  messages: [
    { role: 'system', content: 'be brief' },
    { content: { parts: ['x'] }, role: 'assistant', tool_calls: [{ id: 'c1' }], name: undefined },
  ],
  promptTokenIds: [1, 2],
  tokenIds: [3],
  logprobs: [-0.5],
  nextState: { role: 'tool', content: 'ok' },
  votes: [1, -1, 0],
  score: 0.5,
  hint: null,
  weightVersion: 0,
  createdAtMs: 1_700_000_000_000,
  responseText: 'ok',
  sampling: { temperature: 0.6, topP: 0.95, topK: 20, seed: 3 },
  group: { id: 'g1', size: 4, index: 2 },
  episode: { id: 'e1', turns: 3, finalMessages: null },
  task: { id: 'task-1', reference: { reward: 1, answer: '42' } },
  requestId: null,
  judgement: null as unknown,
  teacher: null as unknown,
});

const judgement = {
  reward: 0.5,
  step: { index: 2, span: [4, 9], reward: 1.5, outcome: 1 },
  feedback: { correction: 'in Celsius', at: '2026-11-29T00:00:00Z' },
  atLeastOne: false,
};
const teacher = {
  logprobs: [-0.2],
  topK: { k: 2, ids: [3, 4], logprobs: [-0.2, -2] },
  reply: { tokenIds: [5], logprobs: [-0.3], teacherTopK: { k: 2, ids: [5, 6], logprobs: [-0.1, -3] } },
  hintOverlap: 0.5,
  hintCandidates: 2,
};

/** Keys (in order) and values all the way down, so a key-order difference shows. */
function shape(x: unknown): unknown {
  if (typeof x !== 'object' || x === null) return x;
  return [
    Array.isArray(x) ? 'array' : Object.getPrototypeOf(x) === Object.prototype ? 'object' : 'other',
    Reflect.ownKeys(x).map((k) => [String(k), shape((x as Record<PropertyKey, unknown>)[k])]),
  ];
}

const cases: [string, (r: Record<string, unknown>) => unknown][] = [
  ['an ordinary record', (r) => r],
  ['unknown top-level keys', (r) => ({ zz: 1, ...r, extraField: 'x' })],
  ['extra', (r) => ({ ...r, extra: { b: 1, 1: 2, a: undefined } })],
  ['explicit undefined extra', (r) => ({ ...r, extra: undefined })],
  ['null nextState, a hint, a null score', (r) => ({ ...r, nextState: null, hint: 'h', score: null })],
  ['judged, with a teacher', (r) => ({ ...r, judgement, teacher })],
  [
    'a live turn, keys out of order',
    (r) => ({
      ...r,
      task: null,
      requestId: 'chatcmpl-1',
      sampling: { seed: null, topK: null, topP: null, temperature: 0 },
      group: { index: 0, size: 1, id: 'x', other: 1 },
      episode: { finalMessages: [{ role: 'user', content: 'hi' }], turns: 1, id: 'e' },
      judgement: { ...judgement, atLeastOne: true, step: null, feedback: { at: 'now', reward: -1 } },
      teacher: { ...teacher, topK: null, reply: null, hintOverlap: null, hintCandidates: null },
    }),
  ],
  [
    'a reference with every key',
    (r) => ({
      ...r,
      task: {
        id: 't',
        reference: { testsTotal: 2, testsPassed: 1, answer: 'a', custom: null, reward: 0, x: 1 },
      },
    }),
  ],
  ['undefined content', (r) => ({ ...r, nextState: { role: 'tool', content: undefined } })],
  ['undefined custom', (r) => ({ ...r, task: { id: 't', reference: { reward: 0, custom: undefined } } })],
  ['NaN reward in the judgement', (r) => ({ ...r, judgement: { ...judgement, reward: Number.NaN } })],
  ['schema 1', (r) => ({ ...r, schemaVersion: 1 })],
  ['no schemaVersion', (r) => ({ ...r, schemaVersion: undefined })],
  ['topP above 1', (r) => ({ ...r, sampling: { temperature: 1, topP: 1.5, topK: 0, seed: null } })],
  ['fractional seed', (r) => ({ ...r, sampling: { temperature: 1, topP: 1, topK: 0, seed: 0.5 } })],
  ['group of size 0', (r) => ({ ...r, group: { id: 'g', size: 0, index: 0 } })],
  ['episode of no turns', (r) => ({ ...r, episode: { id: 'e', turns: 0, finalMessages: null } })],
  ['empty requestId', (r) => ({ ...r, requestId: '' })],
  [
    'step span of one',
    (r) => ({ ...r, judgement: { ...judgement, step: { ...judgement.step, span: [1] } } }),
  ],
  [
    'string teacher id',
    (r) => ({ ...r, teacher: { ...teacher, topK: { k: 2, ids: ['3', 4], logprobs: [0, 0] } } }),
  ],
  [
    'empty teacher reply',
    (r) => ({ ...r, teacher: { ...teacher, reply: { ...teacher.reply, tokenIds: [] } } }),
  ],
  ['k of 0', (r) => ({ ...r, teacher: { ...teacher, topK: { k: 0, ids: [], logprobs: [] } } })],
  ['feedback without at', (r) => ({ ...r, judgement: { ...judgement, feedback: { reward: 1 } } })],
  ['missing content', (r) => ({ ...r, nextState: { role: 'tool' } })],
  ['empty role', (r) => ({ ...r, messages: [{ role: '', content: 'x' }] })],
  ['empty trajectoryId', (r) => ({ ...r, trajectoryId: '' })],
  ['fractional turn', (r) => ({ ...r, turn: 1.5 })],
  ['negative weightVersion', (r) => ({ ...r, weightVersion: -1 })],
  ['unsafe createdAtMs', (r) => ({ ...r, createdAtMs: 2 ** 53 })],
  ['-0 turn', (r) => ({ ...r, turn: -0 })],
  ['infinite vote', (r) => ({ ...r, votes: [Number.POSITIVE_INFINITY] })],
  ['NaN score', (r) => ({ ...r, score: Number.NaN })],
  ['string vote', (r) => ({ ...r, votes: ['1'] })],
  ['numeric hint', (r) => ({ ...r, hint: 3 })],
  ['missing hint', (r) => ({ ...r, hint: undefined })],
  ['messages not an array', (r) => ({ ...r, messages: {} })],
  ['array extra', (r) => ({ ...r, extra: [1] })],
  [
    'class-instance message',
    (r) => ({
      ...r,
      messages: [
        new (class {
          role = 'x';
          content = 1;
        })(),
      ],
    }),
  ],
  ['null-prototype record', (r) => Object.assign(Object.create(null), r)],
  [
    '__proto__ message key',
    (r) => ({ ...r, messages: [JSON.parse('{"role":"x","content":1,"__proto__":{"a":1}}')] }),
  ],
  ['__proto__ extra key', (r) => ({ ...r, extra: JSON.parse('{"__proto__":{"a":1},"b":2}') })],
  ['symbol extra key', (r) => ({ ...r, extra: { [Symbol('s')]: 1 } })],
  ['an array', () => [1]],
  ['null', () => null],
];

describe('checkRecordRest', () => {
  it.each(cases)('agrees with the schema: %s', (_, make) => {
    const value = make(base());
    const fast = checkRecordRest(value);
    const schema = RecordRestSchema.safeParse(value);
    if (fast !== undefined) {
      // Whatever the hand check accepts, the schema accepts, with the same output.
      expect(schema.success).toBe(true);
      expect(shape(fast)).toEqual(shape(schema.data));
    }
  });

  it('takes the fast path for ordinary records', () => {
    for (const [name, make] of cases.slice(0, 9)) {
      expect(checkRecordRest(make(base())), name).toBeDefined();
    }
  });

  it('copies what the schema copies and shares what it shares', () => {
    const r = base();
    const fast = checkRecordRest(r)!;
    expect(fast.messages).not.toBe(r.messages);
    expect(fast.messages[0]).not.toBe(r.messages[0]);
    expect(fast.votes).not.toBe(r.votes);
    expect(fast.messages[1].content).toBe(r.messages[1].content);
  });
});
