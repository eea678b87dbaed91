import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { makeRecord } from './buffer.contract.js';
import { payloadsHset } from './payloads-hset.js';
import { encodeRecord } from './record-codec.js';

/** Reads a RESP array of bulk strings (a command as Redis reads it); throws on anything else. */
function parseCommand(bytes: Buffer): Buffer[] {
  let pos = 0;
  const line = (type: string): number => {
    expect(String.fromCharCode(bytes[pos])).toBe(type);
    const end = bytes.indexOf('\r\n', pos);
    const text = bytes.toString('latin1', pos + 1, end);
    expect(text).toMatch(/^(0|[1-9]\d*)$/); // Redis refuses leading zeros and padding
    pos = end + 2;
    return Number(text);
  };
  const out: Buffer[] = [];
  for (let n = line('*'); n > 0; n--) {
    const length = line('$');
    out.push(bytes.subarray(pos, pos + length));
    expect(bytes.toString('latin1', pos + length, pos + length + 2)).toBe('\r\n');
    pos += length + 2;
  }
  expect(pos).toBe(bytes.length);
  return out;
}

const sized = (tokens: number) =>
  makeRecord({
    tokenIds: Array.from({ length: tokens }, (_, i) => i),
    logprobs: Array.from({ length: tokens }, (_, i) => -i / 7),
  });

describe('payloadsHset', () => {
  it('writes HSET key field record … with each record exactly as encodeRecord encodes it', () => {
    // 3-, 4- and 5-digit lengths in both orders: the header width guess is wrong both ways.
    const records = [sized(1), sized(300), sized(2000), sized(300), sized(1), sized(1), sized(2000)];
    const hset = payloadsHset('clawray:c:buffer:b:payloads', 'pre1:', records);
    const args = parseCommand(hset.command.toWritable());
    expect(args.map((a) => a.toString('latin1')).slice(0, 2)).toEqual([
      'HSET',
      'clawray:c:buffer:b:payloads',
    ]);
    expect(args).toHaveLength(2 + 2 * records.length);
    records.forEach((r, i) => {
      expect(args[2 + 2 * i].toString()).toBe(`pre1:${i}`);
      expect(args[3 + 2 * i].equals(encodeRecord(r).bytes)).toBe(true);
    });
    expect(hset.trajectoryIds).toEqual(records.map((r) => r.trajectoryId));
  });

  it('writes into a reused buffer the same bytes as into a fresh one, and grows past it', () => {
    const records = [sized(300), sized(2000), sized(1)];
    const fresh = Buffer.from(payloadsHset('k', 'p:', records).command.toWritable());
    const dirty = Buffer.alloc(1 << 16, 0xff);
    const reused = payloadsHset('k', 'p:', records, dirty);
    expect(reused.buffer).toBe(dirty);
    expect(reused.command.toWritable().equals(fresh)).toBe(true);
    // A buffer too small for the estimate is not used; one that fills up mid-batch is replaced.
    expect(payloadsHset('k', 'p:', records, Buffer.alloc(16)).buffer.length).toBeGreaterThan(16);
    const big = [sized(20_000), sized(20_000)];
    const grown = payloadsHset('k', 'p:', big, dirty);
    expect(grown.buffer).not.toBe(dirty);
    expect(parseCommand(grown.command.toWritable())[3].equals(encodeRecord(big[0]).bytes)).toBe(true);
  });

  it('writes non-ASCII keys by their UTF-8 length', () => {
    const args = parseCommand(payloadsHset('clé:ü', 'ж:', [makeRecord()]).command.toWritable());
    expect(args[1].toString()).toBe('clé:ü');
    expect(args[2].toString()).toBe('ж:0');
  });

  it('refuses a batch with a bad record, naming its field', () => {
    expect(() => payloadsHset('k', 'p:', [makeRecord(), { ...makeRecord(), turn: -1 }])).toThrow(ConfigError);
    expect(() => payloadsHset('k', 'p:', [makeRecord(), { ...makeRecord(), turn: -1 }])).toThrow(/turn/);
  });
});
