/**
 * A Hub-layout checkpoint through the real pipeline, as a user would run it: a Qwen3-0.6B-layout
 * directory (bf16 shards + index, Qwen3's tokenizer specials, chat template and generation
 * defaults; real hidden size and heads, one layer, a smaller vocabulary) served by
 * `clawray serve` to the openai SDK as a streamed chat completion, and trained by an RL job
 * (`clawray job submit`, toolcall track, builtin tasks) with LoRA: the job succeeds, the
 * rollout engines get only the adapters (delta sync), and the engine's weights change.
 *
 * Why not the full 151,936-token vocabulary: the fixture's tokenizer decodes ~700 of its ids
 * (the byte-level merges it ships plus Qwen3's added tokens), so a random model's replies at
 * the full size decode to the same empty text nearly always, every group's rewards tie and no
 * step trains. The trainer itself takes an agent-length sample at the full vocabulary on this
 * machine (`npm run bench -- train`, the qwen3-0.6b line: a 500-token sample, LoRA, on wasm).
 * The vocabulary (4096) and the layer count (1) are the only dimensions shrunk.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeChatPrompt, loadModelDir } from '../actors/models/model-dir.js';
import { readSafetensors } from '../actors/models/safetensors.js';
import { RolloutModel } from '../actors/rollout/rollout-model.js';
import { distEntry } from '../common/package-root.js';
import { writeHubCheckpoint } from './helpers/hub-checkpoint.js';
import { TestCluster } from './helpers/processes.js';

const LORA = { rank: 8, alpha: 16, targetModules: ['q_proj', 'v_proj', 'o_proj', 'down_proj'] };

describe('a Qwen3-0.6B-layout checkpoint: served, trained with LoRA in a job, updated in the engines', () => {
  const tc = new TestCluster();
  const root = mkdtempSync(join(tmpdir(), 'clawray-hub-job-'));
  let modelDir = '';

  beforeAll(async () => {
    modelDir = writeHubCheckpoint({
      layout: 'qwen3-0.6b',
      outDir: join(root, 'Qwen3-0.6B'),
      layers: 1,
      vocab: 4096,
    }).dir;
    await tc.startHead();
    await tc.startWorker({ cpus: 8 });
  }, 120_000);
  afterAll(async () => {
    await tc.teardown();
    rmSync(root, { recursive: true, force: true });
  });

  it('clawray serve streams a chat completion to the openai SDK', async () => {
    const child: ChildProcess = spawn(
      process.execPath,
      [distEntry('cli/main'), 'serve', '--model', modelDir, '--port', '0', '--no-auth'],
      { env: { ...process.env, CLAWRAY_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      const baseURL = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout! }).on('line', (line) => {
          const match = / on (http:\/\/\S+\/v1)/.exec(line);
          if (match) resolve(match[1]);
        });
        child.once('exit', (code) => reject(new Error(`clawray serve exited with ${code}`)));
      });
      const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0 });
      const stream = await client.chat.completions.create({
        model: 'Qwen3-0.6B',
        messages: [{ role: 'user', content: 'Hi' }],
        max_tokens: 6,
        stream: true,
        stream_options: { include_usage: true },
        // Qwen3's template switch, passed through as vLLM and SGLang take it.
        chat_template_kwargs: { enable_thinking: false },
      } as OpenAI.ChatCompletionCreateParamsStreaming);
      const chunks: OpenAI.ChatCompletionChunk[] = [];
      for await (const chunk of stream) chunks.push(chunk);
      // Random weights write random bytes: the stream holds back a partial UTF-8 character, so
      // the number of content chunks varies; the token count does not.
      expect(chunks[0].model).toBe('Qwen3-0.6B');
      expect(chunks[0].choices[0]?.delta.role).toBe('assistant');
      const finished = chunks.find((c) => c.choices[0]?.finish_reason);
      expect(finished?.choices[0]?.finish_reason).toMatch(/stop|length/);
      expect(chunks.at(-1)?.usage?.completion_tokens).toBeGreaterThan(0);
      const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
      expect(typeof text).toBe('string');
    } finally {
      child.kill('SIGKILL');
    }
  }, 60_000);

  it('trains LoRA on it in an RL job: adapters alone reach the engines, and change what they compute', async () => {
    const jobDir = join(root, 'job');
    mkdirSync(join(jobDir, 'plugins'), { recursive: true });
    // A reward that differs between any two different conversations (a hash of the text), so
    // every step has a learning signal and the adapters move from their B = 0 start.
    writeFileSync(
      join(jobDir, 'plugins/reward.mjs'),
      `export default ({ messages }) => {
  let h = 0;
  for (const c of JSON.stringify(messages)) h = (h * 31 + c.charCodeAt(0)) % 1000003;
  return h / 1000003;
};\n`,
    );
    const ckptDir = join(root, 'checkpoints');
    writeFileSync(
      join(jobDir, 'job.yaml'),
      `apiVersion: clawray.dev/v1
kind: RLJob
metadata: { name: hub-lora }
spec:
  track: toolcall
  method: rl
  model: { path: ${modelDir}, maxBatchSize: 2 }
  rollout: { batchSize: 1, samplesPerPrompt: 2, maxTurns: 1, maxTokens: 8 }
  judge: { votes: 1 }
  train:
    steps: 2
    async: false
    lr: 0.05
    microBatchSize: 1
    lora: { rank: ${LORA.rank}, alpha: ${LORA.alpha}, targetModules: [${LORA.targetModules.join(', ')}] }
  env: { parallel: 2, settings: { tools: [calculator], systemPrompt: Use the calculator. } }
  eval: { everySteps: 0 }
  checkpoint: { dir: ${ckptDir}, everySteps: 1 }
  plugins: { reward: ./plugins/reward.mjs }
`,
    );
    const run = spawnSync(
      process.execPath,
      [
        distEntry('cli/main'),
        'job',
        'submit',
        join(jobDir, 'job.yaml'),
        '--address',
        tc.head!.address,
        '--json',
      ],
      { encoding: 'utf8', env: { ...process.env, CLAWRAY_ADDRESS: '', ...tc.env }, timeout: 240_000 },
    );
    expect(run.stderr).toContain('SUCCEEDED');
    expect(run.status).toBe(0);
    const summary = JSON.parse(run.stdout.trim().split('\n').at(-1)!);
    expect(summary).toMatchObject({ status: 'SUCCEEDED', steps: 2 });

    // Every publication carried the adapters only: 4 modules × (A, B) of one layer.
    const published = run.stdout.split('\n').filter((l) => /published weight version \d+/.test(l));
    expect(published.length).toBeGreaterThanOrEqual(2);
    for (const line of published) {
      expect(line).toMatch(/to 1 rollout engine\(s\): LoRA adapters only \(8 tensors, \d+\.\d+ MiB\)/);
    }
    expect(published.at(-1)).toMatch(/published weight version 2 /);

    // Synchronous steps: step 2 trained samples the engine drew at version 1 (staleness 0), with
    // the logprobs the trainer computes under its version-1 weights (mismatch ≤ 1e-3).
    const step2 = run.stdout.split('\n').find((l) => / step 2\/2: reward/.test(l))!;
    expect(step2).toMatch(/staleness 0\.00/);
    const drift = Number(/mismatch (\S+?),/.exec(step2)![1]);
    expect(drift).toBeLessThanOrEqual(1e-3);

    // The checkpoint of step 1 holds the adapters the engine got at version 1, and nothing else.
    const step1 = /checkpoint at step 1: (\S+)/.exec(run.stdout)![1];
    const saved = readSafetensors(join(step1, 'model.safetensors')).tensors;
    expect([...saved.keys()].every((n) => /\.lora_[AB]\.weight$/.test(n))).toBe(true);
    expect(saved.size).toBe(LORA.targetModules.length * 2);

    // Merged by the engine's own code, those adapters move a fixed prompt's logprobs by far more
    // than the drift above: the engine in the job served changed weights, not its initial ones.
    const engine = await RolloutModel.load({ modelDir, provider: 'cpu', maxBatchSize: 1 });
    try {
      const m = loadModelDir(modelDir, { weights: false });
      const ids = encodeChatPrompt(m, [{ role: 'user', content: 'What is 12 * 7?' }]);
      const before = await engine.computeLogprobs(ids, 1);
      const adapters = new Map([...saved].map(([name, t]) => [name, t.data]));
      await engine.updateWeights(1, adapters, { loraScale: LORA.alpha / LORA.rank });
      expect(engine.weightVersion).toBe(1);
      const after = await engine.computeLogprobs(ids, 1);
      const moved = before.reduce((s, v, i) => s + Math.abs(v - after[i]), 0) / before.length;
      expect(moved).toBeGreaterThan(10 * Math.max(drift, 1e-4));
    } finally {
      await engine.close();
    }
  }, 240_000);
});
