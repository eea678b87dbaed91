/**
 * The group's shared-memory path, taken when every rank shares one host: agreeing on a region
 * when the ring connects, and the all-reduce that runs shm-allreduce.ts's plan between barriers
 * carried by the ring's sockets. The sockets stay because a dead peer is a closed connection,
 * which the kernel reports at once; a rank that died inside shared memory would just stop
 * writing (transport.ts).
 */
import { EMPTY, type Operation, type SendFrame } from './operation.js';
import { type SharedMemory, type SharedRegion, sharedMemory } from './shared-memory.js';
import { planShmAllReduce, type ShmAllReduceInput, shmRegionFloats } from './shm-allreduce.js';

export interface RegionAgreementInput {
  rank: number;
  worldSize: number;
  groupName: string;
  windowFloats: number;
  /** Where regions come from; default the host's. */
  source?: SharedMemory | string;
  /** Broadcasts `buffer` from rank 0 over the ring. */
  broadcast(buffer: Float32Array): Promise<void>;
  /** Sums `buffer` over the ring. */
  allReduce(buffer: Float32Array): Promise<void>;
}

/**
 * Rank 0 creates the region and hands its path around the ring; every rank maps it; an
 * all-reduce of the failures decides, the same way on every rank, whether the group uses it.
 * Resolves with the (sealed) region, or why the group cannot use one; rejects with the ring's
 * failure when a rank dies or the group closes meanwhile.
 */
export async function agreeOnRegion(
  input: RegionAgreementInput,
): Promise<{ region: SharedRegion } | { unavailable: string }> {
  const { rank, worldSize, groupName, windowFloats } = input;
  const bytes = shmRegionFloats(worldSize, windowFloats) * 4;
  const source = input.source ?? (await sharedMemory());
  let region: SharedRegion | undefined;
  let reason: string | undefined;
  const offer = new Float32Array(256);
  const offerBytes = new Uint8Array(offer.buffer);
  if (rank === 0) {
    try {
      if (typeof source === 'string') throw new Error(source);
      region = source.create(bytes, `clawray-collective-${groupName}`);
      offerBytes.set(Buffer.from(JSON.stringify({ path: region.path })));
    } catch (err) {
      // The offer travels in a 1 KiB buffer.
      reason = `rank 0 cannot create ${bytes} bytes of shared memory: ${(err as Error).message}`;
      reason = reason.slice(0, 900);
      offerBytes.set(Buffer.from(JSON.stringify({ error: reason })));
    }
  }
  const failed = new Float32Array(1);
  try {
    await input.broadcast(offer);
    if (rank !== 0) {
      const text = Buffer.from(offerBytes).toString('utf8').replace(/\0+$/, '');
      const { path, error } = JSON.parse(text) as { path?: string; error?: string };
      try {
        if (typeof source === 'string') throw new Error(source);
        if (path === undefined) throw new Error(error ?? 'no region offered');
        region = source.open(path, bytes);
      } catch (err) {
        reason =
          path === undefined
            ? error
            : `rank ${rank} cannot map rank 0's shared memory: ${(err as Error).message}`;
      }
    }
    failed[0] = region ? 0 : 1;
    await input.allReduce(failed);
  } catch (err) {
    // A rank died or the group closed while setting up: the ring's failure is the error.
    region?.close();
    throw err;
  }
  if (failed[0] === 0) {
    region!.seal();
    return { region: region! };
  }
  region?.close();
  return { unavailable: reason ?? `${failed[0]} rank(s) could not map the group's shared memory` };
}

/** The plan's input, with the group's mapped region in place of its floats, and the ring. */
export interface ShmAllReduceOperation extends Omit<ShmAllReduceInput, 'region'> {
  region: SharedRegion;
  send: SendFrame;
  /** False once the group failed or closed: no more work touches the region. */
  live(): boolean;
}

/**
 * Fills `op` with the shared-memory all-reduce: barriers of N−1 empty frames around the ring (a
 * rank forwards one only after entering the barrier itself, so the last frame arriving means
 * every rank has entered), the plan's work done between them. Each frame's sub field carries
 * the buffer's length, which the receiver checks against its own.
 */
export function fillShmAllReduce(op: Operation, input: ShmAllReduceOperation): void {
  const { worldSize: n, buffer, send } = input;
  const plan = planShmAllReduce({ ...input, region: input.region.floats });
  const hops = n - 1;
  const length = buffer.length >>> 0;
  const work = (b: number): void => {
    if (input.live()) plan.work(b);
  };
  op.sendsLeft = plan.barriers * hops;
  for (let b = 0; b < plan.barriers; b++) {
    for (let k = 0; k < hops; k++) {
      const step = b * hops + k;
      op.recvs.push({
        step,
        sub: length,
        bytes: 0,
        dest: EMPTY,
        done:
          k + 1 < hops
            ? () => send(op.id, step + 1, length, EMPTY)
            : () => {
                work(b + 1);
                if (b + 1 < plan.barriers) send(op.id, step + 1, length, EMPTY);
              },
      });
    }
  }
  work(0);
  send(op.id, 0, length, EMPTY);
}
