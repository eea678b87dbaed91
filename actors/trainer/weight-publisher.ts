/**
 * Publishes new weights to rollout engines: tensors go in buckets of bounded size (like
 * slime's 512 MiB buckets, so no single message or buffer holds a whole large model), to all
 * engines at once, then each engine swaps to the version in one step.
 *
 * A trainer that trains LoRA publishes only its adapters (`<module>.lora_A|B.weight` and the
 * scale alpha/rank) — delta sync, as TRL and slime do — and each engine merges
 * W = base + scale·B·A into its own weights: megabytes on the wire instead of the model.
 * Adapters are cumulative (trained from the frozen base), so the engine keeps the base of
 * each adapted tensor and a lost or repeated publish never compounds.
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import type { ActorHandle } from '../../runtime/index.js';
import type { WeightMap } from '../models/weight-names.js';
import type { RolloutEngine } from '../rollout/rollout-engine-actor.js';

export const DEFAULT_BUCKET_BYTES = 512 * 1024 * 1024;

export interface PublishResult {
  version: number;
  /** 'lora': adapters only (delta sync); 'full': weights by Hugging Face name. */
  kind: 'full' | 'lora';
  bytes: number;
  buckets: number;
  seconds: number;
}

/** LoRA adapters by PEFT name (`<module>.lora_A.weight` [rank, in], `.lora_B.weight` [out, rank]) and their scale. */
export interface LoraPublish {
  lora: { scale: number; adapters: WeightMap };
}

/** What a trainer publishes: full (or changed) weights, or LoRA adapters. */
export type PublishedWeights = WeightMap | LoraPublish;

export function isLoraPublish(w: PublishedWeights): w is LoraPublish {
  return !(w instanceof Map);
}

/** Tensors and bytes of a publication, and whether it is LoRA adapters only (delta sync). */
export function publishedSize(weights: PublishedWeights): {
  kind: 'full' | 'lora';
  tensors: number;
  bytes: number;
} {
  const lora = isLoraPublish(weights);
  const tensors = lora ? weights.lora.adapters : weights;
  let bytes = 0;
  for (const data of tensors.values()) bytes += data.byteLength;
  return { kind: lora ? 'lora' : 'full', tensors: tensors.size, bytes };
}

/** One line for the job log: "LoRA adapters only (14 tensors, 0.88 MiB)" or "full weights (…)". */
export function describePublished(weights: PublishedWeights): string {
  const { kind, tensors, bytes } = publishedSize(weights);
  const mib = bytes / 2 ** 20;
  return `${kind === 'lora' ? 'LoRA adapters only' : 'full weights'} (${tensors} tensors, ${mib < 10 ? mib.toFixed(2) : mib.toFixed(0)} MiB)`;
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
  private readonly sent?: Counter<'kind'>;

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
      // Bytes sent per engine, by kind: with LoRA only adapters ever travel (delta sync).
      this.sent = new Counter({
        name: 'clawray_trainer_weight_publish_bytes_total',
        help: 'Tensor bytes published to rollout engines (per engine), by kind: full weights or LoRA adapters only',
        labelNames: ['kind'],
        registers: [options.registry],
      });
    }
  }

  /**
   * Sends `version` to `engines` (default: all of this publisher's) and swaps them to it:
   * full weights, or LoRA adapters with their scale (see `LoraPublish`).
   */
  async publish(
    version: number,
    weights: PublishedWeights,
    engines: readonly ActorHandle<RolloutEngine>[] = this.engines,
  ): Promise<PublishResult> {
    const started = performance.now();
    const lora = isLoraPublish(weights) ? weights.lora : undefined;
    const tensors = lora ? lora.adapters : (weights as WeightMap);
    const options = lora ? { loraScale: lora.scale } : {};
    const buckets = bucketize(tensors, this.options.bucketBytes);
    await Promise.all(
      engines.map(async (engine) => {
        for (const bucket of buckets) await engine.call('stageWeights', version, bucket);
        await engine.call('commitWeights', version, options);
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    this.duration?.observe(seconds);
    const { kind, bytes } = publishedSize(weights);
    this.sent?.inc({ kind }, bytes * engines.length);
    return { version, kind, bytes, buckets: buckets.length, seconds };
  }
}
