import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { makeRecord } from './buffer.contract.js';
import { decodeRecord, encodeRecord, entryRecord, LEGACY_JSON_FIELD, RECORD_FIELD } from './record-codec.js';
import { parseTrajectoryRecord } from './types.js';

const roundTrip = (value: unknown) => decodeRecord(RECORD_FIELD, encodeRecord(value).bytes);

describe('record codec', () => {
  it('round-trips a record exactly, logprobs bit for bit, in fewer bytes than JSON', () => {
    const r = makeRecord({
      promptTokenIds: [0, 1, 65_535, 65_536, 151_000, 0xffff_ffff],
      tokenIds: [7, 8, 9, 10],
      logprobs: [-0.1, -1 / 3, -1e-300, -0],
      messages: [{ role: 'assistant', content: [{ type: 'text', text: 'hi' }], tool_calls: [{ id: 'x' }] }],
      extra: { track: 'gui', nested: { a: [1, 'b'] } },
      hint: 'look again',
      score: null,
    });
    const encoded = encodeRecord(r);
    expect(encoded.trajectoryId).toBe(r.trajectoryId);
    const back = decodeRecord(RECORD_FIELD, encoded.bytes);
    expect(back).toEqual(r);
    expect(Object.is(back.logprobs[3], -0)).toBe(true);
    const big = makeRecord({
      tokenIds: Array.from({ length: 200 }, (_, i) => 100_000 + i),
      logprobs: Array.from({ length: 200 }, (_, i) => -i / 37),
    });
    expect(encodeRecord(big).bytes.length).toBeLessThan(JSON.stringify(big).length * 0.7);
  });

  it('keeps exactly what the schema keeps: unknown top-level keys dropped, absent optionals absent', () => {
    const r = { ...makeRecord(), bogus: 1 };
    const back = roundTrip(r);
    expect(back).toEqual(parseTrajectoryRecord(r));
    expect('bogus' in back).toBe(false);
    expect('extra' in back).toBe(false);
  });

  it('refuses what the schema refuses, with its message, and token ids that do not fit 32 bits', () => {
    const cases: [unknown, RegExp][] = [
      [{ ...makeRecord(), tokenIds: [1, 'x', 3] }, /tokenIds\.1/],
      [{ ...makeRecord(), promptTokenIds: [-1] }, /promptTokenIds\.0/],
      [{ ...makeRecord(), logprobs: [-1] }, /logprobs: has 1 entries but tokenIds has 3/],
      [{ ...makeRecord(), logprobs: [-1, Number.NaN, 0] }, /logprobs\.1/],
      [{ ...makeRecord(), logprobs: [-1, 0, Number.NEGATIVE_INFINITY] }, /logprobs\.2/],
      [{ ...makeRecord(), logprobs: ['-1', 0, 0] }, /logprobs\.0/],
      [{ ...makeRecord(), tokenIds: [1, 2.5, 3] }, /tokenIds\.1/],
      [{ ...makeRecord(), tokenIds: [1, true, 3] }, /tokenIds\.1/],
      [{ ...makeRecord(), tokenIds: [1, '2', 3] }, /tokenIds\.1/],
      [{ ...makeRecord(), turn: -1 }, /turn/],
      [{ ...makeRecord(), nextState: { content: 'no role' } }, /nextState\.role/],
      [{ ...makeRecord(), tokenIds: undefined }, /tokenIds/],
      [null, /\(record\)/],
      [{ ...makeRecord({ trajectoryId: 'big' }), promptTokenIds: [2 ** 32] }, /"big".*promptTokenIds.*2\^32/],
    ];
    for (const [value, message] of cases) {
      expect(() => encodeRecord(value), String(message)).toThrow(ConfigError);
      expect(() => encodeRecord(value), String(message)).toThrow(message);
    }
  });

  it('decodes legacy JSON, finds the record of an entry wherever it is, refuses one without', () => {
    const r = makeRecord();
    const json = Buffer.from(JSON.stringify(r));
    expect(decodeRecord(LEGACY_JSON_FIELD, json)).toEqual(r);
    expect(entryRecord([Buffer.from(LEGACY_JSON_FIELD), json])).toEqual({
      field: LEGACY_JSON_FIELD,
      value: json,
    });
    const bytes = encodeRecord(r).bytes;
    expect(entryRecord([Buffer.from(RECORD_FIELD), bytes])).toEqual({ field: RECORD_FIELD, value: bytes });
    expect(
      entryRecord([Buffer.from('t'), Buffer.from('traj-1'), Buffer.from('p'), Buffer.from('k:1')]),
    ).toEqual({
      payloadKey: 'k:1',
    });
    expect(() => entryRecord([Buffer.from('other'), json])).toThrow(/without a record field/);
    expect(() => decodeRecord('other', json)).toThrow(/not a trajectory record/);
  });
});
