/**
 * `EnvPool`: an actor holding `parallel` environments of one track, lent out by lease.
 *
 *   const pool = await cluster.createActor({ module: 'clawray/envs', className: 'EnvPool',
 *     args: [{ track: 'terminal', parallel: 8 }] });
 *   const lease = await pool.call('allocate', requestId);
 *   const obs = await pool.call('reset', lease.leaseId);
 *   const step = await pool.call('step', lease.leaseId, action);
 *   await pool.call('release', lease.leaseId);
 *
 * Every call on a lease renews it; `heartbeat` renews it between calls. A lease not renewed for
 * `leaseTtlMs` expires and its environment goes back to the pool, so a caller that dies
 * mid-episode (a crashed rollout worker) never holds an environment forever. `allocate` is
 * idempotent per request id while the lease lives, so a caller that retries an allocate whose
 * reply was lost gets the same lease instead of leaking a second one.
 */
import { randomUUID } from 'node:crypto';
import { Counter, Gauge, Histogram, type Registry, register } from 'prom-client';
import { z } from 'zod';
import { ClawrayError, ConfigError, NotFoundError, registerErrorClass } from '../../common/errors.js';
import { loadPluginFunction } from '../../common/plugin-module.js';
import type { Action, Environment, Evaluation, Observation, StepResult } from './environment.js';
import { describeIssues } from './jsonl-records.js';
import { TRACK_NAMES, type Track, type TrackTask } from './track.js';
import { loadTasks, loadTrack } from './tracks.js';

const optionsSchema = z.strictObject({
  track: z.enum(TRACK_NAMES),
  /** `builtin` or a path in the track's task format. */
  tasks: z.string().min(1).default('builtin'),
  parallel: z.number().int().positive().default(4),
  split: z.enum(['train', 'heldout', 'all']).default('all'),
  seed: z.number().int().default(0),
  settings: z.record(z.string(), z.unknown()).default({}),
  /**
   * A module (absolute path, optionally `#export`) whose function replaces the track's
   * `createEnvironment(tasks, options)`: a custom environment over the track's tasks.
   */
  environmentModule: z.string().min(1).optional(),
  leaseTtlMs: z.number().int().positive().default(60_000),
  /** How long `allocate` waits for a free environment before PoolExhaustedError. */
  allocateTimeoutMs: z.number().int().nonnegative().default(30_000),
});

export type EnvPoolOptions = z.input<typeof optionsSchema>;

export interface Lease {
  leaseId: string;
  /** The environment slot (0 … parallel−1) the lease holds. */
  slot: number;
  /** Milliseconds since the epoch at which the lease expires unless renewed. */
  expiresAtMs: number;
  ttlMs: number;
}

export interface EnvPoolStats {
  track: string;
  parallel: number;
  leased: number;
  free: number;
  /** allocate calls waiting for a free environment. */
  waiting: number;
  expiredLeases: number;
}

/** The lease is unknown: it expired, was released, or never existed. Terminal for that lease. */
export class LeaseNotFoundError extends NotFoundError {}
registerErrorClass(LeaseNotFoundError);

/** Every environment stayed leased for allocateTimeoutMs. Retryable. */
export class PoolExhaustedError extends ClawrayError {
  override readonly retryable = true;
}
registerErrorClass(PoolExhaustedError);

/** Another call on the same lease has not finished: an episode's calls must be sequential. */
export class LeaseBusyError extends ClawrayError {}
registerErrorClass(LeaseBusyError);

interface Slot {
  env?: Environment<object>;
  lease?: LeaseState;
}

interface LeaseState extends Lease {
  requestId: string;
  busy: boolean;
}

