/**
 * The judge loop: rollout stream → judge → judged stream. An episode's turns are judged once
 * all of them are in; its rollout entries are acked only after its judged records are
 * appended, so a driver that dies in between judges the episode again on resume (the judged
 * append is idempotent by trajectory id). A judge that dies mid-vote is retried until the
 * runtime brings it back.
 */

import { sleep } from '../../common/backoff.js';
import { errorChainMessage } from '../../common/errors.js';
import type { TrajectoryBuffer, TrajectoryRecord } from '../buffer/types.js';
import { groupKey } from './batches.js';
import { isPeerLoss } from './failures.js';
import { JUDGE_GROUP } from './trajectory-ledger.js';

export interface JudgeLoopOptions {
  rollouts: TrajectoryBuffer;
  judged: TrajectoryBuffer;
  /** Judges one episode's turns (in turn order). */
  judge(turns: TrajectoryRecord[]): Promise<TrajectoryRecord[]>;
  /** True once nothing more will be appended to the rollout stream. */
  rolloutsDone(): boolean;
  signal: AbortSignal;
  consumer?: string;
  readCount?: number;
  blockMs?: number;
  retryDelayMs?: number;
  /** Episodes whose turns are still arriving (for the buffer-lag metric). */
  onWaiting?(episodes: number): void;
  log?(line: string): void;
}

export async function runJudgeLoop(o: JudgeLoopOptions): Promise<void> {
  const consumer = o.consumer ?? 'driver';
  const waiting = new Map<string, { turns: TrajectoryRecord[]; entryIds: string[] }>();
  // What this consumer was handed before a restart and never acked comes first.
  let entries = await o.rollouts.readPending({ group: JUDGE_GROUP, consumer, count: 10_000 });
  while (!o.signal.aborted) {
    if (entries.length === 0) {
      // Checked before reading: a read that comes back empty after this saw everything.
      const done = o.rolloutsDone();
      entries = await o.rollouts.read({
        group: JUDGE_GROUP,
        consumer,
        count: o.readCount ?? 64,
        blockMs: o.blockMs ?? 100,
      });
      if (entries.length === 0 && done) break;
    }
    for (const e of entries) {
      if (o.signal.aborted) return;
      const k = groupKey(e.record);
      const w = waiting.get(k.episode) ?? { turns: [], entryIds: [] };
      // A replayed entry can arrive twice (pending and re-read): keep one of each turn.
      if (!w.turns.some((t) => t.trajectoryId === e.record.trajectoryId)) w.turns.push(e.record);
      w.entryIds.push(e.entryId);
      waiting.set(k.episode, w);
      if (w.turns.length < k.turns) continue;
      waiting.delete(k.episode);
      const turns = w.turns.sort((a, b) => a.turn - b.turn);
      const judged = await judgeWithRetries(o, turns);
      if (!judged) return;
      await o.judged.append(judged);
      await o.rollouts.ack(JUDGE_GROUP, w.entryIds);
    }
    entries = [];
    o.onWaiting?.(waiting.size);
  }
}

async function judgeWithRetries(
  o: JudgeLoopOptions,
  turns: TrajectoryRecord[],
): Promise<TrajectoryRecord[] | undefined> {
  for (let attempt = 1; ; attempt++) {
    if (o.signal.aborted) return undefined;
    try {
      return await o.judge(turns);
    } catch (err) {
      if (!isPeerLoss(err) || o.signal.aborted) throw err;
      if (attempt === 1)
        o.log?.(`judging ${turns[0].sessionId} lost a peer, retrying: ${errorChainMessage(err)}`);
      await sleep(o.retryDelayMs ?? 250, o.signal);
    }
  }
}
