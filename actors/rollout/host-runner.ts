/**
 * What the runners of the CPU-session decoder graphs share: their graph, the layout and
 * provider it reports, and a KV cache held in host memory (Float32Arrays the runner feeds back).
 * StandardRunner and InPlaceRunner differ in how that cache is kept, not in what they say of it.
 */
import type { ExecutionProvider, KvLayout, OnnxDecoder } from './onnx-decoder.js';

export abstract class HostRunner {
  readonly cacheLocation = 'host';

  constructor(protected readonly decoder: OnnxDecoder) {}

  get layout(): KvLayout {
    return this.decoder.layout;
  }

  get provider(): ExecutionProvider {
    return this.decoder.provider;
  }

  get kind(): string {
    return this.decoder.kind;
  }
}
