import { describe, expect, it } from 'vitest';
import { JsonConstraint, JsonPrefix } from './json-constraint.js';

const bytes = (s: string) => Buffer.from(s, 'utf8');
const accepts = (s: string) => new JsonPrefix().feed(bytes(s));
const complete = (s: string) => {
  const p = new JsonPrefix();
  return p.feed(bytes(s)) && p.done;
};

/** A small seeded generator of random JSON values. */
function randomValue(rand: () => number, depth: number): unknown {
  const r = rand();
  if (depth > 3 || r < 0.3) {
    const k = Math.floor(rand() * 6);
    if (k === 0) return null;
    if (k === 1) return rand() < 0.5;
    if (k === 2) return Math.floor((rand() - 0.5) * 1e6);
    if (k === 3) return (rand() - 0.5) * 10 ** Math.floor(rand() * 40 - 20);
    return ['', 'a', 'é"\\\n\t', '\u0001\u001f', '日本', '😀', '</s>'][Math.floor(rand() * 7)];
  }
  if (r < 0.6) return Array.from({ length: Math.floor(rand() * 4) }, () => randomValue(rand, depth + 1));
  return randomObject(rand, depth + 1);
}

function randomObject(rand: () => number, depth: number): Record<string, unknown> {
  return Object.fromEntries(
    Array.from({ length: Math.floor(rand() * 4) }, (_, i) => [
      `k${i}${rand() < 0.2 ? '"é' : ''}`,
      randomValue(rand, depth),
    ]),
  );
}

function lcg(seed: number): () => number {
  let x = seed;
  return () => {
    x = (x * 1664525 + 1013904223) >>> 0;
    return x / 2 ** 32;
  };
}

describe('JsonPrefix', () => {
  it('accepts every prefix of a JSON object and is done exactly at its end (JSON.stringify as the oracle)', () => {
    const rand = lcg(7);
    for (let i = 0; i < 300; i++) {
      const doc = JSON.stringify(randomObject(rand, 0), null, i % 3 === 0 ? 2 : undefined);
      const b = bytes(` ${doc}`);
      const p = new JsonPrefix();
      for (let j = 0; j < b.length; j++) {
        expect(p.feed([b[j]]), `${doc} at byte ${j}`).toBe(true);
        expect(p.done).toBe(j === b.length - 1);
      }
    }
  });

  it('agrees with JSON.parse on mutated documents: complete ⇔ parses to an object', () => {
    const rand = lcg(11);
    const alphabet = '{}[]":,0123456789.eE+-tfnrul \\a\n';
    let completes = 0;
    for (let i = 0; i < 4000; i++) {
      const chars = [...JSON.stringify(randomObject(rand, 1))];
      for (let m = Math.floor(rand() * 3); m >= 0; m--) {
        const at = Math.floor(rand() * chars.length);
        const c = alphabet[Math.floor(rand() * alphabet.length)];
        if (rand() < 0.5) chars[at] = c;
        else chars.splice(at, rand() < 0.5 ? 1 : 0, ...(rand() < 0.5 ? [c] : []));
      }
      const doc = chars.join('');
      let parsed: unknown;
      try {
        parsed = JSON.parse(doc);
      } catch {
        parsed = undefined;
      }
      const isObject = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed);
      if (isObject && !/^\s/.test(doc) && doc.trimEnd() === doc) {
        expect(complete(doc), doc).toBe(true);
        completes++;
      }
      if (complete(doc)) expect(isObject, doc).toBe(true);
    }
    expect(completes).toBeGreaterThan(500);
  });

  it('refuses what JSON does not allow, at the first wrong byte', () => {
    for (const bad of [
      '[1]',
      '"a"',
      '1',
      '{"a":01}',
      '{"a":tru ',
      '{"a" 1}',
      '{,}',
      '{"a":1,}',
      '{"a":"\u0001"}',
      '{"a":"\\q"}',
      '{"a":"\\u12g4"}',
      '{"a":-}',
      '{"a":1.}',
      '{"a":1e}',
      '{"a":[1,]}',
      '{"a":1]',
      '{"a":{}}}',
      '{a:1}',
    ]) {
      expect(accepts(bad), bad).toBe(false);
    }
    for (const prefix of ['{', '{"a', '{"a":', '{"a":-', '{"a":1.5e', '{"a":"\\u00', '{"a":[[', '{"a":t']) {
      expect(accepts(prefix), prefix).toBe(true);
      expect(complete(prefix), prefix).toBe(false);
    }
  });
});

describe('JsonConstraint', () => {
  // Tokens: single characters, a multi-byte piece, an end-of-sequence token.
  const vocab = ['{', '}', '"', 'a', ':', '1', ' ', '"a": 1', '<eos>', '日'.slice(0, 1)];
  const table = vocab.map((t) => bytes(t));
  const eos = 8;

  it('allows only tokens that keep a JSON object prefix, never an end token, and is done at the close', () => {
    const c = new JsonConstraint((id) => table[id], [eos]);
    const allowed = () => vocab.map((_, id) => id).filter((id) => c.allows(id));
    expect(allowed().map((id) => vocab[id])).toEqual(['{', ' ']);
    c.advance(0);
    expect(allowed().map((id) => vocab[id])).toEqual(['}', '"', ' ', '"a": 1']);
    c.advance(7);
    expect(allowed().map((id) => vocab[id])).toEqual(['}', '1', ' ']);
    const masked = c.mask(Float32Array.from(vocab, () => 1));
    expect([...masked].map((x) => x === 1)).toEqual(vocab.map((_, id) => id === 1 || id === 5 || id === 6));
    c.advance(1);
    expect(c.done).toBe(true);
    expect(allowed()).toEqual([]);
  });
});
