/**
 * The node agent (`clawray worker start`): registers the machine's resources with the head,
 * heartbeats, starts each actor in its own host process with exactly the GPUs the head
 * assigned, reports actor exits, and keeps its actors serving while the head is away
 * (re-registering them when the head is back).
 */
import type * as grpc from '@grpc/grpc-js';
import { AggregatorRegistry, Counter, Gauge, Registry } from 'prom-client';
import { Backoff, HEAD_RECONNECT_INITIAL_MS, HEAD_RECONNECT_MAX_MS, sleep } from '../common/backoff.js';
import { ActorDiedError, toErrorInfo, UnavailableError } from '../common/errors.js';
import { discoverGpus } from '../common/gpu-discovery.js';
import {
  bindServer,
  createServer,
  formatAddress,
  type ServerGuard,
  shutdownServer,
  unary,
} from '../common/grpc-server.js';
import { ServerHealth, WORKER_READINESS_SERVICE } from '../common/health.js';
import { createLogger, type Logger } from '../common/logger.js';
import { addProcessMetrics, rpcDurationHistogram } from '../common/metrics.js';
import { type MetricsEndpoint, serveMetrics } from '../common/metrics-server.js';
import { protos } from '../proto/loader.js';
import type * as m from '../proto/messages.js';
import type { ActorSpec__Output } from '../proto/messages.js';
import { gpusFromWire, HeadClient, parseWith } from '../runtime/index.js';
import { containerGpus } from './gpu-allocation.js';
import { HostPool } from './host-pool.js';
import type { HostExit, HostProcess } from './host-process.js';
import {
  defaultCpus,
  defaultMemoryMb,
  type ParsedWorkerOptions,
  type WorkerOptions,
  workerOptionsSchema,
} from './worker-options.js';

interface RunningActor {
  host: HostProcess;
  incarnation: number;
  spec: ActorSpec__Output;
}

export class NodeAgent {
  nodeId = '';
  address = '';
  metricsPort = 0;
  readonly registry = new Registry();
  /**
   * This process's own process_* and nodejs_* metrics, kept apart from `registry`: merged with the
   * actors' metrics they would be summed (or, for some, dropped) across processes.
   */
  private readonly processRegistry = new Registry();
  private readonly options: ParsedWorkerOptions;
  private logger: Logger;
  private readonly head: HeadClient;
  private readonly server = createServer();
  private readonly health = new ServerHealth(this.server, WORKER_READINESS_SERVICE);
  private readonly pool: HostPool;
  private readonly actors = new Map<string, RunningActor>();
  private readonly starting = new Map<string, Promise<m.StartActorReply>>();
  private gpuIds: number[] = [];
  private gpuFrom = '';
  private heartbeatIntervalMs = 500;
  private heartbeatTimer?: NodeJS.Timeout;
  private needRegister = true;
  /**
   * Paces re-registration while the head is lost: quick first tries, then never slower than
   * HEAD_RECONNECT_MAX_MS (well below the node timeout), so a restarted head hears from this
   * node within its reload grace.
   */
  private readonly reconnect = new Backoff({
    initialMs: HEAD_RECONNECT_INITIAL_MS,
    maxMs: HEAD_RECONNECT_MAX_MS,
  });
  private draining = false;
  private stopped = false;
  private exitReports: m.ReportActorExitRequest[] = [];
  private metricsEndpoint?: MetricsEndpoint;
  private readonly counters;

  private constructor(options: ParsedWorkerOptions, logger?: Logger) {
    this.options = options;
    this.logger = logger ?? createLogger({ component: 'worker' });
    this.head = new HeadClient({ address: options.headAddress, token: options.token, retryForMs: 0 });
    this.pool = new HostPool(options.poolSize, this.logger, options.bindHost);
    this.counters = {
      starts: new Counter({
        name: 'clawray_worker_actor_starts_total',
        help: 'Actor starts on this node, by outcome',
        labelNames: ['outcome'],
        registers: [this.registry],
      }),
      exits: new Counter({
        name: 'clawray_worker_actor_exits_total',
        help: 'Actor process exits on this node, by whether they were asked for',
        labelNames: ['reason'],
        registers: [this.registry],
      }),
      heartbeatFailures: new Counter({
        name: 'clawray_worker_heartbeat_failures_total',
        help: 'Heartbeats to the head that failed',
        registers: [this.registry],
      }),
    };
    const agent = this;
    new Gauge({
      name: 'clawray_worker_actor_processes',
      help: 'Actor host processes on this node, by state (running an actor, or idle in the warm pool)',
      labelNames: ['state'],
      registers: [this.registry],
      collect() {
        this.set({ state: 'running' }, agent.actors.size);
        this.set({ state: 'idle' }, agent.pool.idleCount);
      },
    });
  }

