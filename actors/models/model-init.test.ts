import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { dims, PRESETS } from './model-config.js';
import { loadModelDir } from './model-dir.js';
import { countParameters, INIT_STD, initRandomModel, Prng, randomWeights } from './model-init.js';
import { readSafetensors } from './safetensors.js';
import { weightSpecs } from './weight-names.js';

const root = mkdtempSync(join(tmpdir(), 'clawray-init-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const FILES = [
  'config.json',
  'generation_config.json',
  'model.safetensors',
  'tokenizer.json',
  'tokenizer_config.json',
];
const contents = (dir: string) => FILES.map((f) => readFileSync(join(dir, f)));

describe('Prng', () => {
  it('is deterministic per seed and uniform-ish', () => {
    const a = new Prng(7);
    const b = new Prng(7);
    const c = new Prng(8);
    const xs = Array.from({ length: 1000 }, () => a.next());
    expect(Array.from({ length: 1000 }, () => b.next())).toEqual(xs);
    expect(c.next()).not.toBe(xs[0]);
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...xs)).toBeLessThan(1);
    const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
    expect(Math.abs(mean - 0.5)).toBeLessThan(0.05);
  });

  it('draws normals with mean 0 and standard deviation 1', () => {
    const rng = new Prng(1);
    const n = 20000;
    const xs = Array.from({ length: n }, () => rng.normal());
    const mean = xs.reduce((s, x) => s + x, 0) / n;
    const sd = Math.sqrt(xs.reduce((s, x) => s + (x - mean) ** 2, 0) / n);
    expect(Math.abs(mean)).toBeLessThan(0.03);
    expect(Math.abs(sd - 1)).toBeLessThan(0.03);
    expect(xs.every(Number.isFinite)).toBe(true);
  });
});

describe('randomWeights', () => {
  it('fills normal tensors with std 0.02, norms with ones and biases with zeros', () => {
    const d = dims({ ...PRESETS.tiny, model_type: 'qwen2', attention_bias: true } as never);
    const w = randomWeights(d, 3);
    for (const spec of weightSpecs(d)) {
      const data = w.get(spec.name)!;
      expect(data.length).toBe(spec.shape.reduce((a, b) => a * b, 1));
      if (spec.init === 'ones') expect(data.every((x) => x === 1)).toBe(true);
      if (spec.init === 'zeros') expect(data.every((x) => x === 0)).toBe(true);
    }
    const emb = w.get('model.embed_tokens.weight')!;
    const sd = Math.sqrt(emb.reduce((s, x) => s + x * x, 0) / emb.length);
    expect(Math.abs(sd - INIT_STD)).toBeLessThan(0.002);
  });
});