interface Waiter {
  requestId: string;
  granted: Promise<Lease>;
  resolve: (lease: Lease) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

function poolMetrics(registry: Registry) {
  const existing = <T>(name: string) => registry.getSingleMetric(name) as T | undefined;
  return {
    steps:
      existing<Counter<'track'>>('clawray_env_steps_total') ??
      new Counter({
        name: 'clawray_env_steps_total',
        help: 'Environment steps taken, by track',
        labelNames: ['track'],
        registers: [registry],
      }),
    stepSeconds:
      existing<Histogram<'track'>>('clawray_env_step_seconds') ??
      new Histogram({
        name: 'clawray_env_step_seconds',
        help: 'Time of one environment step (tool execution, tests, browser actions), by track',
        labelNames: ['track'],
        buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
        registers: [registry],
      }),
    episodes:
      existing<Counter<'track' | 'result'>>('clawray_env_episodes_total') ??
      new Counter({
        name: 'clawray_env_episodes_total',
        help: 'Episodes ended, by track and result (success: reward +1)',
        labelNames: ['track', 'result'],
        registers: [registry],
      }),
    leases:
      existing<Gauge<'track' | 'state'>>('clawray_env_leases') ??
      new Gauge({
        name: 'clawray_env_leases',
        help: 'Environments of the pools in this process, by state (leased, free)',
        labelNames: ['track', 'state'],
        registers: [registry],
      }),
    expirations:
      existing<Counter<'track'>>('clawray_env_lease_expirations_total') ??
      new Counter({
        name: 'clawray_env_lease_expirations_total',
        help: 'Leases that expired without a heartbeat (their caller died or stalled)',
        labelNames: ['track'],
        registers: [registry],
      }),
  };
}

export class EnvPool {
  private readonly options: z.output<typeof optionsSchema>;
  private readonly loading: Promise<{ track: Track; tasks: TrackTask[] }>;
  private readonly slots: Slot[];
  private readonly leases = new Map<string, LeaseState>();
  private readonly byRequest = new Map<string, string>();
  private readonly waiters: Waiter[] = [];
  private readonly metrics: ReturnType<typeof poolMetrics>;
  private readonly sweeper: NodeJS.Timeout;
  private expiredLeases = 0;
  private closed = false;

  constructor(options: EnvPoolOptions, registry: Registry = register) {
    const parsed = optionsSchema.safeParse(options);
    if (!parsed.success) throw new ConfigError(`EnvPool options: ${describeIssues(parsed.error)}`);
    this.options = parsed.data;
    this.slots = Array.from({ length: this.options.parallel }, () => ({}));
    this.metrics = poolMetrics(registry);
    const { track: trackName, tasks: source, environmentModule } = parsed.data;
    this.loading = (async () => {
      let track = await loadTrack(trackName);
      if (environmentModule) {
        const createEnvironment = await loadPluginFunction<Track['createEnvironment']>(
          environmentModule,
          '/',
          'environment',
        );
        track = { ...track, createEnvironment };
      }
      return { track, tasks: await loadTasks(track, source) };
    })();
    this.loading.catch(() => {
      // Reported by ready() and every call that needs the tasks.
    });
    this.sweeper = setInterval(
      () => this.expire(),
      Math.min(1000, Math.max(10, this.options.leaseTtlMs / 4)),
    );
    this.sweeper.unref();
    this.updateGauge();
  }

  /** Waits for the track and its tasks; reports how many there are. */
  async ready(): Promise<{ track: string; tasks: number; parallel: number }> {
    const { tasks } = await this.loading;
    return { track: this.options.track, tasks: tasks.length, parallel: this.options.parallel };
  }

  /** The ids of the pool's tasks (optionally of one split), for a driver choosing what to run. */
  async taskIds(split?: 'train' | 'heldout'): Promise<string[]> {
    const { tasks } = await this.loading;
    return tasks.filter((t) => split === undefined || t.split === split).map((t) => t.id);
  }

  /** A lease on a free environment, waiting up to allocateTimeoutMs for one. */
  async allocate(requestId: string = randomUUID()): Promise<Lease> {
    this.assertOpen();
    await this.loading;
    const existing = this.byRequest.get(requestId);
    const live = existing === undefined ? undefined : this.leases.get(existing);
    if (live) return this.renew(live);
    const free = this.slots.findIndex((s) => s.lease === undefined);
    if (free >= 0) return this.grant(free, requestId);
    // A retried allocate that is still queued shares the first one's place and outcome.
    const queued = this.waiters.find((w) => w.requestId === requestId);
    if (queued) return queued.granted;
    let resolve!: (lease: Lease) => void;
    let reject!: (err: Error) => void;
    const granted = new Promise<Lease>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const timer = setTimeout(() => {
      this.waiters.splice(this.waiters.indexOf(waiter), 1);
      reject(
        new PoolExhaustedError(
          `all ${this.options.parallel} ${this.options.track} environments stayed leased for ${this.options.allocateTimeoutMs} ms`,
          { fields: { track: this.options.track, parallel: this.options.parallel } },
        ),
      );
    }, this.options.allocateTimeoutMs);
    const waiter: Waiter = { requestId, granted, resolve, reject, timer };
    this.waiters.push(waiter);
    return granted;
  }

  async heartbeat(leaseId: string): Promise<Lease> {
    return this.renew(this.lease(leaseId));
  }

  async reset(leaseId: string, taskId?: string): Promise<Observation> {
    return this.onLease(leaseId, (env) => env.reset(taskId));
  }

  async step(leaseId: string, action: Action): Promise<StepResult<object>> {
    const track = this.options.track;
    return this.onLease(leaseId, async (env) => {
      const end = this.metrics.stepSeconds.startTimer({ track });
      const result = await env.step(action);
      end();
      this.metrics.steps.inc({ track });
      if (result.done)
        this.metrics.episodes.inc({ track, result: result.reward >= 1 ? 'success' : 'failure' });
      return result;
    });
  }

