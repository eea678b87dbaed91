/**
 * Hub-layout checkpoints (test/helpers/hub-checkpoint.ts) load as a user's download would:
 * the full-size Qwen3-0.6B and Llama-3.2-1B layouts (config, tokenizer with the real special
 * ids, chat template, generation defaults; shapes and parameter counts), and shrunk ones with
 * their bf16 shards read through the index, run by the trainer's TF.js decoder and the
 * rollout engine's ONNX export with the same logits, and served as a streamed chat completion
 * that samples with generation_config.json's defaults.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeChatPrompt, loadModelDir, renderChatPrompt } from '../actors/models/model-dir.js';
import { countParameters } from '../actors/models/model-init.js';
import { exportDecoderOnnx } from '../actors/models/onnx-export.js';
import { bf16BitsToF32, f32ToBf16Bits } from '../actors/models/safetensors.js';
import { selectBackend } from '../actors/models/tfjs-backend.js';
import { TfjsDecoder } from '../actors/models/tfjs-decoder.js';
import { createOpenAiServer } from '../actors/rollout/openai-server.js';
import type { GenerateRequest } from '../actors/rollout/rollout-engine.js';
import { RolloutModel } from '../actors/rollout/rollout-model.js';
import { writeHubCheckpoint } from './helpers/hub-checkpoint.js';

const root = mkdtempSync(join(tmpdir(), 'clawray-hub-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('full-size layouts (everything but the weights)', () => {
  it('Qwen3-0.6B: real config, special token ids, chat template and sampling defaults', () => {
    const ckpt = writeHubCheckpoint({
      layout: 'qwen3-0.6b',
      outDir: join(root, 'qwen3-full'),
      skipWeights: true,
    });
    expect(ckpt.parameterCount).toBe(596_049_920); // HF: "Number of Parameters: 0.6B" (0.44B non-embedding)
    const m = loadModelDir(ckpt.dir, { weights: false });
    expect(countParameters(m.dims)).toBe(596_049_920);
    expect(m.dims).toMatchObject({
      vocab: 151936,
      hidden: 1024,
      layers: 28,
      heads: 16,
      kvHeads: 8,
      headDim: 128,
    });
    expect(m.config.torch_dtype).toBe('bfloat16');
    const tok = m.tokenizer;
    expect(tok.tokenId('<|endoftext|>')).toBe(151643);
    expect(tok.tokenId('<|im_start|>')).toBe(151644);
    expect(tok.tokenId('<|im_end|>')).toBe(151645);
    expect(tok.tokenId('<tool_call>')).toBe(151657);
    expect(tok.tokenId('<think>')).toBe(151667);
    expect(tok.tokenId('</think>')).toBe(151668);
    expect(m.eosTokenIds.sort()).toEqual([151643, 151645]);
    expect(m.samplingDefaults).toEqual({ temperature: 0.6, topP: 0.95, topK: 20, ignored: [] });
    // Qwen3's own template: thinking switched off by chat_template_kwargs.
    const prompt = renderChatPrompt(m, [{ role: 'user', content: 'Hi' }], undefined, {
      enable_thinking: false,
    });
    expect(prompt).toBe('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n');
    const history = renderChatPrompt(m, [
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: '<think>\nhmm\n</think>\n\nHello!' },
      { role: 'user', content: 'Again' },
    ]);
    // Reasoning of earlier turns is dropped, as Qwen3's template does.
    expect(history).toBe(
      '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nAgain<|im_end|>\n<|im_start|>assistant\n',
    );
    const ids = encodeChatPrompt(m, [{ role: 'user', content: 'Hi' }]);
    expect(ids[0]).toBe(151644);
    expect(ids.filter((id) => id === 151645)).toHaveLength(1);
  });

  it('Llama-3.2-1B: llama3 rope_scaling, special ids, chat template', () => {
    const ckpt = writeHubCheckpoint({
      layout: 'llama-3.2-1b',
      outDir: join(root, 'llama-full'),
      skipWeights: true,
    });
    expect(ckpt.parameterCount).toBe(1_235_814_400); // HF: 1.24B
    const m = loadModelDir(ckpt.dir, { weights: false });
    expect(m.dims.rope).toMatchObject({ type: 'llama3', factor: 32, originalMaxPositions: 8192 });
    expect(m.tokenizer.tokenId('<|begin_of_text|>')).toBe(128000);
    expect(m.tokenizer.tokenId('<|eot_id|>')).toBe(128009);
    expect(m.eosTokenIds.sort()).toEqual([128001, 128008, 128009]);
    expect(m.samplingDefaults).toEqual({ temperature: 0.6, topP: 0.9, ignored: [] });
    expect(renderChatPrompt(m, [{ role: 'user', content: ' Hi ' }])).toBe(
      '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n',
    );
  });
});

interface Shrunk {
  dir: string;
  positions: number[];
}

describe('shrunk checkpoints: sharded bf16 weights, trainer and engine agree', () => {
  const shrunk: Record<string, Shrunk> = {};
  beforeAll(async () => {
    await selectBackend('cpu');
    // Qwen3 at its real width (1024 hidden, 16×128 heads), one layer, a 1k vocabulary.
    shrunk.qwen3 = {
      dir: writeHubCheckpoint({ layout: 'qwen3-0.6b', outDir: join(root, 'qwen3'), layers: 1, vocab: 1024 })
        .dir,
      positions: [0, 1, 2, 3, 4, 5],
    };
    // Llama 3 narrowed (the rope_scaling is the real one), at positions past 8192 / 4 where llama3 scales.
    shrunk.llama = {
      dir: writeHubCheckpoint({
        layout: 'llama-3.2-1b',
        outDir: join(root, 'llama'),
        layers: 2,
        vocab: 1024,
        config: { hidden_size: 256, intermediate_size: 512, num_attention_heads: 4, num_key_value_heads: 2 },
      }).dir,
      positions: [9000, 9001, 9002, 20000, 20001, 20002],
    };
  }, 120_000);

  it('writes model-0000N-of-0000M shards and an index that loadModelDir reads', () => {
    const files = readdirSync(shrunk.qwen3.dir).sort();
    const shards = files.filter((f) => f.endsWith('.safetensors'));
    expect(shards.length).toBeGreaterThanOrEqual(2);
    for (const [i, f] of shards.entries()) {
      const of = String(shards.length).padStart(5, '0');
      expect(f).toBe(`model-${String(i + 1).padStart(5, '0')}-of-${of}.safetensors`);
    }
    expect(files.filter((f) => !shards.includes(f))).toEqual([
      'config.json',
      'generation_config.json',
      'model.safetensors.index.json',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    const index = JSON.parse(readFileSync(join(shrunk.qwen3.dir, 'model.safetensors.index.json'), 'utf8'));
    const m = loadModelDir(shrunk.qwen3.dir);
    expect(Object.keys(index.weight_map).sort()).toEqual([...m.weights.keys()].sort());
    expect(index.metadata.total_size).toBe(countParameters(m.dims) * 2);
    expect(m.weights.has('lm_head.weight')).toBe(false); // tied, as Qwen3-0.6B ships
    // bf16 on disk: every value is exactly a bf16 number.
    const q = m.weights.get('model.layers.0.self_attn.q_proj.weight')!;
    expect(q.length).toBe(2048 * 1024);
    for (let i = 0; i < q.length; i += 9973) expect(bf16BitsToF32(f32ToBf16Bits(q[i]))).toBe(q[i]);
  });

  it.each(['qwen3', 'llama'])('%s: TF.js and ONNX logits agree', async (name) => {
    const { dir, positions } = shrunk[name];
    const m = loadModelDir(dir);
    const ids = encodeChatPrompt(m, [{ role: 'user', content: 'Hi there' }]).slice(0, positions.length);
    while (ids.length < positions.length) ids.push(ids.length + 300);
    const model = new TfjsDecoder(m.config, m.weights);
    const out = model.forward({ inputIds: [ids], positionIds: [positions] }).logits;
    const tfjs = out.dataSync() as Float32Array;
    out.dispose();
    model.dispose();
    const session = await ort.InferenceSession.create(exportDecoderOnnx(m.config, m.weights));
    try {
      const int64 = (row: number[]) =>
        new ort.Tensor('int64', BigInt64Array.from(row.map(BigInt)), [1, row.length]);
      const feeds: Record<string, ort.Tensor> = {
        input_ids: int64(ids),
        attention_mask: int64(ids.map(() => 1)),
        position_ids: int64(positions),
      };
      for (let l = 0; l < m.dims.layers; l++) {
        for (const part of ['key', 'value']) {
          feeds[`past_key_values.${l}.${part}`] = new ort.Tensor('float32', new Float32Array(0), [
            1,
            m.dims.kvHeads,
            0,
            m.dims.headDim,
          ]);
        }
      }
      const onnx = (await session.run(feeds)).logits.data as Float32Array;
      let worst = 0;
      for (let i = 0; i < onnx.length; i++) worst = Math.max(worst, Math.abs(onnx[i] - tfjs[i]));
      expect(worst).toBeLessThan(1e-4);
    } finally {
      await session.release();
    }
  });

  it('serves a streamed chat completion that samples with generation_config.json defaults', async () => {
    const rollout = await RolloutModel.load({ modelDir: shrunk.qwen3.dir, provider: 'cpu', maxBatchSize: 2 });
    const seen: GenerateRequest[] = [];
    // The real model, with its requests recorded on the way in.
    const model = Object.create(rollout) as RolloutModel;
    model.generate = (req: GenerateRequest) => {
      seen.push(req);
      return rollout.generate(req);
    };
    const app = createOpenAiServer({ model });
    try {
      await app.listen({ host: '127.0.0.1', port: 0 });
      const { port } = app.server.address() as AddressInfo;
      const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: model.id,
          stream: true,
          max_tokens: 4,
          seed: 1,
          messages: [{ role: 'user', content: 'Hi' }],
          chat_template_kwargs: { enable_thinking: false },
        }),
      });
      expect(res.status).toBe(200);
      const body = await res.text();
      const chunks = body
        .split('\n\n')
        .filter((l) => l.startsWith('data: ') && !l.includes('[DONE]'))
        .map((l) => JSON.parse(l.slice(6)));
      expect(chunks.length).toBeGreaterThan(1);
      expect(body.trimEnd().endsWith('data: [DONE]')).toBe(true);
      expect(seen[0]).toMatchObject({ temperature: 0.6, topP: 0.95, topK: 20, maxTokens: 4 });
      // A request's own values win over the defaults.
      await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: model.id,
          max_tokens: 2,
          temperature: 0,
          top_k: 5,
          messages: [{ role: 'user', content: 'Hi' }],
        }),
      });
      expect(seen[1]).toMatchObject({ temperature: 0, topP: 0.95, topK: 5 });
    } finally {
      await app.close();
      await rollout.close();
    }
  }, 120_000);
});
