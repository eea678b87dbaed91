/**
 * `npm run bench -- weights`: weight updates of a rollout engine at Qwen3-0.6B's shape
 * (hidden 1024, 28 layers, 16 heads / 8 kv heads of 128, intermediate 3072, vocab 151936,
 * tied; random bf16 weights written by `model init`). Reports the load time, a full update
 * (every tensor, float32 on the wire) and a LoRA-only update (rank-16 adapters on every
 * Linear of every layer plus their scale: delta sync), each as bytes shipped and seconds until
 * the engine serves the new version (write into the weight buffer + a new session on the
 * same graph bytes; no re-export).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dims } from '../actors/models/model-config.js';
import { initRandomModel } from '../actors/models/model-init.js';
import { weightSpecs } from '../actors/models/weight-names.js';
import { RolloutModel } from '../actors/rollout/rollout-model.js';

const PRESET = 'qwen3-0.6b';
const LORA_RANK = 16;
const LORA_ALPHA = 32;
const LORA_MODULES = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

const log = (msg: string) => process.stderr.write(`weights: ${msg}\n`);
const round = (x: number, digits = 2) => Number(x.toFixed(digits));
const mib = (bytes: number) => round(bytes / 2 ** 20, 1);

export async function runWeightsBench(): Promise<Record<string, unknown>> {
  const root = mkdtempSync(join(tmpdir(), 'clawray-weights-bench-'));
  let peakRss = 0;
  const sample = () => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
  };
  const sampler = setInterval(sample, 200);
  try {
    log(`writing a random ${PRESET} checkpoint (bf16)`);
    const init = initRandomModel({ preset: PRESET, outDir: join(root, PRESET), dtype: 'bf16' });
    const d = dims(init.config);

    log('loading the rollout engine (bfloat16 weight buffer)');
    const loadStart = performance.now();
    const model = await RolloutModel.load({ modelDir: init.dir, provider: 'cpu', weightDtype: 'bfloat16' });
    const loadSeconds = (performance.now() - loadStart) / 1000;
    sample();
    const rssAfterLoad = process.memoryUsage().rss;
    const bufferBytes = model.weightStore!.data.byteLength;
    try {
      const prompt = [1, 2, 3, 4, 5, 6, 7, 8];
      const serve = () => model.generate({ promptTokenIds: prompt, maxTokens: 4, temperature: 0 });
      await serve();

      // Full update: every tensor. Views of one array (the largest tensor's size) stand in for
      // the trainer's tensors, so the bench does not hold a second model in memory.
      const specs = weightSpecs(d);
      const largest = Math.max(...specs.map((s) => s.shape.reduce((a, b) => a * b, 1)));
      const pool = Float32Array.from({ length: largest }, (_, i) => Math.sin(i) * 0.02);
      const full = new Map(
        specs.map(
          (s) =>
            [
              s.name,
              pool.subarray(
                0,
                s.shape.reduce((a, b) => a * b, 1),
              ),
            ] as const,
        ),
      );
      let fullBytes = 0;
      for (const t of full.values()) fullBytes += t.byteLength;
      log(`full update: ${full.size} tensors, ${mib(fullBytes)} MiB`);
      const fullStart = performance.now();
      await model.updateWeights(1, full);
      const fullSeconds = (performance.now() - fullStart) / 1000;
      await serve();
      sample();

      // LoRA-only update: cumulative adapters (A [rank, in], B [out, rank]) for every target.
      const lora = new Map<string, Float32Array>();
      for (const s of specs) {
        const module = LORA_MODULES.find((m) => s.name.endsWith(`.${m}.weight`));
        if (!module) continue;
        const [out, inF] = s.shape;
        const prefix = s.name.slice(0, -'.weight'.length);
        lora.set(`${prefix}.lora_A.weight`, pool.subarray(0, LORA_RANK * inF));
        lora.set(`${prefix}.lora_B.weight`, pool.subarray(1, 1 + out * LORA_RANK));
      }
      let loraBytes = 0;
      for (const t of lora.values()) loraBytes += t.byteLength;
      log(`LoRA update: ${lora.size / 2} adapters, ${mib(loraBytes)} MiB`);
      const loraStart = performance.now();
      await model.updateWeights(2, lora, { loraScale: LORA_ALPHA / LORA_RANK });
      const loraSeconds = (performance.now() - loraStart) / 1000;
      await serve();
      sample();

      return {
        bench: 'weights',
        preset: PRESET,
        parameters: init.parameterCount,
        provider: model.provider,
        weightDtype: 'bfloat16',
        weightBufferMiB: mib(bufferBytes),
        loadSeconds: round(loadSeconds),
        rssAfterLoadMiB: mib(rssAfterLoad),
        full: { tensors: full.size, bytes: fullBytes, MiB: mib(fullBytes), seconds: round(fullSeconds) },
        lora: {
          rank: LORA_RANK,
          modules: LORA_MODULES.length,
          adapters: lora.size / 2,
          bytes: loraBytes,
          MiB: mib(loraBytes),
          seconds: round(loraSeconds),
        },
        bytesRatio: round(fullBytes / loraBytes, 1),
        peakRssMiB: mib(peakRss),
      };
    } finally {
      await model.close();
    }
  } finally {
    clearInterval(sampler);
    rmSync(root, { recursive: true, force: true });
  }
}
