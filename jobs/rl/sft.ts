/**
 * Supervised fine-tuning on oracle traces: the warm start before RL (`train.warmup`), or the
 * whole job (`method: sft`). Every oracle turn of every training task becomes one sample,
 * rendered through the environment and the policy's chat template exactly as a rollout would
 * see it.
 */
import type { EnvPool } from '../../actors/envs/env-pool.js';
import { actionToMessage } from '../../actors/envs/environment.js';
import type { TrackTask } from '../../actors/envs/track.js';
import type { ChatMessage as TemplateMessage } from '../../actors/models/chat-template.js';
import type { TrainSample } from '../../actors/trainer/policy-trainer.js';
import { ConfigError } from '../../common/errors.js';
import type { ActorHandle } from '../../runtime/index.js';
import type { ChatCodec } from './chat-codec.js';
import { shuffled } from './shuffle.js';

/** One SFT sample per oracle turn of every training task that has an oracle. */
export async function oracleSamples(
  pool: ActorHandle<EnvPool> | undefined,
  codec: ChatCodec,
  tasks: TrackTask[],
  o: { seed: number; what: string },
): Promise<TrainSample[]> {
  const withOracle = tasks.filter((t) => t.oracle.length > 0);
  if (withOracle.length === 0 || !pool) {
    throw new ConfigError(`${o.what}: none of the training tasks has an oracle trace to imitate`);
  }
  const samples: TrainSample[] = [];
  for (const task of withOracle) {
    const lease = await pool.call('allocate', `oracle-${task.id}`);
    try {
      let obs = await pool.call('reset', lease.leaseId, task.id);
      for (const action of task.oracle) {
        const messages = obs.messages as unknown as TemplateMessage[];
        const prompt = codec.encodeChat(messages, obs.tools);
        const response = codec.encodeReply(messages, obs.tools, actionToMessage(action) as TemplateMessage);
        if (prompt.length + response.length <= codec.maxContext)
          samples.push({ tokenIds: [...prompt, ...response], responseStart: prompt.length });
        const r = await pool.call('step', lease.leaseId, action);
        if (r.done) break;
        obs = r.observation;
      }
    } finally {
      await pool.call('release', lease.leaseId).catch(() => {});
    }
  }
  return shuffled(samples, o.seed);
}

export interface SftLoopOptions {
  traces: TrainSample[];
  batchSize: number;
  /** Steps already done (a resumed job) and the total to reach. */
  done: number;
  total: number;
  /** The learning rate of the step after `step` steps (undefined: the trainer's schedule). */
  lr?: (step: number) => number | undefined;
  step(batch: TrainSample[], lr: number | undefined): Promise<number>;
  /** After each step (its 1-based number, loss and batch size). */
  afterStep(step: number, loss: number, samples: number, seconds: number): Promise<void>;
  stopRequested(): boolean;
}

/** The SFT steps from `done` to `total`; each takes the next `batchSize` traces in order. */
export async function runSft(o: SftLoopOptions): Promise<number> {
  const size = Math.min(o.traces.length, o.batchSize);
  let s = o.done;
  for (; s < o.total && !o.stopRequested(); s++) {
    const started = performance.now();
    const batch = Array.from({ length: size }, (_, k) => o.traces[(s * size + k) % o.traces.length]);
    const loss = await o.step(batch, o.lr?.(s));
    await o.afterStep(s + 1, loss, batch.length, (performance.now() - started) / 1000);
  }
  return s;
}
