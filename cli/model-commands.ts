/** `clawray model init`: random model directories for tests, examples and benchmarks. */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { PRESETS, type PresetName } from '../actors/models/model-config.js';
import { CONFIG_FILE } from '../actors/models/model-dir.js';
import { initRandomModel, MODEL_DTYPES, type ModelDtype } from '../actors/models/model-init.js';
import { ConfigError } from '../common/errors.js';
import { int } from './cli-parse.js';
import { registerExportOnnxCommand } from './model-export-command.js';
import { registerModelInspect } from './model-inspect-command.js';

/** Context lengths `model init` accepts: 1M positions is past any checkpoint of this family. */
const MIN_CONTEXT = 16;
const MAX_CONTEXT = 1 << 20;

function preset(value: string): PresetName {
  if (!Object.hasOwn(PRESETS, value)) {
    throw new ConfigError(`--preset expects one of ${Object.keys(PRESETS).join(', ')}, got '${value}'`);
  }
  return value as PresetName;
}

function dtype(value: string): ModelDtype {
  const v = value.toLowerCase();
  if (!(MODEL_DTYPES as readonly string[]).includes(v)) {
    throw new ConfigError(`--dtype expects one of ${MODEL_DTYPES.join(', ')}, got '${value}'`);
  }
  return v as ModelDtype;
}

export function registerModelCommands(program: Command): void {
  const model = program.command('model').description('create and inspect model directories');
  registerExportOnnxCommand(model);
  registerModelInspect(model);
  model
    .command('init')
    .description('write a random model directory (config, safetensors, tokenizer, chat template)')
    .option('--preset <name>', `model size (${Object.keys(PRESETS).join(' | ')})`, preset)
    .option('--out <dir>', 'directory to write (created if missing)')
    .option('--seed <n>', 'random seed; the same seed writes byte-identical files', int('--seed'), 0)
    .option('--dtype <dtype>', `weight dtype (${MODEL_DTYPES.join(' | ')})`, dtype, 'f32' as ModelDtype)
    .option(
      '--max-context <tokens>',
      "context length (max_position_embeddings) in place of the preset's, at least 16",
      int('--max-context'),
    )
    .option('--force', 'overwrite a directory that already holds a model')
    .option('--json', 'print JSON')
    .action(
      (opts: {
        preset?: PresetName;
        out?: string;
        seed: number;
        dtype: ModelDtype;
        maxContext?: number;
        force?: boolean;
        json?: boolean;
      }) => {
        // Required options are checked here rather than by commander so the error is a ConfigError (exit 2, no usage dump).
        if (!opts.preset) throw new ConfigError(`--preset is required (${Object.keys(PRESETS).join(' | ')})`);
        if (!opts.out) throw new ConfigError('--out DIR is required');
        const m = opts.maxContext;
        if (m !== undefined && (m < MIN_CONTEXT || m > MAX_CONTEXT)) {
          throw new ConfigError(
            `--max-context expects ${MIN_CONTEXT} to ${MAX_CONTEXT.toLocaleString('en-US')} tokens, got ${m} ` +
              '(the RoPE tables and the KV cache of a full sequence grow with it)',
          );
        }
        const config = join(resolve(opts.out), CONFIG_FILE);
        if (!opts.force && existsSync(config)) {
          throw new ConfigError(
            `${resolve(opts.out)}: already holds a model (${CONFIG_FILE}); choose another --out, or pass --force to overwrite it`,
            { fields: { file: config } },
          );
        }
        const result = initRandomModel({
          preset: opts.preset,
          outDir: opts.out,
          seed: opts.seed,
          dtype: opts.dtype,
          maxContext: opts.maxContext,
          overwrite: opts.force,
        });
        const context = result.config.max_position_embeddings;
        if (opts.json) {
          const { dir, parameterCount, files } = result;
          process.stdout.write(
            `${JSON.stringify({ dir, preset: opts.preset, seed: opts.seed, dtype: opts.dtype, maxContext: context, parameterCount, files }, null, 2)}\n`,
          );
          return;
        }
        process.stdout.write(
          `${result.dir}\npreset ${opts.preset}, ${result.parameterCount.toLocaleString('en-US')} parameters, ${opts.dtype}, seed ${opts.seed}` +
            `${opts.maxContext !== undefined ? `, context ${context} tokens` : ''}\n`,
        );
      },
    );
}
