/**
 * The longest a client of the head waits between attempts to reach a head it lost (the gRPC
 * channel's reconnect backoff and a worker's re-registration). Kept well below the node
 * timeout (default 3 s) so workers are back soon after a head restart; a restarted head
 * allows reloaded nodes this much on top of the node timeout to re-register.
 */
export const HEAD_RECONNECT_MAX_MS = 1000;

/** The first reconnect attempt after a lost head comes this soon. */
export const HEAD_RECONNECT_INITIAL_MS = 100;

export interface BackoffOptions {
  /** First delay. Default 50 ms. */
  initialMs?: number;
  /** Longest delay. Default 2000 ms. */
  maxMs?: number;
  /** Growth per attempt. Default 2. */
  factor?: number;
}

/** Exponential backoff with full jitter; `next()` gives the delay before the next attempt. */
export class Backoff {
  private attempt = 0;
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly factor: number;

  constructor(options: BackoffOptions = {}) {
    this.initialMs = options.initialMs ?? 50;
    this.maxMs = options.maxMs ?? 2000;
    this.factor = options.factor ?? 2;
  }

  next(): number {
    const ceiling = Math.min(this.maxMs, this.initialMs * this.factor ** this.attempt);
    this.attempt++;
    return Math.max(1, Math.round(ceiling / 2 + (Math.random() * ceiling) / 2));
  }

  reset(): void {
    this.attempt = 0;
  }
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
