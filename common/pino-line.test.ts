import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { parsePinoLine } from './pino-line.js';

describe('parsePinoLine', () => {
  it('reads a pino line back: its level, message and fields, without pino’s own', () => {
    const line =
      '{"level":30,"time":1795904325165,"pid":6760,"hostname":"h","component":"rollout","modelDir":"m","msg":"rollout model loaded"}';
    expect(parsePinoLine(line)).toEqual({
      level: 'info',
      msg: 'rollout model loaded',
      fields: { component: 'rollout', modelDir: 'm' },
    });
    expect(parsePinoLine('{"level":50,"msg":"x"}')?.level).toBe('error');
  });

  it('leaves anything else a plain line', () => {
    for (const line of [
      'plain text',
      '{"level":"info","msg":"not pino"}',
      '{"level":35,"msg":"no such level"}',
      '{"level":30,"msg":"cut',
      '[1,2]',
      '',
    ]) {
      expect(parsePinoLine(line), line).toBeUndefined();
    }
  });

  it('round-trips through a pino logger as one record at its own level', () => {
    const out: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        out.push(String(chunk));
        done();
      },
    });
    const parent = pino({ base: { pid: 1 }, level: 'info' }, sink);
    const child = pino({ level: 'info' }, sink);
    child.warn({ actorId: 'a1' }, 'disk almost full');
    const read = parsePinoLine(out.pop()!.trim())!;
    parent[read.level]({ ...read.fields, stream: 'stderr' }, read.msg);
    const record = JSON.parse(out.pop()!);
    expect(record).toMatchObject({ level: 40, msg: 'disk almost full', actorId: 'a1', stream: 'stderr' });
  });
});
