/** `clawray serve`: a model directory behind the OpenAI-compatible endpoint, in the foreground. */
import type { Command } from 'commander';
import { Registry } from 'prom-client';
import { JsonlTurnSink, TurnRecorder } from '../actors/rollout/capture-recorder.js';
import { createOpenAiServer } from '../actors/rollout/openai-server.js';
import { RolloutModel } from '../actors/rollout/rollout-model.js';
import { resolveClientToken } from '../common/auth.js';
import { createLogger } from '../common/logger.js';
import { onShutdownSignal } from './cli-errors.js';
import { int } from './cli-parse.js';
import { ensureServeToken } from './serve-token.js';

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('serve a model directory with an OpenAI-compatible API (POST /v1/chat/completions)')
    .requiredOption(
      '--model <dir>',
      'model directory (config.json, tokenizer.json, safetensors and/or model.onnx)',
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
    .option('--id <name>', 'model id clients use (default: the directory name)')
    .action(async (o) => {
      const logger = createLogger({ component: 'serve' });
      const registry = new Registry();
      const model = await RolloutModel.load({
        modelDir: o.model,
        id: o.id,
        maxBatchSize: o.maxBatchSize,
        registry,
      });
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