  async evaluate(leaseId: string): Promise<Evaluation<object>> {
    return this.onLease(leaseId, (env) => env.evaluate());
  }

  /** Gives the environment back. Releasing an unknown (already expired) lease is not an error. */
  async release(leaseId: string): Promise<void> {
    const lease = this.leases.get(leaseId);
    if (lease) this.free(lease);
  }

  async stats(): Promise<EnvPoolStats> {
    const leased = this.leases.size;
    return {
      track: this.options.track,
      parallel: this.options.parallel,
      leased,
      free: this.options.parallel - leased,
      waiting: this.waiters.length,
      expiredLeases: this.expiredLeases,
    };
  }

  /** Closes every environment (the actor runtime calls this when the actor stops). */
  async [Symbol.asyncDispose](): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    for (const w of this.waiters.splice(0)) {
      clearTimeout(w.timer);
      w.reject(new ClawrayError('the environment pool is closing'));
    }
    this.leases.clear();
    this.byRequest.clear();
    await Promise.allSettled(this.slots.map((s) => s.env?.close()));
    this.slots.forEach((s) => {
      s.env = undefined;
      s.lease = undefined;
    });
    this.updateGauge();
  }

  private assertOpen(): void {
    if (this.closed) throw new ClawrayError('the environment pool is closed');
  }

  private lease(leaseId: string): LeaseState {
    this.assertOpen();
    const lease = this.leases.get(leaseId);
    if (!lease) {
      throw new LeaseNotFoundError(
        `lease ${leaseId} is not held: it expired (no call or heartbeat for ${this.options.leaseTtlMs} ms), was released, or never existed`,
        { fields: { leaseId } },
      );
    }
    return lease;
  }

  private async onLease<T>(leaseId: string, work: (env: Environment<object>) => Promise<T>): Promise<T> {
    const lease = this.lease(leaseId);
    if (lease.busy) {
      throw new LeaseBusyError(
        `lease ${leaseId} is busy with another call; calls on one lease are sequential`,
        {
          fields: { leaseId },
        },
      );
    }
    lease.busy = true;
    try {
      const slot = this.slots[lease.slot];
      if (!slot.env) {
        const { track, tasks } = await this.loading;
        slot.env = track.createEnvironment(tasks, {
          split: this.options.split,
          // Slots walk the tasks in different orders so reset() without an id spreads them out.
          seed: this.options.seed + lease.slot,
          settings: this.options.settings,
        });
      }
      return await work(slot.env);
    } finally {
      lease.busy = false;
      if (this.leases.get(leaseId) === lease) this.renew(lease);
    }
  }

  private grant(slot: number, requestId: string): Lease {
    const lease: LeaseState = {
      leaseId: randomUUID(),
      slot,
      ttlMs: this.options.leaseTtlMs,
      expiresAtMs: Date.now() + this.options.leaseTtlMs,
      requestId,
      busy: false,
    };
    this.slots[slot].lease = lease;
    this.leases.set(lease.leaseId, lease);
    this.byRequest.set(requestId, lease.leaseId);
    this.updateGauge();
    return this.view(lease);
  }

  private renew(lease: LeaseState): Lease {
    lease.expiresAtMs = Date.now() + lease.ttlMs;
    return this.view(lease);
  }

  private view(lease: LeaseState): Lease {
    return { leaseId: lease.leaseId, slot: lease.slot, expiresAtMs: lease.expiresAtMs, ttlMs: lease.ttlMs };
  }

  private free(lease: LeaseState): void {
    this.leases.delete(lease.leaseId);
    this.byRequest.delete(lease.requestId);
    this.slots[lease.slot].lease = undefined;
    const waiter = this.waiters.shift();
    if (waiter) {
      clearTimeout(waiter.timer);
      waiter.resolve(this.grant(lease.slot, waiter.requestId));
    }
    this.updateGauge();
  }

  private expire(): void {
    const now = Date.now();
    for (const lease of [...this.leases.values()]) {
      // A long step (a test suite running) is not a dead caller: expiry waits for it to end.
      if (lease.busy || lease.expiresAtMs > now) continue;
      this.expiredLeases++;
      this.metrics.expirations.inc({ track: this.options.track });
      this.free(lease);
    }
  }

  private updateGauge(): void {
    const track = this.options.track;
    this.metrics.leases.set({ track, state: 'leased' }, this.leases.size);
    this.metrics.leases.set({ track, state: 'free' }, this.options.parallel - this.leases.size);
  }
}
