import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { dims, PRESETS } from './model-config.js';
import { loadModelDir } from './model-dir.js';
import { initRandomModel, randomWeights } from './model-init.js';
import { readSafetensors, writeSafetensors } from './safetensors.js';
import { weightSpecs } from './weight-names.js';

const root = mkdtempSync(join(tmpdir(), 'clawray-modeldir-'));
const base = join(root, 'base');
afterAll(() => rmSync(root, { recursive: true, force: true }));
beforeAll(() => {
  initRandomModel({ preset: 'tiny', outDir: base, seed: 11 });
});

let n = 0;
/** A fresh copy of the random tiny model to break. */
function copy(): string {
  const dir = join(root, `m${n++}`);
  cpSync(base, dir, { recursive: true });
  return dir;
}

function errorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

function rewriteWeights(
  dir: string,
  edit: (t: Map<string, { shape: number[]; data: Float32Array }>) => void,
) {
  const file = join(dir, 'model.safetensors');
  const tensors = new Map(
    [...readSafetensors(file).tensors].map(([k, v]) => [k, { shape: v.shape, data: v.data }] as const),
  );
  edit(tensors);
  writeSafetensors(file, tensors);
}

describe('loadModelDir', () => {
  it('loads config, dims, weights, tokenizer, chat template and generation config', () => {
    const m = loadModelDir(base);
    expect(m.dir).toBe(base);
    expect(m.dims).toEqual(dims(m.config));
    expect(m.dims.tied).toBe(true);
    const expected = randomWeights(m.dims, 11);
    expect([...m.weights.keys()]).toEqual(weightSpecs(m.dims).map((s) => s.name));
    for (const [name, data] of expected) {
      expect(Buffer.from(m.weights.get(name)!.buffer).equals(Buffer.from(data.buffer)), name).toBe(true);
    }
    expect(m.tokenizer.vocabSize).toBe(384);
    expect(m.chatTemplate).not.toBeNull();
    expect(m.generationConfig.eos_token_id).toEqual(m.eosTokenIds);
  });

  it('skips the weights when asked', () => {
    const dir = copy();
    rmSync(join(dir, 'model.safetensors'));
    expect(loadModelDir(dir, { weights: false }).weights.size).toBe(0);
  });

  it('loads sharded bf16 weights of a real-looking checkpoint, ignoring rotary caches and a tied lm_head', () => {
    const dir = copy();
    const all = readSafetensors(join(dir, 'model.safetensors')).tensors;
    rmSync(join(dir, 'model.safetensors'));
    const names = [...all.keys()].sort();
    const half = Math.floor(names.length / 2);
    const shards = [names.slice(0, half), names.slice(half)];
    const weightMap: Record<string, string> = {};
    shards.forEach((list, i) => {
      const file = `model-0000${i + 1}-of-00002.safetensors`;
      const tensors = new Map(list.map((k) => [k, { shape: all.get(k)!.shape, data: all.get(k)!.data }]));
      if (i === 1) {
        tensors.set('model.layers.0.self_attn.rotary_emb.inv_freq', {
          shape: [8],
          data: new Float32Array(8),
        });
        tensors.set('lm_head.weight', { shape: [384, 64], data: all.get('model.embed_tokens.weight')!.data });
      }
      writeSafetensors(join(dir, file), tensors, { dtype: 'BF16' });
      for (const k of tensors.keys()) weightMap[k] = file;
    });
    writeFileSync(
      join(dir, 'model.safetensors.index.json'),
      JSON.stringify({ metadata: {}, weight_map: weightMap }),
    );
    const m = loadModelDir(dir);
    expect(m.weights.size).toBe(all.size);
    expect(m.weights.has('lm_head.weight')).toBe(false);
    const emb = m.weights.get('model.embed_tokens.weight')!;
    const ref = all.get('model.embed_tokens.weight')!.data;
    expect(Math.abs(emb[0] - ref[0])).toBeLessThanOrEqual(Math.abs(ref[0]) * 2 ** -8);
  });

  it('a missing directory or config.json', () => {
    expect(errorOf(() => loadModelDir(join(root, 'nope'))).message).toMatch(/does not exist/);
    const dir = copy();
    rmSync(join(dir, 'config.json'));
    expect(errorOf(() => loadModelDir(dir)).message).toBe(
      `${join(dir, 'config.json')}: missing: a model directory needs a config.json`,
    );
  });

  it('a config.json that is not of the family', () => {
    const dir = copy();
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...PRESETS.tiny, model_type: 'gpt2' }));
    expect(errorOf(() => loadModelDir(dir)).message).toMatch(
      new RegExp(`${join(dir, 'config.json')}: .*model_type`),
    );
  });

  it('missing weights', () => {
    const dir = copy();
    rmSync(join(dir, 'model.safetensors'));
    const err = errorOf(() => loadModelDir(dir));
    expect(err.message).toContain(join(dir, 'model.safetensors'));
    expect(err.message).toContain('missing');
  });

  it('a missing tokenizer.json', () => {
    const dir = copy();
    rmSync(join(dir, 'tokenizer.json'));
    expect(errorOf(() => loadModelDir(dir)).message).toMatch(
      new RegExp(`^${join(dir, 'tokenizer.json')}: missing`),
    );
  });

  it('a tokenizer bigger than the embedding', () => {
    const dir = copy();
    const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config, vocab_size: 300 }));
    expect(errorOf(() => loadModelDir(dir)).message).toMatch(
      /384 tokens but .*config\.json vocab_size is 300/,
    );
  });

  it('a missing tensor, naming it, its expected shape and the weights file', () => {
    const dir = copy();
    rewriteWeights(dir, (t) => t.delete('model.layers.1.mlp.up_proj.weight'));
    const err = errorOf(() => loadModelDir(dir));
    expect(err.message).toContain(join(dir, 'model.safetensors'));
    expect(err.message).toContain(
      "missing tensor 'model.layers.1.mlp.up_proj.weight' (shape [128,64]) in model.safetensors",
    );
  });

  it('a tensor of the wrong shape, with expected and actual shapes', () => {
    const dir = copy();
    rewriteWeights(dir, (t) =>
      t.set('model.layers.0.self_attn.k_proj.weight', { shape: [64, 32], data: new Float32Array(64 * 32) }),
    );
    expect(errorOf(() => loadModelDir(dir)).message).toContain(
      "tensor 'model.layers.0.self_attn.k_proj.weight' in model.safetensors has shape [64,32] but config.json needs [32,64]",
    );
  });

  it('unexpected tensors, and every problem in one message', () => {
    const dir = copy();
    rewriteWeights(dir, (t) => {
      t.set('model.layers.2.mlp.up_proj.weight', { shape: [2], data: new Float32Array(2) });
      t.delete('model.norm.weight');
    });
    const msg = errorOf(() => loadModelDir(dir)).message;
    expect(msg).toContain(
      "unexpected tensor 'model.layers.2.mlp.up_proj.weight' (shape [2]) in model.safetensors",
    );
    expect(msg).toContain("missing tensor 'model.norm.weight'");
  });

  it('an untied model without lm_head', () => {
    const dir = copy();
    const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config, tie_word_embeddings: false }));
    expect(errorOf(() => loadModelDir(dir)).message).toContain(
      "missing tensor 'lm_head.weight' (shape [384,64])",
    );
  });

  it('a broken tokenizer_config.json or generation_config.json', () => {
    const dir = copy();
    writeFileSync(join(dir, 'generation_config.json'), '{');
    expect(errorOf(() => loadModelDir(dir)).message).toMatch(/generation_config\.json: not valid JSON/);
    const dir2 = copy();
    writeFileSync(join(dir2, 'tokenizer_config.json'), '[');
    expect(errorOf(() => loadModelDir(dir2)).message).toMatch(/tokenizer_config\.json: not valid JSON/);
  });
});
