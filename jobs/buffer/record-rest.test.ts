import { describe, expect, it } from 'vitest';
import { checkRecordRest } from './record-rest.js';
import { RecordRestSchema } from './types.js';

const base = () => ({
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
});

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
  ['undefined content', (r) => ({ ...r, nextState: { role: 'tool', content: undefined } })],
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
    for (const [name, make] of cases.slice(0, 6)) {
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