  static async start(input: WorkerOptions, logger?: Logger): Promise<NodeAgent> {
    const options = parseWith(workerOptionsSchema, input, 'worker options');
    const agent = new NodeAgent(options, logger);
    await agent.listen();
    return agent;
  }

  get gpuIdList(): number[] {
    return [...this.gpuIds];
  }

  /** Where the GPU list came from: a flag, the container's allocation or nvidia-smi. */
  get gpuSource(): string {
    return this.gpuFrom;
  }

  get actorCount(): number {
    return this.actors.size;
  }

  private async listen(): Promise<void> {
    const o = this.options;
    await this.findGpus();

    const guard: ServerGuard = {
      token: o.token,
      serverName: () => `worker ${this.address}`,
      service: 'NodeService',
      rpcDuration: rpcDurationHistogram(this.registry),
      logger: this.logger,
    };
    this.server.addService(protos().clawray.v1.NodeService.service, {
      StartActor: unary(guard, 'StartActor', (req: m.StartActorRequest__Output) => this.startActor(req)),
      StopActor: unary(guard, 'StopActor', async (req: m.StopActorRequest__Output) => {
        await this.stopActor(req.actorId, req.graceful);
        return {};
      }),
    } satisfies grpc.UntypedServiceImplementation);
    const port = await bindServer(this.server, o.bindHost, o.port);
    this.address = formatAddress(o.advertiseHost ?? o.bindHost, port);
    this.pool.start();
    if (o.metricsPort !== undefined) {
      addProcessMetrics(this.processRegistry);
      this.metricsEndpoint = await serveMetrics({
        host: o.bindHost,
        port: o.metricsPort,
        token: o.token,
        collect: () => this.collectMetrics(),
      });
      this.metricsPort = this.metricsEndpoint.port;
    }
    await this.registerUntilDone();
    this.health.ready();
    this.scheduleHeartbeat();
  }

  /** Declared GPUs win; then the container's allocation (Kubernetes); then nvidia-smi. */
  private async findGpus(): Promise<void> {
    const o = this.options;
    if (o.gpuIds) {
      this.gpuIds = [...o.gpuIds].sort((a, b) => a - b);
      this.gpuFrom = 'declared';
    } else if (o.gpus !== undefined) {
      this.gpuIds = Array.from({ length: o.gpus }, (_, i) => i);
      this.gpuFrom = 'declared';
    } else {
      const allocated = containerGpus();
      if (allocated) {
        this.gpuIds = allocated.ids;
        this.gpuFrom = allocated.source;
      } else {
        this.gpuIds = (await discoverGpus()).map((g) => g.index);
        this.gpuFrom = 'nvidia-smi';
      }
    }
  }

  /** Waits until the warm pool is full. */
  warm(): Promise<void> {
    return this.pool.warm();
  }

  // --- head registration and heartbeats ---------------------------------------------------

  private async register(): Promise<void> {
    const o = this.options;
    const reply = await this.head.call(
      'RegisterNode',
      {
        nodeId: this.nodeId,
        address: this.address,
        hostname: o.hostname,
        resources: {
          numCpus: o.cpus ?? defaultCpus(),
          numGpus: this.gpuIds.length,
          memoryMb: o.memoryMb ?? defaultMemoryMb(),
          custom: o.resources,
        },
        gpuIds: this.gpuIds,
        labels: o.labels,
        actors: [...this.actors.entries()].map(([actorId, a]) => ({
          actorId,
          address: formatAddress(o.advertiseHost ?? o.bindHost, a.host.port),
          pid: a.host.pid,
          incarnation: a.incarnation,
        })),
      },
      { deadlineMs: 10_000 },
    );
    if (this.nodeId !== reply.nodeId) {
      this.nodeId = reply.nodeId;
      this.logger = this.logger.child({ nodeId: this.nodeId });
    }
    this.heartbeatIntervalMs = reply.heartbeatIntervalMs || 500;
    this.needRegister = false;
    for (const actorId of reply.stopActorIds) void this.stopActor(actorId, false);
  }