describe('initRandomModel', () => {
  it('writes a complete model directory that loadModelDir loads', () => {
    const out = join(root, 'tiny');
    const result = initRandomModel({ preset: 'tiny', outDir: out, seed: 1 });
    expect(result.dir).toBe(out);
    expect(readdirSync(out).sort()).toEqual(FILES);
    expect(result.files.map((f) => f.slice(out.length + 1)).sort()).toEqual(FILES);
    const d = dims(result.config);
    expect(result.parameterCount).toBe(countParameters(d));
    // tiny is tied: no lm_head.
    expect(result.parameterCount).toBe(
      384 * 64 + 2 * (64 * 2 + 64 * 64 * 2 + 32 * 64 * 2 + 16 * 2 + 128 * 64 * 3) + 64,
    );

    const model = loadModelDir(out);
    expect(model.config.vocab_size).toBe(384);
    expect(model.weights.size).toBe(weightSpecs(d).length);
    expect(model.weights.has('lm_head.weight')).toBe(false);
    expect(model.tokenizer.vocabSize).toBe(384);
    expect(model.tokenizer.eosToken).toBe('<|im_end|>');
    expect(model.tokenizer.bosToken).toBeNull();
    expect(model.config.eos_token_id).toBe(model.tokenizer.tokenId('<|im_end|>'));
    expect(model.config.bos_token_id).toBe(model.tokenizer.tokenId('<|endoftext|>'));
    expect(model.eosTokenIds).toEqual([
      model.tokenizer.tokenId('<|im_end|>'),
      model.tokenizer.tokenId('<|endoftext|>'),
    ]);
    const prompt = model.chatTemplate!.render({
      messages: [{ role: 'user', content: 'hi' }],
      addGenerationPrompt: true,
    });
    expect(prompt).toBe('<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n');
    expect(model.tokenizer.decode(model.tokenizer.encode(prompt))).toBe(prompt);

    const tokConfig = JSON.parse(readFileSync(join(out, 'tokenizer_config.json'), 'utf8'));
    expect(tokConfig).toMatchObject({ eos_token: '<|im_end|>', pad_token: '<|endoftext|>', bos_token: null });
    expect(typeof tokConfig.chat_template).toBe('string');
  });

  it("takes a context length in place of the preset's, and refuses a nonsensical one", () => {
    const dir = join(root, 'long');
    initRandomModel({ preset: 'tiny', outDir: dir, seed: 3, maxContext: 8192 });
    expect(loadModelDir(dir).config.max_position_embeddings).toBe(8192);
    expect(() => initRandomModel({ preset: 'tiny', outDir: join(root, 'bad'), maxContext: 2.5 })).toThrow(
      /maxContext must be a whole number ≥ 16, got 2.5/,
    );
  });

  it('is deterministic: the same seed writes byte-identical files, another seed other weights', () => {
    const a = initRandomModel({ preset: 'tiny', outDir: join(root, 'a'), seed: 42 }).dir;
    const b = initRandomModel({ preset: 'tiny', outDir: join(root, 'b'), seed: 42 }).dir;
    const c = initRandomModel({ preset: 'tiny', outDir: join(root, 'c'), seed: 43 }).dir;
    const [ca, cb, cc] = [contents(a), contents(b), contents(c)];
    // Buffer.equals, not toEqual: a deep compare of megabytes is slow.
    for (const [i, buf] of ca.entries()) expect(buf.equals(cb[i]), FILES[i]).toBe(true);
    expect(ca[2].equals(cc[2])).toBe(false);
    expect(ca[3].equals(cc[3])).toBe(true); // the tokenizer does not depend on the seed
  });

  it('writes bf16 weights that are the f32 weights rounded, with torch_dtype to match', () => {
    const f32 = initRandomModel({ preset: 'tiny', outDir: join(root, 'f32'), seed: 5 });
    const bf16 = initRandomModel({ preset: 'tiny', outDir: join(root, 'bf16'), seed: 5, dtype: 'bf16' });
    expect(bf16.config.torch_dtype).toBe('bfloat16');
    const full = readSafetensors(join(f32.dir, 'model.safetensors')).tensors;
    const half = readSafetensors(join(bf16.dir, 'model.safetensors')).tensors;
    const a = full.get('model.layers.0.self_attn.q_proj.weight')!.data;
    const h = half.get('model.layers.0.self_attn.q_proj.weight')!;
    expect(h.dtype).toBe('BF16');
    for (let i = 0; i < a.length; i++)
      expect(Math.abs(h.data[i] - a[i])).toBeLessThanOrEqual(Math.abs(a[i]) * 2 ** -8);
    expect(loadModelDir(bf16.dir).weights.size).toBe(full.size);
  });

  it('writes the small preset (untied: with lm_head)', () => {
    const r = initRandomModel({ preset: 'small', outDir: join(root, 'small'), seed: 0 });
    const model = loadModelDir(r.dir);
    expect(model.weights.get('lm_head.weight')!.length).toBe(384 * 256);
    expect(r.parameterCount).toBeGreaterThan(3_000_000);
  });

  it('refuses bad options and an existing model unless told to overwrite', () => {
    const out = join(root, 'existing');
    initRandomModel({ preset: 'tiny', outDir: out });
    expect(() => initRandomModel({ preset: 'tiny', outDir: out })).toThrow(/already holds a model/);
    writeFileSync(join(out, 'model.safetensors.index.json'), '{"weight_map": {}}');
    initRandomModel({ preset: 'tiny', outDir: out, overwrite: true, seed: 9 });
    expect(loadModelDir(out).weights.size).toBeGreaterThan(0);
    expect(() => initRandomModel({ preset: 'huge' as never, outDir: join(root, 'x') })).toThrow(ConfigError);
    expect(() => initRandomModel({ preset: 'tiny', outDir: join(root, 'x'), seed: -1 })).toThrow(/seed/);
    expect(() => initRandomModel({ preset: 'tiny', outDir: join(root, 'x'), dtype: 'f8' as never })).toThrow(
      /dtype/,
    );
    const file = join(root, 'a-file');
    writeFileSync(file, '');
    expect(() => initRandomModel({ preset: 'tiny', outDir: file })).toThrow(/not a directory/);
  });
});
