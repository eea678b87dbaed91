/**
 * Whether onnxruntime's WebGPU execution provider starts here (a GPU, or Mesa's lavapipe in CI):
 * null when it does, else the reason, so a WebGPU test file can skip its cases and say why.
 */
import { dims } from '../models/model-config.js';
import { randomWeights } from '../models/model-init.js';
import { exportDecoderExternal } from '../models/onnx-export.js';
import { OnnxDecoder } from './onnx-decoder.js';
import { presetConfig } from './test-model.js';

let probed: Promise<string | null> | undefined;

export function webgpuUnavailable(): Promise<string | null> {
  probed ??= (async () => {
    try {
      const tiny = presetConfig('tiny');
      const d = dims(tiny);
      const probe = await OnnxDecoder.load(
        exportDecoderExternal(tiny, randomWeights(d, 1)),
        { layers: d.layers, kvHeads: d.kvHeads, headDim: d.headDim, vocab: d.vocab },
        'webgpu',
      );
      await probe.release();
      return null;
    } catch (err) {
      return err instanceof Error ? err.message : String(err);
    }
  })();
  return probed;
}
