/**
 * The job's rollout engines as a pool (slime's rollout manager, with Ray's restartable actors
 * under it). Work goes to healthy engines in turn; an engine whose call fails because it died
 * (or restarted and came back with its initial weights) leaves the pool, and a background
 * healer waits for the runtime to bring it back, hands it the current weights and returns it
 * to the pool. Callers retry their work on another engine, so one engine's death costs the
 * episodes it was playing a restart, never the job.
 */

import type { PublishedWeights } from '../../actors/trainer/weight-publisher.js';
import { sleep } from '../../common/backoff.js';

/** What the pool needs of an engine actor (a subset of RolloutEngine's methods). */
export interface PoolEngine {
  call(method: 'ready'): Promise<{ weightVersion: number }>;
  call(method: 'stageWeights', version: number, bucket: Map<string, Float32Array>): Promise<unknown>;
  call(method: 'commitWeights', version: number): Promise<number>;
}

/** Publishes one weight version to a set of engines (WeightPublisher in the job). */
export type PublishFn<E> = (engines: E[], version: number, weights: PublishedWeights) => Promise<void>;

export interface EnginePoolOptions<E> {
  publish: PublishFn<E>;
  /** How often an engine that left the pool is probed (default 500 ms). */
  healIntervalMs?: number;
  log?: (line: string) => void;
}

export class EnginePool<E extends object> {
  private readonly healthy: boolean[];
  /** The version each engine was last given (and committed). */
  private readonly served: number[];
  private readonly healing = new Set<number>();
  private next = 0;
  private waiters: Array<() => void> = [];
  private version = 0;
  private weights?: PublishedWeights;
  private closed = false;
  private readonly stop = new AbortController();
  /** Engines that left the pool and came back (for the job's log and tests). */
  recoveries = 0;

  constructor(
    readonly engines: E[],
    private readonly o: EnginePoolOptions<E>,
  ) {
    this.healthy = engines.map(() => true);
    this.served = engines.map(() => 0);
  }

  /**
   * The version every healthy engine has committed (what a request sent now is served by, at
   * least); 0 before the first publish or while no engine is healthy.
   */
  get committedVersion(): number {
    const versions = this.served.filter((_, i) => this.healthy[i]);
    return versions.length > 0 ? Math.min(...versions) : 0;
  }

  /** The version engine `index` had committed when last published to. */
  servedVersion(index: number): number {
    return this.served[index];
  }

  /** The weight version every healthy engine serves. */
  get weightVersion(): number {
    return this.version;
  }

  get healthyCount(): number {
    return this.healthy.filter(Boolean).length;
  }

  /** The next healthy engine (round robin from `hint`); waits while none is healthy. */
  async pick(hint?: number): Promise<{ engine: E; index: number }> {
    for (;;) {
      if (this.closed) throw new Error('the engine pool is closed');
      const n = this.engines.length;
      const start = hint ?? this.next++;
      for (let k = 0; k < n; k++) {
        const index = (((start + k) % n) + n) % n;
        if (this.healthy[index]) return { engine: this.engines[index], index };
      }
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  /**
   * Runs `work` on a healthy engine; when it fails because the engine is gone (`isLoss`), the
   * engine leaves the pool and the work runs again on another one, up to `maxAttempts`.
   */
  async run<R>(
    work: (engine: E, index: number) => Promise<R>,
    isLoss: (err: unknown) => boolean,
    o: { hint?: number; maxAttempts?: number } = {},
  ): Promise<R> {
    const maxAttempts = o.maxAttempts ?? 20;
    for (let attempt = 1; ; attempt++) {
      const { engine, index } = await this.pick(attempt === 1 ? o.hint : undefined);
      try {
        return await work(engine, index);
      } catch (err) {
        if (!isLoss(err) || attempt >= maxAttempts) throw err;
        this.markDown(index, (err as Error).message);
      }
    }
  }

  /**
   * A result came back from an older version than the engine had committed when the call was
   * sent (`since`, from `servedVersion`): the engine restarted (with its initial weights) —
   * take it out and bring it up to date. A call that was in flight across an ordinary swap
   * answers from the version it started on, which is no sign of anything.
   */
  noteVersion(index: number, weightVersion: number, since: number): void {
    if (weightVersion < since && this.healthy[index])
      this.markDown(index, `it answered from weight version ${weightVersion} after it had ${since}`);
  }

  markDown(index: number, why: string): void {
    if (this.closed || !this.healthy[index]) return;
    this.healthy[index] = false;
    this.o.log?.(`rollout engine ${index} left the pool (${why}); waiting for it to come back`);
    if (!this.healing.has(index)) {
      this.healing.add(index);
      void this.heal(index).finally(() => this.healing.delete(index));
    }
  }

  /** Publishes to every healthy engine; engines that are healing get the weights when back. */
  async publish(version: number, weights: PublishedWeights): Promise<void> {
    this.weights = weights;
    this.version = version;
    const members = this.engines.map((e, i) => ({ e, i })).filter(({ i }) => this.healthy[i]);
    const results = await Promise.allSettled(members.map(({ e }) => this.o.publish([e], version, weights)));
    results.forEach((r, k) => {
      if (r.status === 'rejected') this.markDown(members[k].i, `publishing failed: ${r.reason}`);
      else this.served[members[k].i] = Math.max(this.served[members[k].i], version);
    });
  }

  close(): void {
    this.closed = true;
    this.stop.abort();
    this.wake();
  }

  private async heal(index: number): Promise<void> {
    const engine = this.engines[index] as unknown as PoolEngine;
    const interval = this.o.healIntervalMs ?? 500;
    while (!this.closed) {
      try {
        const { weightVersion } = await engine.call('ready');
        const version = this.version;
        if (weightVersion < version && this.weights)
          await this.o.publish([this.engines[index]], version, this.weights);
        // A newer version may have been published while this one was being sent.
        if (this.version !== version) continue;
        this.served[index] = version;
        this.healthy[index] = true;
        this.recoveries++;
        this.o.log?.(`rollout engine ${index} is back in the pool at weight version ${version}`);
        this.wake();
        return;
      } catch {
        await sleep(interval, this.stop.signal);
      }
    }
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
