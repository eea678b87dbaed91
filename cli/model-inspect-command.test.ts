import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { distEntry } from '../common/package-root.js';
import { QWEN3_0_6B_CONFIG, writeHubCheckpoint } from '../test/helpers/hub-checkpoint.js';
import type { ModelInspection } from './model-inspect-command.js';

const root = mkdtempSync(join(tmpdir(), 'clawray-inspect-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The built CLI (the suite runs after `npm run build`). */
function clawray(args: string[]) {
  const result = spawnSync(process.execPath, [distEntry('cli/main'), ...args], {
    encoding: 'utf8',
    env: { ...process.env, CLAWRAY_DEBUG: '' },
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('clawray model inspect', () => {
  it('a Qwen3-0.6B-layout checkpoint: config, shards, tokenizer, defaults, runtimes, memory (--json)', () => {
    const ckpt = writeHubCheckpoint({
      layout: 'qwen3-0.6b',
      outDir: join(root, 'qwen3'),
      layers: 1,
      vocab: 1024,
    });
    const { code, stdout, stderr } = clawray(['model', 'inspect', ckpt.dir, '--json']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const m = JSON.parse(stdout) as ModelInspection;
    expect(m).toMatchObject({
      architecture: 'Qwen3ForCausalLM',
      modelType: 'qwen3',
      problem: null,
      parameterCount: ckpt.parameterCount,
      configDtype: 'bfloat16',
      weightDtypes: { BF16: ckpt.weightBytes },
      contextLength: 40960,
      rope: 'default (theta 1000000)',
      tiedEmbeddings: true,
      tokenizer: true,
      chatTemplate: true,
      generationDefaults: { temperature: 0.6, topP: 0.95, topK: 20, ignored: [] },
      layouts: { safetensors: 'sharded', onnx: [] },
    });
    expect(m.shards.map((s) => s.file)).toEqual(ckpt.shards.map((f) => f.slice(ckpt.dir.length + 1)));
    expect(m.bytesOnDisk).toBeGreaterThan(m.weightBytes);
    expect(m.runtime.rollout.providers).toContain('cpu');
    expect(m.runtime.trainer.backendsInstalled.at(-1)).toBe('cpu');
    // 2 (k, v) × 1 layer × 8 kv heads × 128 × 4 bytes per token
    expect(m.memory.kvBytesPerToken).toBe(2 * 8 * 128 * 4);
    expect(m.memory.kvBytesFullContext).toBe(2 * 8 * 128 * 4 * 40960);
    expect(m.memory.rolloutWeightsBytes).toEqual({
      float32: ckpt.parameterCount * 4,
      float16: ckpt.parameterCount * 2,
    });
  });

  it('prints the llama3 RoPE, the generation defaults and what runs where', () => {
    const ckpt = writeHubCheckpoint({
      layout: 'llama-3.2-1b',
      outDir: join(root, 'llama'),
      layers: 1,
      vocab: 1024,
      config: {
        hidden_size: 64,
        intermediate_size: 128,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        head_dim: 16,
      },
    });
    const { code, stdout } = clawray(['model', 'inspect', ckpt.dir]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/architecture\s+LlamaForCausalLM \(llama\)/);
    expect(stdout).toMatch(
      /rope\s+llama3 \(theta 500000, factor 32, lowFreqFactor 1, highFreqFactor 4, originalMaxPositions 8192\)/,
    );
    expect(stdout).toMatch(/context\s+131,072 tokens/);
    expect(stdout).toMatch(/generation defaults\s+temperature 0\.6, top_p 0\.9/);
    expect(stdout).toMatch(/layouts\s+safetensors \(sharded\)/);
    expect(stdout).toMatch(/rollout engine\s+onnxruntime-node, (cpu|cuda)/);
    expect(stdout).toMatch(/trainer\s+tensorflow\.js, /);
    expect(stdout).toMatch(/memory: KV cache/);
  });

  it('reads only headers: a 20 GiB sparse shard is inspected without its data being read', () => {
    // One F32 tensor of 5.4 G values: reading it would need a 20 GiB buffer, which Node refuses.
    const dir = join(root, 'huge');
    mkdirSync(dir);
    const config = { ...QWEN3_0_6B_CONFIG, tie_word_embeddings: false };
    writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
    const n = 5_400_000_000;
    const header = Buffer.from(
      JSON.stringify({ 'lm_head.weight': { dtype: 'F32', shape: [n], data_offsets: [0, n * 4] } }).padEnd(
        128,
      ),
    );
    const file = join(dir, 'model.safetensors');
    const fd = openSync(file, 'w');
    const prefix = Buffer.alloc(8);
    prefix.writeBigUInt64LE(BigInt(header.length));
    writeSync(fd, prefix);
    writeSync(fd, header);
    writeSync(fd, Buffer.from([0]), 0, 1, 8 + header.length + n * 4 - 1); // a sparse file of the full size
    closeSync(fd);
    const { code, stdout } = clawray(['model', 'inspect', dir, '--json']);
    expect(code).toBe(0);
    const m = JSON.parse(stdout) as ModelInspection;
    expect(m.parameterCount).toBe(n);
    expect(m.weightDtypes).toEqual({ F32: n * 4 });
    expect(m.layouts.safetensors).toBe('single');
    expect(m.tokenizer).toBe(false);
  });

  it('a config the family refuses is reported with the field and the reason, exit 2', () => {
    const dir = join(root, 'gelu');
    mkdirSync(dir);
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...QWEN3_0_6B_CONFIG, hidden_act: 'gelu' }));
    const { code, stdout } = clawray(['model', 'inspect', dir]);
    expect(code).toBe(2);
    expect(stdout).toMatch(
      /cannot load\s+.*hidden_act: 'gelu' is not supported: this family's MLP is SwiGLU/,
    );
    expect(stdout).toMatch(/architecture\s+Qwen3ForCausalLM \(qwen3\)/);
  });
});
