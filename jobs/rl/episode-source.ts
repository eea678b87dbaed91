/**
 * The env tracks' rollout source: each gate-admitted group is `samplesPerGroup` episodes of one
 * training task, played on any free slot. An episode whose engine or environment died is
 * played again from the start (its partial turns were never appended); an episode whose own
 * code failed is retried a few times and then fails the job.
 */
import type { TrackTask } from '../../actors/envs/track.js';
import { sleep } from '../../common/backoff.js';
import { errorChainMessage } from '../../common/errors.js';
import type { TrajectoryRecord } from '../buffer/types.js';
import { EpisodeQueue, type EpisodeTicket } from './episode-queue.js';
import { isPeerLoss } from './failures.js';
import type { RolloutContext, RolloutSource } from './rollout-source.js';

export interface EpisodeSourceOptions {
  tasks: TrackTask[];
  samplesPerGroup: number;
  slots: number;
  /** Plays one episode and returns its turns as trajectory records. */
  play(
    ticket: EpisodeTicket,
    task: TrackTask,
    slot: number,
    signal: AbortSignal,
  ): Promise<TrajectoryRecord[]>;
  /** Attempts for an episode whose own code failed (default 3). */
  maxAttempts?: number;
  /** How long an episode keeps being retried while its peers are down (default 10 min). */
  peerLossBudgetMs?: number;
  retryDelayMs?: number;
}

export class EpisodeSource implements RolloutSource {
  constructor(private readonly o: EpisodeSourceOptions) {}

  get slots(): number {
    return this.o.slots;
  }

  async run(ctx: RolloutContext): Promise<void> {
    const queue = new EpisodeQueue(ctx.gate, this.o.samplesPerGroup);
    const slot = async (w: number) => {
      for (let ticket = await queue.take(); ticket && !ctx.signal.aborted; ticket = await queue.take()) {
        const task = this.o.tasks[ticket.group % this.o.tasks.length];
        const records = await this.playWithRetries(ticket, task, w, ctx);
        if (records) await ctx.append(records);
      }
    };
    await Promise.all(Array.from({ length: this.o.slots }, (_, w) => slot(w)));
  }

  private async playWithRetries(
    ticket: EpisodeTicket,
    task: TrackTask,
    w: number,
    ctx: RolloutContext,
  ): Promise<TrajectoryRecord[] | undefined> {
    const maxAttempts = this.o.maxAttempts ?? 3;
    const lossDeadline = Date.now() + (this.o.peerLossBudgetMs ?? 600_000);
    for (let attempt = 1; ; attempt++) {
      if (ctx.signal.aborted) return undefined;
      try {
        return await this.o.play(ticket, task, w, ctx.signal);
      } catch (err) {
        if (ctx.signal.aborted) return undefined;
        const loss = isPeerLoss(err);
        if (loss ? Date.now() > lossDeadline : attempt >= maxAttempts) throw err;
        ctx.log(
          `episode g${ticket.group}/e${ticket.index} on ${task.id} ${loss ? 'lost a peer' : 'failed'} (attempt ${attempt}), playing it again: ${errorChainMessage(err)}`,
        );
        if (loss) await sleep(this.o.retryDelayMs ?? 250, ctx.signal);
      }
    }
  }
}
