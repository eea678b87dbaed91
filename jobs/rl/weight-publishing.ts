/**
 * Publishing the trainers' weights to the rollout engines: every `train.updateWeightsEvery`
 * policy versions, or forced (the end of the warm start, a step an evaluation reads, the last
 * step).
 */
import { describePublished, type PublishedWeights } from '../../actors/trainer/weight-publisher.js';
import type { JobContext } from './job-context.js';

export interface PublishingTrainer {
  /** The policy version (optimizer steps taken). */
  readonly version: number;
  readWeights(): Promise<PublishedWeights>;
}

export interface PublishingEngines {
  publish(version: number, weights: PublishedWeights): Promise<void>;
  readonly healthyCount: number;
}

/** Publishes the trainers' weights when due or forced; true if it did. */
export async function publishWeights(
  ctx: JobContext,
  trainers: PublishingTrainer,
  engines: PublishingEngines,
  force: boolean,
): Promise<boolean> {
  if (!force && trainers.version % ctx.spec.train.updateWeightsEvery !== 0) return false;
  const weights = await trainers.readWeights();
  await engines.publish(trainers.version, weights);
  ctx.log(
    `published weight version ${trainers.version} to ${engines.healthyCount} rollout engine(s): ${describePublished(weights)}`,
  );
  return true;
}
