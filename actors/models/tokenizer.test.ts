import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { BYTE_TO_UNICODE, buildByteLevelTokenizerJson, QWEN_ADDED_TOKENS, Tokenizer } from './tokenizer.js';

const root = mkdtempSync(join(tmpdir(), 'clawray-tok-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const qwenConfig = { eos_token: '<|im_end|>', pad_token: '<|endoftext|>', bos_token: null };
const json = buildByteLevelTokenizerJson(384);
const tok = Tokenizer.fromJson(json, qwenConfig);

describe('buildByteLevelTokenizerJson', () => {
  it('has exactly the requested vocabulary: 256 bytes, merges, then the added tokens', () => {
    expect(tok.vocabSize).toBe(384);
    const model = json.model as { vocab: Record<string, number>; merges: [string, string][] };
    const ids = [...Object.values(model.vocab), ...(json.added_tokens as { id: number }[]).map((t) => t.id)];
    expect(new Set(ids).size).toBe(384);
    expect(Math.min(...ids)).toBe(0);
    expect(Math.max(...ids)).toBe(383);
    // GPT-2's order: '!' is token 0, and every byte has a token.
    expect(model.vocab['!']).toBe(0);
    for (let b = 0; b < 256; b++) expect(model.vocab[BYTE_TO_UNICODE[b]]).toBeLessThan(256);
    // Every merge joins two known tokens into a known token.
    for (const [a, b] of model.merges) {
      expect(model.vocab[a]).toBeDefined();
      expect(model.vocab[b]).toBeDefined();
      expect(model.vocab[a + b]).toBeGreaterThanOrEqual(256);
    }
    expect(model.merges[0]).toEqual(['Ġ', 't']);
  });

  it('is deterministic', () => {
    expect(JSON.stringify(buildByteLevelTokenizerJson(384))).toBe(JSON.stringify(json));
  });

  it('fills a vocabulary larger than the text can teach with reserved tokens, and refuses one too small', () => {
    const big = Tokenizer.fromJson(buildByteLevelTokenizerJson(4096));
    expect(big.vocabSize).toBe(4096);
    expect(big.tokenId('<|im_end|>')).toBeDefined();
    const minimum = 256 + QWEN_ADDED_TOKENS.length;
    expect(Tokenizer.fromJson(buildByteLevelTokenizerJson(minimum)).vocabSize).toBe(minimum);
    expect(() => buildByteLevelTokenizerJson(minimum - 1)).toThrow(ConfigError);
  });

  it('merges common English so text takes fewer tokens than bytes', () => {
    const text = 'The assistant calls the tool and the user reads the answer.';
    expect(tok.encode(text).length).toBeLessThan(Buffer.byteLength(text) * 0.6);
  });
});

describe('Tokenizer', () => {
  const samples = [
    'Hello, world! The answer is 42.',
    "I'll say it's   spaced\tout\n\n  with newlines\r\n",
    'héllo wörld — naïve café',
    '日本語のテキスト and emoji 🎉👩‍💻',
    'e\u0301 (decomposed) vs é (composed)',
    '{"name": "get_weather", "arguments": {"city": "Paris"}}',
    '',
    ' ',
    '\u0000\u0001\u007f binary-ish',
  ];

  it.each(samples)('decode(encode(s)) === s for %j', (s) => {
    const ids = tok.encode(s);
    expect(ids.every((id) => Number.isInteger(id) && id >= 0 && id < 384)).toBe(true);
    expect(tok.decode(ids)).toBe(s);
  });

  it('decodes token by token to the same bytes (UTF-8 split across tokens)', () => {
    const s = '日本語 🎉';
    const ids = tok.encode(s);
    const bytes = Buffer.concat(
      ids.map((id) => Buffer.from([...tok.idToToken(id)!].map((c) => BYTE_TO_UNICODE.indexOf(c)))),
    );
    expect(bytes.toString('utf8')).toBe(s);
  });

  it('encodes special and added tokens as single ids', () => {
    const imStart = tok.tokenId('<|im_start|>')!;
    const imEnd = tok.tokenId('<|im_end|>')!;
    const toolCall = tok.tokenId('<tool_call>')!;
    expect(imStart).toBeGreaterThanOrEqual(375);
    const ids = tok.encode('<|im_start|>user\nhi<|im_end|>\n<tool_call>\n{}\n</tool_call>');
    expect(ids[0]).toBe(imStart);
    expect(ids).toContain(imEnd);
    expect(ids).toContain(toolCall);
    expect(ids).toContain(tok.tokenId('</tool_call>'));
  });

  it('knows eos, pad and bos, and which tokens are special', () => {
    expect(tok.eosToken).toBe('<|im_end|>');
    expect(tok.eosTokenId).toBe(tok.tokenId('<|im_end|>'));
    expect(tok.padTokenId).toBe(tok.tokenId('<|endoftext|>'));
    expect(tok.bosTokenId).toBeNull();
    expect(tok.specialTokens).toEqual(['<|endoftext|>', '<|im_start|>', '<|im_end|>']);
    expect(tok.isSpecial(tok.eosTokenId!)).toBe(true);
    expect(tok.isSpecial(tok.tokenId('<tool_call>')!)).toBe(false);
    expect(tok.addedTokens.get(tok.tokenId('<tool_call>')!)).toBe('<tool_call>');
    expect(tok.tokenId('not a token')).toBeUndefined();
  });

  it('skipSpecialTokens drops chat markers but keeps tool-call markers', () => {
    const text = '<|im_start|>assistant\n<tool_call>\n{"name": "f"}\n</tool_call><|im_end|>';
    const ids = tok.encode(text);
    expect(tok.decode(ids)).toBe(text);
    expect(tok.decode(ids, { skipSpecialTokens: true })).toBe(
      'assistant\n<tool_call>\n{"name": "f"}\n</tool_call>',
    );
  });

  it('decodes nothing to the empty string and skips ids beyond the vocabulary', () => {
    expect(tok.decode([])).toBe('');
    const ids = tok.encode('abc');
    expect(tok.decode([...ids, 10_000])).toBe('abc');
  });

  it('adds no special tokens unless asked, and the Qwen layout adds none even then', () => {
    expect(tok.encode('hi', { addSpecialTokens: true })).toEqual(tok.encode('hi'));
  });

  it('loads tokenizer.json and tokenizer_config.json from a directory (AddedToken-style special tokens too)', () => {
    const dir = mkdtempSync(join(root, 'dir-'));
    writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(json));
    writeFileSync(
      join(dir, 'tokenizer_config.json'),
      JSON.stringify({ eos_token: { __type: 'AddedToken', content: '<|im_end|>' }, pad_token: null }),
    );
    const loaded = Tokenizer.load(dir);
    expect(loaded.eosTokenId).toBe(tok.eosTokenId);
    expect(loaded.padTokenId).toBeNull();
    expect(loaded.encode('hello there')).toEqual(tok.encode('hello there'));
    expect(loaded.source).toBe(join(dir, 'tokenizer.json'));
  });

  it('names the file for a missing, unparsable or malformed tokenizer', () => {
    const dir = mkdtempSync(join(root, 'bad-'));
    const file = join(dir, 'tokenizer.json');
    expect(() => Tokenizer.load(dir)).toThrow(new RegExp(`${file}: missing`));
    writeFileSync(file, '{"model": ');
    expect(() => Tokenizer.load(dir)).toThrow(/not valid JSON/);
    writeFileSync(file, JSON.stringify({ model: { type: 'BPE', vocab: { a: 0 } } }));
    const err = (() => {
      try {
        Tokenizer.load(dir);
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect(err?.message).toContain(file);
    writeFileSync(file, JSON.stringify({ version: '1.0' }));
    expect(() => Tokenizer.load(dir)).toThrow(/'model' is missing/);
    writeFileSync(file, JSON.stringify(json));
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({ eos_token: '<|nope|>' }));
    expect(() => Tokenizer.load(dir)).toThrow(/eos_token '<\|nope\|>' is not in the vocabulary/);
  });
});