  private async registerUntilDone(): Promise<void> {
    const backoff = new Backoff({ initialMs: HEAD_RECONNECT_INITIAL_MS, maxMs: HEAD_RECONNECT_MAX_MS });
    let warned = false;
    while (!this.stopped) {
      try {
        await this.register();
        this.logger.info(
          { address: this.address, gpuIds: this.gpuIds, gpuSource: this.gpuFrom },
          'registered with the head',
        );
        return;
      } catch (err) {
        if (!(err instanceof UnavailableError)) throw err;
        if (!warned) this.logger.warn({ head: this.options.headAddress }, 'waiting for the head');
        warned = true;
        await sleep(backoff.next());
      }
    }
  }

  private scheduleHeartbeat(): void {
    if (this.stopped || this.draining) return;
    // While the head is lost, try again on the reconnect backoff (capped at the heartbeat
    // interval too); otherwise beat at the interval the head asked for.
    const delayMs = this.needRegister
      ? Math.min(this.reconnect.next(), this.heartbeatIntervalMs)
      : this.heartbeatIntervalMs;
    this.heartbeatTimer = setTimeout(
      () => void this.heartbeat().finally(() => this.scheduleHeartbeat()),
      delayMs,
    );
  }

  private async heartbeat(): Promise<void> {
    try {
      if (this.needRegister) {
        await this.register();
        this.reconnect.reset();
        this.logger.info({ actors: this.actors.size }, 're-registered with the head');
      } else {
        const reply = await this.head.call(
          'Heartbeat',
          { nodeId: this.nodeId, numActors: this.actors.size },
          { deadlineMs: Math.max(1000, this.heartbeatIntervalMs * 2) },
        );
        if (!reply.known) await this.reset();
        else if (reply.reregister) this.needRegister = true;
      }
      await this.flushExitReports();
    } catch (err) {
      this.counters.heartbeatFailures.inc();
      if (!this.needRegister) this.logger.warn({ err: (err as Error).message }, 'lost contact with the head');
      this.needRegister = true;
    }
  }

  /** The head declared this node dead and moved its actors: drop ours and start afresh. */
  private async reset(): Promise<void> {
    this.logger.warn(
      { nodeId: this.nodeId },
      'the head declared this node dead; stopping its actors and registering anew',
    );
    const actors = [...this.actors.values()];
    this.actors.clear();
    await Promise.all(actors.map((a) => a.host.stop(false, 0)));
    this.exitReports = [];
    this.nodeId = '';
    await this.register();
  }

  // --- actors --------------------------------------------------------------------------------

  private startActor(req: m.StartActorRequest__Output): Promise<m.StartActorReply> {
    const spec = req.spec!;
    const existing = this.actors.get(spec.actorId);
    if (existing && existing.incarnation === req.incarnation) {
      return Promise.resolve({ address: this.actorAddress(existing.host), pid: existing.host.pid });
    }
    const key = `${spec.actorId}/${req.incarnation}`;
    let start = this.starting.get(key);
    if (!start) {
      start = this.launch(req).finally(() => this.starting.delete(key));
      this.starting.set(key, start);
    }
    return start;
  }

  private async launch(req: m.StartActorRequest__Output): Promise<m.StartActorReply> {
    if (this.draining || this.stopped) {
      throw new UnavailableError(`worker ${this.address} is draining and takes no new actors`);
    }
    const spec = req.spec!;
    const stale = this.actors.get(spec.actorId);
    if (stale) {
      this.actors.delete(spec.actorId);
      await stale.host.stop(false, 0);
    }
    const host = await this.pool.take();
    const options = spec.options!;
    const running: RunningActor = { host, incarnation: req.incarnation, spec };
    this.actors.set(spec.actorId, running);
    void host.exited.then((exit) => this.onHostExit(spec.actorId, running, exit));
    try {
      await host.init({
        type: 'init',
        actorId: spec.actorId,
        incarnation: req.incarnation,
        module: spec.module,
        className: spec.className,
        args: spec.args,
        jobId: spec.jobId,
        nodeId: this.nodeId,
        gpus: gpusFromWire(req.gpus),
        maxConcurrency: options.maxConcurrency,
        env: options.env,
        headAddress: this.options.headAddress,
        token: this.options.token,
        name: options.name,
        namespace: options.namespace,
      });
    } catch (err) {
      this.counters.starts.inc({ outcome: 'failed' });
      if (this.actors.get(spec.actorId) === running) this.actors.delete(spec.actorId);
      void host.stop(false, 0);
      throw err;
    }
    this.counters.starts.inc({ outcome: 'ok' });
    this.logger.info(
      { actorId: spec.actorId, className: spec.className, pid: host.pid, gpus: req.gpus.map((g) => g.gpuId) },
      'actor started',
    );
    return { address: this.actorAddress(host), pid: host.pid };
  }

