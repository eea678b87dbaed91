/**
 * `clawray model export-onnx DIR [--out OUT] [--dtype float32|float16|bfloat16]`: writes the
 * decoder's ONNX export in the optimum / onnx-community layout, `OUT/onnx/model.onnx` plus
 * its weights as external data in `OUT/onnx/model.onnx_data` (OUT defaults to DIR), so
 * transformers.js, optimum and clawray's own engine load it as it is — at any model size, as
 * the graph protobuf never holds the weights. The safetensors are streamed tensor by tensor.
 */
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { loadModelDir } from '../actors/models/model-dir.js';
import { ONNX_DIR, writeExternalOnnx } from '../actors/models/onnx-export.js';
import { WEIGHT_DTYPES, type WeightDtype } from '../actors/models/onnx-graph.js';
import { DecoderWeights } from '../actors/rollout/decoder-weights.js';
import { choice } from './cli-parse.js';

export interface ExportOnnxResult {
  model: string;
  data: string;
  dtype: WeightDtype;
  weightBytes: number;
  seconds: number;
}

/** Exports `dir`'s safetensors to `<out>/onnx/model.onnx` + `model.onnx_data`. */
export function exportOnnx(
  dir: string,
  options: { out?: string; dtype?: WeightDtype } = {},
): ExportOnnxResult {
  const started = performance.now();
  const dtype = options.dtype ?? 'float32';
  const source = resolve(dir);
  const model = loadModelDir(source, { weights: false });
  const weights = DecoderWeights.fromModelDir(source, model.config, { dtype });
  const files = writeExternalOnnx(
    join(resolve(options.out ?? source), ONNX_DIR),
    weights.graph,
    weights.data,
  );
  return {
    ...files,
    dtype,
    weightBytes: weights.data.byteLength,
    seconds: (performance.now() - started) / 1000,
  };
}

export function registerExportOnnxCommand(model: Command): void {
  model
    .command('export-onnx')
    .description(
      'write DIR/onnx/model.onnx + model.onnx_data (optimum / transformers.js layout) from the safetensors',
    )
    .argument('<dir>', 'model directory (config.json + safetensors)')
    .option('--out <dir>', 'write into OUT/onnx instead of DIR/onnx')
    .option(
      '--dtype <dtype>',
      `storage type of the weights (${WEIGHT_DTYPES.join(' | ')})`,
      choice('--dtype', WEIGHT_DTYPES),
      'float32',
    )
    .option('--json', 'print JSON')
    .action((dir: string, opts: { out?: string; dtype: WeightDtype; json?: boolean }) => {
      const result = exportOnnx(dir, { out: opts.out, dtype: opts.dtype });
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
        return;
      }
      process.stdout.write(
        `${result.model}\n${result.data} (${(result.weightBytes / 2 ** 20).toFixed(1)} MiB of ${result.dtype} weights, ${result.seconds.toFixed(1)} s)\n`,
      );
    });
}
