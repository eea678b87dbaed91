/**
 * Requests that are feasible but wait for resources (actors and placement groups), retried in
 * arrival order whenever resources free up. `retry` resolves true once the entry is settled
 * (placed, failed or gone).
 */
export class PendingQueue {
  private readonly entries = new Map<string, () => Promise<boolean>>();
  private running = false;
  private again = false;
  private scheduled = false;

  add(key: string, retry: () => Promise<boolean>): void {
    this.entries.set(key, retry);
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  get size(): number {
    return this.entries.size;
  }

  /** Resources changed: retry everything waiting, soon (coalesced). */
  kick(): void {
    if (this.entries.size === 0 || this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.run();
    });
  }

  private async run(): Promise<void> {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    try {
      do {
        this.again = false;
        for (const [key, retry] of [...this.entries]) {
          if (this.entries.get(key) !== retry) continue;
          if (await retry()) {
            if (this.entries.get(key) === retry) this.entries.delete(key);
          }
        }
      } while (this.again);
    } finally {
      this.running = false;
    }
  }
}
