/**
 * Which frames a rank sends and receives for one operation on the ring, from (rank, world size,
 * buffer length, sub-chunk size) alone: pure, so both ends of a link derive the same sequence
 * without talking, and the receiver can check every header against it (frame-codec.ts).
 *
 * All-reduce: reduce-scatter then all-gather, 2(N−1) steps over N chunks (partBounds), each
 * chunk cut into sub-chunks that move on as soon as they are in, so sending one slice overlaps
 * receiving and reducing the next. At reduce-scatter step k rank r receives chunk r−k−1 (the
 * previous rank's partial sum) and adds its own; the slice it receives at step k is the one it
 * sends at step k+1, so chunk c is summed along the ring in one fixed order by a chain that
 * ends at its owner (rank c−1 mod N), whose last addition makes it final. The all-gather then
 * passes the owners' bytes around unchanged: every rank ends with bit-identical results.
 *
 * Broadcast: the root sends its buffer in sub-chunks, all at step 0; every other rank receives
 * them in place and passes them on, except the rank before the root.
 */
import { partBounds } from './shm-allreduce.js';

/** Sub-chunk `sub` of step `step`: the buffer's elements [start, end). */
export interface ScheduledFrame {
  step: number;
  sub: number;
  start: number;
  end: number;
}

export interface ScheduledReceive extends ScheduledFrame {
  /**
   * 'reduce': the previous rank's partial sum, added into the buffer; 'reduce-last': the last
   * addition into a chunk this rank owns (where a mean divides); 'copy': final bytes, in place.
   */
  kind: 'reduce' | 'reduce-last' | 'copy';
  /** The step the same elements are sent on as once this frame is in; -1: not sent on. */
  forward: number;
}

export interface RingSchedule {
  /** Sent when the operation starts, in this order. */
  initial: ScheduledFrame[];
  /** Expected from the previous rank, in this order. */
  receives: ScheduledReceive[];
  /** Frames this rank sends in all: the initial ones and the forwarded ones. */
  sends: number;
}

/** Calls `each` for the sub-chunks of [start, end): at least one (possibly empty), each at most `sub` elements. */
function forSubChunks(
  start: number,
  end: number,
  sub: number,
  each: (j: number, s: number, e: number) => void,
): void {
  let j = 0;
  for (let s = start; s < end; s += sub) each(j++, s, Math.min(end, s + sub));
  if (j === 0) each(0, start, start);
}

export function allReduceSchedule(
  rank: number,
  worldSize: number,
  length: number,
  subChunkFloats: number,
): RingSchedule {
  const n = worldSize;
  const mod = (x: number): number => ((x % n) + n) % n;
  const sendChunk = (k: number): number => (k < n - 1 ? mod(rank - k) : mod(rank + 1 - (k - (n - 1))));
  const recvChunk = (k: number): number => (k < n - 1 ? mod(rank - k - 1) : mod(rank - (k - (n - 1))));
  const steps = 2 * (n - 1);
  const initial: ScheduledFrame[] = [];
  const [s0, e0] = partBounds(length, n, sendChunk(0));
  forSubChunks(s0, e0, subChunkFloats, (sub, start, end) => initial.push({ step: 0, sub, start, end }));
  const receives: ScheduledReceive[] = [];
  for (let step = 0; step < steps; step++) {
    const kind = step < n - 2 ? 'reduce' : step === n - 2 ? 'reduce-last' : 'copy';
    const forward = step + 1 < steps ? step + 1 : -1;
    const [s, e] = partBounds(length, n, recvChunk(step));
    forSubChunks(s, e, subChunkFloats, (sub, start, end) =>
      receives.push({ step, sub, start, end, kind, forward }),
    );
  }
  const forwarded = receives.reduce((count, r) => count + (r.forward >= 0 ? 1 : 0), 0);
  return { initial, receives, sends: initial.length + forwarded };
}

export function broadcastSchedule(
  rank: number,
  worldSize: number,
  length: number,
  subChunkFloats: number,
  root: number,
): RingSchedule {
  const initial: ScheduledFrame[] = [];
  const receives: ScheduledReceive[] = [];
  // The rank before the root is the end of the line.
  const forward = (rank + 1) % worldSize !== root ? 0 : -1;
  forSubChunks(0, length, subChunkFloats, (sub, start, end) => {
    if (rank === root) initial.push({ step: 0, sub, start, end });
    else receives.push({ step: 0, sub, start, end, kind: 'copy', forward });
  });
  const sends = rank === root ? initial.length : forward >= 0 ? receives.length : 0;
  return { initial, receives, sends };
}

/** Everything a rank sends, in the order it goes on the wire (what the next rank receives). */
export function sendOrder(schedule: RingSchedule): ScheduledFrame[] {
  const forwarded = schedule.receives
    .filter((r) => r.forward >= 0)
    .map((r) => ({ step: r.forward, sub: r.sub, start: r.start, end: r.end }));
  return [...schedule.initial, ...forwarded];
}