  private actorAddress(host: HostProcess): string {
    return formatAddress(this.options.advertiseHost ?? this.options.bindHost, host.port);
  }

  private async stopActor(actorId: string, graceful: boolean): Promise<void> {
    const running = this.actors.get(actorId);
    if (!running) return;
    await running.host.stop(graceful, this.options.stopGraceMs);
  }

  private onHostExit(actorId: string, running: RunningActor, exit: HostExit): void {
    this.counters.exits.inc({ reason: exit.intended ? 'requested' : 'crashed' });
    if (this.actors.get(actorId) !== running) return;
    this.actors.delete(actorId);
    if (!exit.intended) {
      this.logger.warn({ actorId, code: exit.code, signal: exit.signal }, exit.description);
    }
    const tail = exit.stderrTail.length > 0 ? `; last stderr lines:\n${exit.stderrTail.join('\n')}` : '';
    this.exitReports.push({
      nodeId: this.nodeId,
      actorId,
      incarnation: running.incarnation,
      exitCode: exit.code ?? -1,
      signal: exit.signal ?? '',
      intended: exit.intended,
      error: toErrorInfo(new ActorDiedError(`${exit.description}${tail}`, { fields: { actorId } })),
    });
    void this.flushExitReports().catch(() => {
      // Retried with the next heartbeat.
    });
  }

  private flushing = false;

  private async flushExitReports(): Promise<void> {
    if (this.flushing) return;
    this.flushing = true;
    try {
      while (this.exitReports.length > 0) {
        await this.head.call('ReportActorExit', this.exitReports[0], { deadlineMs: 5000 });
        this.exitReports.shift();
      }
    } finally {
      this.flushing = false;
    }
  }

  // --- metrics and shutdown ------------------------------------------------------------------

  async collectMetrics(): Promise<{ contentType: string; body: string }> {
    const hosts = [...this.actors.values()].map((a) => a.host);
    const perActor = (await Promise.all(hosts.map((h) => h.requestMetrics()))).map((list) =>
      // An actor's own process metrics (if its code collects them) do not add up across processes.
      (list as { name: string }[]).filter((m) => !/^(process|nodejs)_/.test(m.name)),
    );
    const own = await this.registry.getMetricsAsJSON();
    const merged = AggregatorRegistry.aggregate([own, ...perActor.filter((x) => x.length > 0)] as never);
    const body = `${await merged.metrics()}\n${await this.processRegistry.metrics()}`;
    return { contentType: merged.contentType, body };
  }

  /**
   * SIGTERM path: stop taking actors, tell the head (so it restarts them elsewhere), stop the
   * actors gracefully, report their exits, deregister, close.
   */
  async stop(options: { graceful?: boolean } = {}): Promise<void> {
    if (this.stopped) return;
    const graceful = options.graceful ?? true;
    this.draining = true;
    this.health.notReady();
    clearTimeout(this.heartbeatTimer);
    const reason = 'worker shutting down';
    if (this.nodeId)
      await this.head
        .call('DrainNode', { nodeId: this.nodeId, reason }, { deadlineMs: 2000 })
        .catch(() => {});
    await Promise.all([...this.actors.values()].map((a) => a.host.stop(graceful, this.options.stopGraceMs)));
    // Exit handlers run on the next turns; let them queue their reports.
    await new Promise((r) => setTimeout(r, 10));
    await this.flushExitReports().catch(() => {});
    if (this.nodeId) {
      await this.head
        .call('DrainNode', { nodeId: this.nodeId, reason, exiting: true }, { deadlineMs: 2000 })
        .catch(() => {});
    }
    this.stopped = true;
    await this.pool.close();
    await shutdownServer(this.server, 1000);
    await this.metricsEndpoint?.close();
    this.head.close();
  }
}
