/**
 * Coalesces the messages produced in one turn of the event loop into one gRPC frame (many
 * calls or replies per frame is what makes pipelined calls cheap) and honours the stream's
 * backpressure so a huge payload never piles up in memory twice.
 */

export interface BatchSink<Item> {
  /** Writes one frame; false means the stream wants us to wait for `drain`. */
  write(items: Item[]): boolean;
  onceDrain(callback: () => void): void;
}

export type FlushScheduler = (flush: () => void) => void;

export const MAX_FRAME_BYTES = 1024 * 1024;

export class BatchWriter<Item> {
  private queue: Item[] = [];
  private queuedBytes: number[] = [];
  private scheduled = false;
  private waitingForDrain = false;
  private closed = false;

  constructor(
    private readonly sink: BatchSink<Item>,
    private readonly sizeOf: (item: Item) => number,
    private readonly schedule: FlushScheduler,
  ) {}

  push(item: Item): void {
    if (this.closed) return;
    this.queue.push(item);
    this.queuedBytes.push(this.sizeOf(item));
    if (!this.scheduled && !this.waitingForDrain) {
      this.scheduled = true;
      this.schedule(this.flush);
    }
  }

  /** Drops what is queued; used when the stream is gone. */
  close(): void {
    this.closed = true;
    this.queue = [];
    this.queuedBytes = [];
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    while (this.queue.length > 0 && !this.closed) {
      let bytes = 0;
      let count = 0;
      while (
        count < this.queue.length &&
        (count === 0 || bytes + this.queuedBytes[count] <= MAX_FRAME_BYTES)
      ) {
        bytes += this.queuedBytes[count];
        count++;
      }
      const items = count === this.queue.length ? this.queue : this.queue.slice(0, count);
      if (count === this.queue.length) {
        this.queue = [];
        this.queuedBytes = [];
      } else {
        this.queue = this.queue.slice(count);
        this.queuedBytes = this.queuedBytes.slice(count);
      }
      if (!this.sink.write(items)) {
        this.waitingForDrain = true;
        this.sink.onceDrain(() => {
          this.waitingForDrain = false;
          this.flush();
        });
        return;
      }
    }
  };
}

export const microtaskScheduler: FlushScheduler = (flush) => queueMicrotask(flush);
export const immediateScheduler: FlushScheduler = (flush) => setImmediate(flush);
