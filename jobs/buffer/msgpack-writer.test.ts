import { describe, expect, it } from 'vitest';
import { MsgpackWriter, packr } from './msgpack-writer.js';

const values: [string, unknown][] = [
  ['small ints', [0, 1, 31, 32, 127, 128, 255, 256, 65_535, 65_536, 2 ** 32 - 1]],
  ['negative ints', [-1, -32, -33, -128, -129, -32_768, -32_769, -(2 ** 31)]],
  ['floats and large ints', [0.5, -1e-9, 2 ** 32, -(2 ** 31) - 1, 1_700_000_000_123, Number.MAX_VALUE]],
  ['non-finite numbers and -0', [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0]],
  ['short strings', ['', 'a', 'x'.repeat(31), 'x'.repeat(32), 'x'.repeat(63)]],
  ['long strings', ['x'.repeat(64), 'y'.repeat(255), 'z'.repeat(256), 'w'.repeat(70_000)]],
  [
    'non-ASCII strings',
    ['é', '日本語', '😀', 'é'.repeat(20), '日'.repeat(11), '日'.repeat(90), '😀'.repeat(40)],
  ],
  ['lone surrogates', ['\ud800', 'a\udc00b', `${'x'.repeat(70)}\ud800`]],
  ['null, booleans, undefined', [null, true, false, undefined]],
  [
    'arrays',
    [[], [1, 2, 3], Array.from({ length: 16 }, (_, i) => i), Array.from({ length: 70_000 }, () => 1)],
  ],
  ['objects', { a: 1, b: { c: [1, { d: 'e' }], f: undefined }, '1': 'one', é: null }],
  ['other kinds through msgpackr', [new Date(0), new Uint8Array([1, 2]), new Map([['a', 1]]), new Set([1])]],
  ['a message', { role: 'assistant', content: [{ type: 'text', text: 'hi' }], tool_calls: [] }],
];

describe('MsgpackWriter', () => {
  it.each(values)('writes %s byte for byte as msgpackr does', (_, value) => {
    const w = new MsgpackWriter(4); // grows as it goes
    w.value(value);
    expect(Buffer.from(w.buf.subarray(0, w.pos)).equals(Buffer.from(packr.pack(value)))).toBe(true);
  });

  it('writes several values back to back', () => {
    const w = new MsgpackWriter(1);
    w.value('a');
    w.value([1, 'b']);
    expect(w.buf.subarray(0, w.pos)).toEqual(Buffer.concat([packr.pack('a'), packr.pack([1, 'b'])]));
  });
});
