/** `clawray/trainer`: the TrainerShard actor and weight publication. */

export { CheckpointManager } from './checkpoint.js';
export { type ShardInfo, TrainerShard, type TrainerShardOptions } from './trainer-shard.js';
export { bucketize, type PublishResult, WeightPublisher } from './weight-publisher.js';
