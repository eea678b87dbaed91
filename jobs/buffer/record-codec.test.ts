import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { makeRecord } from './buffer.contract.js';
import { packr } from './msgpack-writer.js';
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

  it('refuses a record by the field that breaks the contract', () => {
    const teacher = {
      logprobs: [-1, -1, -1],
      topK: null,
      reply: null,
      hintOverlap: null,
      hintCandidates: null,
    };
    const cases: [unknown, RegExp][] = [
      [
        { ...makeRecord(), group: { id: 'g', size: 2, index: 2 } },
        /group\.index: is 2, not below group\.size 2/,
      ],
      [
        { ...makeRecord(), sampling: { temperature: -1, topP: 1, topK: 0, seed: null } },
        /sampling\.temperature/,
      ],
      [{ ...makeRecord(), sampling: undefined }, /sampling/],
      [{ ...makeRecord(), episode: { id: 'e', turns: 1 } }, /episode\.finalMessages/],
      [
        { ...makeRecord(), teacher: { ...teacher, logprobs: [-1] } },
        /teacher\.logprobs: has 1 entries but tokenIds has 3/,
      ],
      [
        { ...makeRecord(), teacher: { ...teacher, topK: { k: 2, ids: [1, 2], logprobs: [0, 0] } } },
        /teacher\.topK\.ids: has 2 entries, not k × 3 positions = 6/,
      ],
      [{ ...makeRecord(), judgement: { reward: 1, step: null, feedback: null } }, /judgement\.atLeastOne/],
      [{ ...makeRecord(), task: { id: 't', reference: {} } }, /task\.reference\.reward/],
      [{ ...makeRecord(), schemaVersion: 1 }, /schemaVersion/],
      [{ ...makeRecord(), schemaVersion: 3 }, /schemaVersion: is 3: written by a newer clawray/],
    ];
    for (const [value, message] of cases) {
      expect(() => encodeRecord(value), String(message)).toThrow(ConfigError);
      expect(() => encodeRecord(value), String(message)).toThrow(message);
      expect(() => parseTrajectoryRecord(value), String(message)).toThrow(message);
    }
  });

  describe("a record an older clawray wrote (schema 1: the loops' fields in extra)", () => {
    const v1 = (extra: Record<string, unknown>) => ({
      trajectoryId: 'job-g1-e2-t0',
      sessionId: 'job-g1-e2',
      turn: 0,
      messages: [{ role: 'user', content: 'task' }],
      promptTokenIds: [1, 2],
      tokenIds: [3, 4],
      logprobs: [-0.5, -0.25],
      nextState: null,
      votes: [1],
      score: 1,
      hint: 'h',
      weightVersion: 3,
      createdAtMs: 5,
      extra,
    });
    const judged = {
      taskId: 'task-7',
      group: 'g1',
      groupSize: 4,
      episode: 'job-g1-e2',
      turns: 1,
      temperature: 0.6,
      responseText: 'done',
      reference: { reward: 1, answer: '42' },
      finalMessages: [{ role: 'assistant', content: 'done' }],
      reward: 1,
      teacherLogprobs: [-0.1, -0.2],
      pluginNote: 'kept',
    };

    it('is read as schema 2, from Redis bytes, legacy JSON and JSONL alike', () => {
      const want = {
        schemaVersion: 2,
        ...v1({}),
        extra: { pluginNote: 'kept' },
        responseText: 'done',
        sampling: { temperature: 0.6, topP: null, topK: null, seed: null },
        group: { id: 'g1', size: 4, index: 2 },
        episode: { id: 'job-g1-e2', turns: 1, finalMessages: [{ role: 'assistant', content: 'done' }] },
        task: { id: 'task-7', reference: { reward: 1, answer: '42' } },
        requestId: null,
        judgement: { reward: 1, step: null, feedback: null, atLeastOne: false },
        teacher: { logprobs: [-0.1, -0.2], topK: null, reply: null, hintOverlap: null, hintCandidates: null },
      };
      const old = v1(judged);
      // As an older build stored it in Redis: the map with the three arrays as raw bytes.
      const bytes = packr.pack({
        ...old,
        promptTokenIds: Buffer.from(new Uint32Array(old.promptTokenIds).buffer),
        tokenIds: Buffer.from(new Uint32Array(old.tokenIds).buffer),
        logprobs: Buffer.from(new Float64Array(old.logprobs).buffer),
      });
      expect(decodeRecord(RECORD_FIELD, bytes)).toEqual(want);
      expect(decodeRecord(LEGACY_JSON_FIELD, Buffer.from(JSON.stringify(old)))).toEqual(want);
      expect(parseTrajectoryRecord(old)).toEqual(want);
      expect(roundTrip(old)).toEqual(want);
    });

    it('of a live turn, unjudged, is its own group of one', () => {
      const live = parseTrajectoryRecord(
        v1({ group: 's:1:r', groupSize: 1, episode: 's:1:r', turns: 1, temperature: 1, requestId: 'r' }),
      );
      expect(live).toMatchObject({
        group: { id: 's:1:r', size: 1, index: 0 },
        task: null,
        requestId: 'r',
        judgement: null,
        teacher: null,
      });
    });

    it('without the temperature it was sampled at is refused by that field, not guessed at', () => {
      const { temperature: _, ...noTemperature } = judged;
      expect(() => parseTrajectoryRecord(v1(noTemperature), 'old.jsonl:3')).toThrow(
        /invalid trajectory record "job-g1-e2-t0" \(old\.jsonl:3\): extra\.temperature: is missing/,
      );
      expect(() => decodeRecord(LEGACY_JSON_FIELD, Buffer.from(JSON.stringify(v1({}))))).toThrow(ConfigError);
    });
  });
});
