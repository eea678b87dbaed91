/**
 * `clawray serve`: a model directory behind the OpenAI-compatible endpoint, in the foreground,
 * or a job's checkpoint (by path or submission id): the base model its job trained, with the
 * checkpoint's weights published into the engine as the job's trainer published them.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { Registry } from 'prom-client';
import { CONFIG_FILE } from '../actors/models/model-dir.js';
import { DECODER_ATTENTIONS, WEIGHT_DTYPES } from '../actors/models/onnx-graph.js';
import { JsonlTurnSink, TurnRecorder } from '../actors/rollout/capture-recorder.js';
import { createOpenAiServer } from '../actors/rollout/openai-server.js';
import { DEFAULT_ATTENTION, RolloutModel } from '../actors/rollout/rollout-model.js';
import { resolveClientToken } from '../common/auth.js';
import { ConfigError } from '../common/errors.js';
import { clawrayHome } from '../common/home.js';
import { createLogger } from '../common/logger.js';
import { checkpointBase } from '../jobs/rl/checkpoint-ref.js';
import { checkpointWeights } from '../jobs/rl/checkpoint-weights.js';
import { type EvalTarget, resolveEvalTarget } from '../jobs/rl/eval-target.js';
import type { CheckpointBase } from '../jobs/rl/job-state.js';
import { onShutdownSignal } from './cli-errors.js';
import { choice, int, num } from './cli-parse.js';
import { ensureServeToken } from './serve-token.js';

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('serve a model directory with an OpenAI-compatible API (POST /v1/chat/completions)')
    .requiredOption(
      '--model <dir|checkpoint|submission-id>',
      "a model directory (config.json, tokenizer.json, safetensors and/or model.onnx), a job's checkpoint (<checkpoint.dir>/<submission>/step-N), a submission's checkpoint dir, or its id (SUB[/step-N] under $CLAWRAY_HOME/checkpoints/<job>/): its newest checkpoint",
    )
    .option(
      '--base <dir>',
      "the base model a checkpoint's weights go into (default: the one its job recorded)",
    )
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--port <port>', 'port (0: any free port)', int('--port'), 8000)
    .option(
      '--token <token>',
      'bearer token clients must send (default: CLAWRAY_TOKEN, the cluster token file, else one generated into $CLAWRAY_HOME/serve-token, mode 0600)',
    )
    .option('--no-auth', 'accept requests without a token')
    .option(
      '--record <file>',
      'record main turns for RL (JSONL) from X-Session-Id / X-Turn-Type / X-Session-Done',
    )
    .option('--max-batch-size <n>', 'sequences decoding together', int('--max-batch-size'), 16)
    .option(
      '--max-queue <n>',
      'requests waiting for a batch slot before new ones get 429',
      int('--max-queue'),
    )
    .option('--id <name>', 'model id clients use (default: the directory name)')
    .option(
      '--provider <provider>',
      'onnxruntime execution provider (auto: CUDA, then WebGPU, when this process has a GPU; else cpu)',
      choice('--provider', ['auto', 'cuda', 'webgpu', 'cpu'] as const),
      'auto',
    )
    .option(
      '--dtype <dtype>',
      `how the engine stores weights it exports from safetensors (${WEIGHT_DTYPES.join(' | ')}; default float32)`,
      choice('--dtype', WEIGHT_DTYPES),
    )
    .option(
      '--attention <kind>',
      `decoder graph (${DECODER_ATTENTIONS.join(' | ')}; default ${DEFAULT_ATTENTION})`,
      choice('--attention', DECODER_ATTENTIONS),
    )
    .option(
      '--intra-op-threads <n>',
      "onnxruntime's intra-op threads (default one per physical core this process may use, within its CPU quota; 0: onnxruntime's own choice)",
      int('--intra-op-threads'),
    )
    .option(
      '--no-spinning',
      'idle onnxruntime threads sleep instead of spinning (frees cores on a shared machine)',
    )
    .option(
      '--prefill-chunk-tokens <n>',
      'prompt tokens per prefill step (memory linear in the prompt)',
      int('--prefill-chunk-tokens'),
    )
    .option(
      '--memory-budget-mib <n>',
      "what one request's cache and activations may take before it gets a 400 (default half the RAM)",
      num('--memory-budget-mib'),
    )
    .action(async (o) => {
      if (o.memoryBudgetMib === 0) throw new ConfigError('--memory-budget-mib expects a number > 0, got 0');
      const logger = createLogger({ component: 'serve' });
      const registry = new Registry();
      const served = whatToServe(o.model, o.base);
      const model = await RolloutModel.load({
        modelDir: served.modelDir,
        id: o.id ?? served.id,
        provider: o.provider,
        weightDtype: o.dtype,
        attention: o.attention,
        intraOpNumThreads: o.intraOpThreads,
        allowSpinning: o.spinning,
        maxBatchSize: o.maxBatchSize,
        maxQueue: o.maxQueue,
        prefillChunkTokens: o.prefillChunkTokens,
        memoryBudgetBytes:
          o.memoryBudgetMib === undefined ? undefined : Math.floor(o.memoryBudgetMib * 2 ** 20),
        registry,
      });
      if (served.checkpoint) {
        const { target, base } = served.checkpoint;
        const loaded = await checkpointWeights(target.dir, base.dir, base.lora);
        // The weights the job's engines served at that step, published as its trainer published them.
        await model.updateWeights(target.trainerStep, loaded.weights);
        const step = target.state ? `job step ${target.state.step}, ` : '';
        process.stdout.write(
          `clawray serve: checkpoint ${target.dir} (${step}optimizer step ${target.trainerStep}): ${loaded.loraAdapters > 0 ? `${loaded.loraAdapters} LoRA adapter(s) merged into` : 'its weights in'} ${base.dir}\n`,
        );
      }
      let token: string | undefined;
      let tokenSource = 'none (--no-auth)';
      if (o.auth) {
        const resolved = resolveClientToken(o.token);
        if (resolved) {
          token = resolved.token;
          tokenSource = `from ${resolved.source}`;
        } else {
          const kept = ensureServeToken();
          token = kept.token;
          tokenSource = `in ${kept.file} (send it as "Authorization: Bearer <token>")`;
        }
      }
      const recorder = o.record ? new TurnRecorder({ sink: new JsonlTurnSink(o.record), logger }) : undefined;
      const app = createOpenAiServer({ model, token, recorder, registry, logger });
      app.get('/metrics', async (_request, reply) =>
        reply.type(registry.contentType).send(await registry.metrics()),
      );
      const address = await app.listen({ host: o.host, port: o.port });
      process.stdout.write(
        `clawray serve: model ${model.id} (${model.provider}) on ${address}/v1, token ${tokenSource}` +
          `${o.record ? `, recording to ${o.record}` : ''}\n`,
      );
      onShutdownSignal(async () => {
        await app.close();
        await recorder?.close();
        await model.close();
      });
    });
}

interface Served {
  modelDir: string;
  /** The model id clients name, when the directory's name is not it. */
  id?: string;
  checkpoint?: {
    target: Extract<EvalTarget, { kind: 'checkpoint' }>;
    base: CheckpointBase;
  };
}

/**
 * `--model` as a model directory (served as it is), or a job's checkpoint: its base model
 * loaded, then the checkpoint's weights published into it (LoRA adapters merged first), named
 * after the job (spec.model.name, else the job's name).
 */
function whatToServe(model: string, base: string | undefined): Served {
  const direct = resolve(model);
  if (existsSync(join(direct, CONFIG_FILE))) {
    if (base !== undefined) {
      throw new ConfigError(
        `--base names the base model of a checkpoint, but ${model} is a model directory itself: drop --base`,
      );
    }
    return { modelDir: model };
  }
  const target = resolveEvalTarget(model, { cwd: process.cwd(), home: clawrayHome(), verb: 'serve' });
  if (target.kind === 'model') return { modelDir: target.dir };
  const found = checkpointBase(target, {
    flag: '--base',
    override: base === undefined ? undefined : resolve(base),
  });
  return { modelDir: found.dir, id: found.name ?? found.job, checkpoint: { target, base: found } };
}
