/**
 * Publishes new weights to rollout engines: tensors go in buckets of bounded size (like
 * slime's 512 MiB buckets, so no single message or buffer holds a whole large model), to all
 * engines at once, then each engine swaps to the version in one step.
 */
import { Histogram, type Registry } from 'prom-client';
import type { WeightMap } from '../models/weight-names.js';
import type { RolloutEngine } from '../rollout/rollout-engine-actor.js';
import type { ActorHandle } from '../runtime/actor-handle.js';

export const DEFAULT_BUCKET_BYTES = 512 * 1024 * 1024;

export interface PublishResult {
  version: number;
  bytes: number;
  buckets: number;
  seconds: number;
}

/** Groups tensors (in name order) into buckets of at most `bucketBytes` (a larger tensor goes alone). */
export function bucketize(
  weights: WeightMap,
  bucketBytes = DEFAULT_BUCKET_BYTES,
): Array<Map<string, Float32Array>> {
  const buckets: Array<Map<string, Float32Array>> = [];
  let current = new Map<string, Float32Array>();
  let size = 0;
  for (const name of [...weights.keys()].sort()) {
    const data = weights.get(name)!;
    if (size > 0 && size + data.byteLength > bucketBytes) {
      buckets.push(current);
      current = new Map();
      size = 0;
    }
    current.set(name, data);
    size += data.byteLength;
  }
  if (current.size > 0) buckets.push(current);
  return buckets;
}

export class WeightPublisher {
  private readonly duration?: Histogram;

  constructor(
    private readonly engines: ActorHandle<RolloutEngine>[],
    private readonly options: { bucketBytes?: number; registry?: Registry } = {},
  ) {
    if (options.registry) {
      this.duration = new Histogram({
        name: 'clawray_trainer_weight_publish_seconds',
        help: 'Time to publish a weight version to every rollout engine (buckets sent and swapped)',
        buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
        registers: [options.registry],
      });
    }
  }

  /** Sends `version` to `engines` (default: all of this publisher's) and swaps them to it. */
  async publish(
    version: number,
    weights: WeightMap,
    engines: readonly ActorHandle<RolloutEngine>[] = this.engines,
  ): Promise<PublishResult> {
    const started = performance.now();
    const buckets = bucketize(weights, this.options.bucketBytes);
    await Promise.all(
      engines.map(async (engine) => {
        for (const bucket of buckets) await engine.call('stageWeights', version, bucket);
        await engine.call('commitWeights', version);
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    this.duration?.observe(seconds);
    let bytes = 0;
    for (const data of weights.values()) bytes += data.byteLength;
    return { version, bytes, buckets: buckets.length, seconds };
  }
}
