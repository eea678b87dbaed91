/**
 * Pre-started actor hosts. Starting Node and loading gRPC takes a host most of its start-up
 * time, so the pool keeps `size` of them bound and waiting; taking one only costs the actor's
 * own import and constructor. The pool refills in the background, a few spawns at a time.
 */
import type { Logger } from '../common/logger.js';
import { HostProcess } from './host-process.js';

const MAX_PARALLEL_SPAWNS = 2;

export class HostPool {
  private readonly idle: HostProcess[] = [];
  private spawning = 0;
  private closed = false;

  constructor(
    private readonly size: number,
    private readonly logger: Logger,
    private readonly bindHost: string,
  ) {}

  start(): void {
    this.refill();
  }

  get idleCount(): number {
    return this.idle.length;
  }

  /** A ready host: from the pool when one is waiting, else a freshly started one. */
  async take(): Promise<HostProcess> {
    while (this.idle.length > 0) {
      const host = this.idle.shift()!;
      this.refill();
      if (host.alive) return host;
    }
    const host = this.spawn();
    this.refill();
    await host.ready;
    return host;
  }

  /** Waits until the pool is full (used by benchmarks and tests to measure warm starts). */
  async warm(): Promise<void> {
    while (!this.closed && this.idle.length < this.size) await new Promise((r) => setTimeout(r, 20));
  }

  async close(): Promise<void> {
    this.closed = true;
    const hosts = this.idle.splice(0);
    await Promise.all(hosts.map((h) => h.stop(false, 0)));
  }

  private spawn(): HostProcess {
    return new HostProcess(this.logger, { bindHost: this.bindHost });
  }

  private refill(): void {
    while (
      !this.closed &&
      this.idle.length + this.spawning < this.size &&
      this.spawning < MAX_PARALLEL_SPAWNS
    ) {
      this.spawning++;
      const host = this.spawn();
      host.ready.then(
        () => {
          this.spawning--;
          if (this.closed) void host.stop(false, 0);
          else {
            this.idle.push(host);
            void host.exited.then(() => {
              const i = this.idle.indexOf(host);
              if (i >= 0) this.idle.splice(i, 1);
            });
          }
          this.refill();
        },
        (err: Error) => {
          this.spawning--;
          this.logger.error({ err }, 'an actor host failed to start');
          // Do not spin on a host that cannot start: try again a little later.
          if (!this.closed) setTimeout(() => this.refill(), 1000).unref();
        },
      );
    }
  }
}
