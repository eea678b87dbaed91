/**
 * Worker threads for the rollout engine's LoRA merges. Merging a Qwen3-0.6B's adapters is
 * 440 M weights × rank multiply-adds (seconds of CPU): on the event loop it would stall every
 * decode step and request of the engine meanwhile, and on one thread it would leave a GPU
 * box's other cores idle. Tensors are merged in parallel on up to `size` threads; each task
 * moves compact copies of its inputs to the thread (the caller keeps its base for later merges)
 * and the result comes back transferred. A thread that dies fails its tasks with MergeWorkerError and is replaced on the
 * next task.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { ClawrayError, ConfigError, registerErrorClass } from '../../common/errors.js';
import { distEntry } from '../../common/package-root.js';

export interface MergeDims {
  out: number;
  in: number;
  rank: number;
}

/** What a worker thread gets for one tensor. */
export interface MergeTask {
  id: number;
  base: Float32Array;
  A: Float32Array;
  B: Float32Array;
  scale: number;
  dims: MergeDims;
}

export type MergeReply =
  | { id: number; merged: Float32Array }
  | { id: number; error: { name: string; message: string } };

/** A merge thread died (or could not start) before it answered. */
export class MergeWorkerError extends ClawrayError {
  override readonly retryable = true;
}
registerErrorClass(MergeWorkerError);

interface Pending {
  resolve(merged: Float32Array): void;
  reject(err: Error): void;
}

interface Slot {
  worker: Worker;
  /** Task ids this thread holds. */
  busy: Set<number>;
}

/** Threads by default: all cores but one (decoding keeps that), at most 4, at least 1. */
export const DEFAULT_MERGE_THREADS = Math.max(1, Math.min(4, availableParallelism() - 1));

export class LoraMergePool {
  private readonly slots: Slot[] = [];
  private readonly pending = new Map<number, Pending>();
  private readonly queue: { task: MergeTask; pending: Pending }[] = [];
  private nextId = 1;

  constructor(readonly size = DEFAULT_MERGE_THREADS) {
    if (!Number.isInteger(size) || size < 1) {
      throw new ConfigError(`LoraMergePool: size must be a whole number ≥ 1, got ${size}`, {
        fields: { size },
      });
    }
  }

  /** W + scale·B·A (mergeLora's contract), computed on a worker thread. */
  merge(
    base: Float32Array,
    A: Float32Array,
    B: Float32Array,
    scale: number,
    dims: MergeDims,
  ): Promise<Float32Array> {
    return new Promise((resolve, reject) => {
      // Compact copies, transferred: posting a view would copy its whole ArrayBuffer (an update's
      // adapters often share one), and the caller keeps its base for later merges.
      const task: MergeTask = {
        id: this.nextId++,
        base: base.slice(),
        A: A.slice(),
        B: B.slice(),
        scale,
        // Only the three numbers: a caller's `dims` may carry more (the arrays themselves).
        dims: { out: dims.out, in: dims.in, rank: dims.rank },
      };
      this.queue.push({ task, pending: { resolve, reject } });
      this.dispatch();
    });
  }

  /** Stops the threads; tasks not answered yet fail. */
  async close(): Promise<void> {
    const closed = () => new MergeWorkerError('LoRA merge pool closed');
    const slots = this.slots.splice(0);
    for (const { pending } of this.queue.splice(0)) pending.reject(closed());
    for (const pending of this.pending.values()) pending.reject(closed());
    this.pending.clear();
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      const slot = this.idleSlot();
      if (!slot) return;
      const { task, pending } = this.queue.shift()!;
      this.pending.set(task.id, pending);
      slot.busy.add(task.id);
      slot.worker.postMessage(task, [task.base.buffer, task.A.buffer, task.B.buffer] as ArrayBuffer[]);
    }
  }

  private idleSlot(): Slot | undefined {
    const idle = this.slots.find((s) => s.busy.size === 0);
    if (idle) return idle;
    if (this.slots.length >= this.size) return undefined;
    const slot: Slot = { worker: new Worker(distEntry('actors/rollout/lora-merge-worker')), busy: new Set() };
    // Idle merge threads never keep the engine's process alive.
    slot.worker.unref();
    slot.worker.on('message', (reply: MergeReply) => this.answer(slot, reply));
    const lost = (why: string) => this.lose(slot, why);
    slot.worker.on('error', (err) => lost(err.message));
    slot.worker.on('exit', (code) => lost(`exited with code ${code}`));
    this.slots.push(slot);
    return slot;
  }

  private answer(slot: Slot, reply: MergeReply): void {
    slot.busy.delete(reply.id);
    const pending = this.pending.get(reply.id);
    this.pending.delete(reply.id);
    if (pending) {
      if ('merged' in reply) pending.resolve(reply.merged);
      // mergeLora refuses shapes with a ConfigError; anything else is the thread's failure.
      else if (reply.error.name === 'ConfigError') pending.reject(new ConfigError(reply.error.message));
      else pending.reject(new MergeWorkerError(`LoRA merge failed: ${reply.error.message}`));
    }
    this.dispatch();
  }

  private lose(slot: Slot, why: string): void {
    const at = this.slots.indexOf(slot);
    if (at < 0) return;
    this.slots.splice(at, 1);
    for (const id of slot.busy) {
      const pending = this.pending.get(id);
      this.pending.delete(id);
      pending?.reject(new MergeWorkerError(`LoRA merge thread ${why}`, { fields: { task: id } }));
    }
    this.dispatch();
  }
}

let shared: LoraMergePool | undefined;

/** The process's merge threads, started on the first merge. */
export function sharedMergePool(): LoraMergePool {
  shared ??= new LoraMergePool();
  return shared;
}
