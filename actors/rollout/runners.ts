/**
 * The runner for a decoder: the graph kind decides where the batch's cache lives and how a step
 * feeds it (runner.ts). A runner that the kind alone cannot choose (a cache on the device) is
 * built by its caller and handed to the engine as it is.
 */
import { InPlaceRunner } from './in-place-runner.js';
import type { KvLayout, OnnxDecoder } from './onnx-decoder.js';
import type { Runner } from './runner.js';
import { StandardRunner } from './standard-runner.js';

export interface RunnerOptions {
  /** Tokens per prefill (and scoring) step. */
  prefillChunkTokens: number;
  /** Rows the batch may grow to. */
  maxBatchSize: number;
}

/**
 * The host-cache runner of `decoder`'s graph kind. `previous`: the runner this one replaces on
 * a weight swap (empty by then), whose kept cache memory the new one takes over when both keep
 * the same layout in place, so that the first batch on new weights does not fault fresh pages.
 */
export function runnerFor(decoder: OnnxDecoder, options: RunnerOptions, previous?: Runner): Runner {
  switch (decoder.kind) {
    case 'standard':
      return new StandardRunner(decoder, options);
    case 'slots':
    case 'gqa': {
      const kept =
        previous instanceof InPlaceRunner &&
        previous.rows === 0 &&
        sameLayout(previous.layout, decoder.layout)
          ? previous.takeCache()
          : undefined;
      return new InPlaceRunner(decoder, options, kept);
    }
  }
}

/**
 * Whether `x` is a Runner rather than an OnnxDecoder. By shape, not `instanceof`: a runner may
 * come from another copy of these modules (a plugin, a test double).
 */
export function isRunner(x: OnnxDecoder | Runner): x is Runner {
  return 'decode' in x && typeof x.decode === 'function';
}

function sameLayout(a: KvLayout, b: KvLayout): boolean {
  return a.layers === b.layers && a.kvHeads === b.kvHeads && a.headDim === b.headDim && a.vocab === b.vocab;
}
