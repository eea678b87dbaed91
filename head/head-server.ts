/**
 * The head node: the gRPC HeadService over the node table, the actor directory and the
 * placement groups, with every change written to the cluster store before it is
 * acknowledged. Started on a Redis store that already holds a cluster, it reloads it and lets
 * the nodes re-register with the actors they still run.
 */

import { randomBytes } from 'node:crypto';
import type * as grpc from '@grpc/grpc-js';
import { Registry } from 'prom-client';
import { checkActorClassName, checkActorModule } from '../common/actor-class.js';
import { ensureHeadToken } from '../common/auth.js';
import { ConfigError } from '../common/errors.js';
import {
  bindServer,
  createServer,
  formatAddress,
  type ServerGuard,
  serverStream,
  shutdownServer,
  unary,
} from '../common/grpc-server.js';
import { HEAD_READINESS_SERVICE, ServerHealth } from '../common/health.js';
import { removeLocalHead, writeLocalHead } from '../common/local-head.js';
import { createLogger, type Logger } from '../common/logger.js';
import { addProcessMetrics, rpcDurationHistogram } from '../common/metrics.js';
import { type MetricsEndpoint, serveMetrics } from '../common/metrics-server.js';
import { isPathId, PATH_ID_RULE } from '../common/path-ids.js';
import { emptyResources } from '../common/resources.js';
import { protos } from '../proto/loader.js';
import type * as m from '../proto/messages.js';
import { parseWith, resourcesToWire } from '../runtime/index.js';
import { ActorDirectory } from './actor-directory.js';
import { headMetrics } from './head-metrics.js';
import { type HeadOptions, headOptionsSchema, type ParsedHeadOptions } from './head-options.js';
import { JobManager, type JobRecord } from './job-manager.js';
import { jobHandlers } from './job-rpcs.js';
import type { ActorRecord, NodeRecord, PlacementGroupRecord } from './model.js';
import { NodeClients } from './node-clients.js';
import { nodeLossCounter } from './node-loss-metrics.js';
import { NodeTable } from './node-table.js';
import { OwnerRegistry } from './owners.js';
import { PendingQueue } from './pending-queue.js';
import { PendingWarner } from './pending-warnings.js';
import { PlacementGroups } from './placement-groups.js';
import { planPlacementGroups } from './placement-plan.js';
import { actorInfo, placementGroupInfo } from './record-convert.js';
import { Scheduler } from './scheduler/scheduler.js';
import { createStore } from './store/store-factory.js';
import type { ClusterStore } from './store/types.js';

export class HeadServer {
  readonly registry = new Registry();
  address = '';
  port = 0;
  metricsPort = 0;
  readonly token: string;
  readonly tokenSource: string;
  readonly startedAtMs = Date.now();
  private readonly server = createServer();
  private readonly health = new ServerHealth(this.server, HEAD_READINESS_SERVICE);
  private readonly options: ParsedHeadOptions;
  private readonly logger: Logger;
  private readonly store: ClusterStore;
  private readonly scheduler = new Scheduler();
  private readonly pending = new PendingQueue();
  private readonly nodeClients: NodeClients;
  private readonly nodes: NodeTable;
  private readonly groups: PlacementGroups;
  private readonly actors: ActorDirectory;
  private readonly jobs: JobManager;
  private readonly owners: OwnerRegistry;
  private readonly pendingWarner: PendingWarner;
  private metricsEndpoint?: MetricsEndpoint;
  private stopped = false;

  private constructor(options: ParsedHeadOptions, logger?: Logger) {
    this.options = options;
    this.logger = logger ?? createLogger({ component: 'head' });
    if (options.writeLocalFiles) {
      const resolved = ensureHeadToken(options.token);
      this.token = resolved.token;
      this.tokenSource = resolved.source;
    } else {
      this.token = options.token || process.env.CLAWRAY_TOKEN || randomBytes(24).toString('base64url');
      this.tokenSource = options.token
        ? '--token'
        : process.env.CLAWRAY_TOKEN
          ? 'CLAWRAY_TOKEN'
          : 'generated';
    }
    this.store = createStore(options.store, { cluster: options.clusterName });
    this.nodeClients = new NodeClients(this.token);
    const metrics = headMetrics(this.registry, () => ({
      nodes: this.nodes,
      actors: this.actors,
      groups: this.groups,
      scheduler: this.scheduler,
      jobs: this.jobs,
    }));
    const nodeLosses = nodeLossCounter(this.registry);
    const timing = { timeoutMs: options.nodeTimeoutMs, reloadGraceMs: options.reloadGraceMs };
    this.nodes = new NodeTable(this.store, this.scheduler, this.logger, timing, {
      onNodeLost: (nodeId, reason, preempted) => {
        nodeLosses.inc({ cause: preempted ? 'drained' : 'heartbeat_timeout' });
        return this.actors.onNodeLost(nodeId, reason, preempted);
      },
      onBundlesLost: (ids) => this.groups.onNodeLost(ids),
      onCapacity: () => this.pending.kick(),
    });
    this.owners = new OwnerRegistry({
      graceMs: options.ownerGraceMs,
      logger: this.logger,
      release: async (ownerId, reason) => {
        // Both start together: each takes the owner's waiting requests off the queue before it
        // awaits anything, so resources freed by killing its actors never place (and report
        // created) a group or actor of an owner that is going away.
        const [actors, groups] = await Promise.all([
          this.actors.killOwned(ownerId, reason),
          this.groups.removeOwned(ownerId),
        ]);
        if (actors + groups > 0) {
          this.logger.info({ ownerId, actors, placementGroups: groups, reason }, 'released an owner');
        }
        return { actors, groups };
      },
    });
    this.groups = new PlacementGroups(this.store, this.scheduler, this.pending, this.logger, async (id) => {
      await Promise.all(this.actors.inGroup(id).map((a) => this.actors.kill(a.actorId, true)));
    });
    this.groups.onOwned = (ownerId) => this.owners.track(ownerId);
    this.actors = new ActorDirectory({
      store: this.store,
      scheduler: this.scheduler,
      nodes: this.nodes,
      nodeClients: this.nodeClients,
      pending: this.pending,
      logger: this.logger,
      groupState: (id) => this.groups.state(id),
      onRestart: (record) => metrics.actorRestarts.inc({ actor_class: record.className }),
      onDead: (record, cause) => this.jobs.onActorDead(record, cause),
      onOwnerActorGone: (record) => {
        void this.groups
          .removeOwnedByActor(record.actorId, record.incarnation)
          .catch((err: Error) =>
            this.logger.warn({ actorId: record.actorId, err: err.message }, 'could not remove owned groups'),
          );
      },
      onOwned: (ownerId) => this.owners.track(ownerId),
      schedulingLatency: metrics.schedulingLatency,
      maxDeadActors: options.maxDeadActors,
    });
    this.pendingWarner = new PendingWarner({
      intervalMs: options.pendingWarnIntervalMs,
      logger: this.logger,
      demands: () => [...this.actors.pendingDemands(), ...this.groups.pendingDemands()],
      free: () =>
        this.nodes
          .list()
          .filter((n) => n.record.state === 'ALIVE')
          .map((n) => ({
            nodeId: n.record.nodeId,
            address: n.record.address,
            total: resourcesToWire(n.record.resources),
            available: resourcesToWire(
              this.scheduler.nodeView(n.record.nodeId)?.available ?? emptyResources(),
            ),
          })),
      send: (ownerId, event) => this.owners.send(ownerId, event),
    });
    this.jobs = new JobManager({
      store: this.store,
      actors: this.actors,
      groups: this.groups,
      logger: this.logger,
      driverStore:
        this.store.kind === 'redis' ? { url: options.store, cluster: options.clusterName } : undefined,
      self: () => ({ address: this.address, token: this.token }),
      maxFinishedJobs: options.maxFinishedJobs,
    });
  }

  static async start(input: HeadOptions = {}, logger?: Logger): Promise<HeadServer> {
    const head = new HeadServer(parseWith(headOptionsSchema, input, 'head options'), logger);
    await head.listen();
    return head;
  }

  get storeKind(): string {
    return this.store.kind;
  }

  private async listen(): Promise<void> {
    const o = this.options;
    await this.store.open();
    const [nodes, groups, actors, jobs] = await Promise.all([
      this.store.list<NodeRecord>('nodes'),
      this.store.list<PlacementGroupRecord>('placementGroups'),
      this.store.list<ActorRecord>('actors'),
      this.store.list<JobRecord>('jobs'),
    ]);
    this.nodes.restore(nodes);
    this.groups.restore(groups);
    this.actors.restore(actors);
    this.jobs.restore(jobs);
    if (nodes.length + actors.length > 0) {
      this.logger.info(
        { nodes: nodes.length, actors: actors.length, groups: groups.length },
        'reloaded the cluster from the store',
      );
    }

    this.server.addService(protos().clawray.v1.HeadService.service, this.handlers());
    this.port = await bindServer(this.server, o.host, o.port);
    this.address = formatAddress(o.host, this.port);
    this.nodes.start();
    await this.actors.resumeAfterRestore();
    await this.jobs.resumeAfterRestore();
    this.pending.kick();
    this.pendingWarner.start();
    if (o.metricsPort !== undefined) {
      addProcessMetrics(this.registry);
      this.metricsEndpoint = await serveMetrics({
        host: o.host,
        port: o.metricsPort,
        token: this.token,
        collect: async () => ({
          contentType: this.registry.contentType,
          body: await this.registry.metrics(),
        }),
      });
      this.metricsPort = this.metricsEndpoint.port;
    }
    if (o.writeLocalFiles) {
      writeLocalHead({ address: this.address, metricsPort: this.metricsPort });
    }
    this.health.ready();
    this.logger.info(
      { address: this.address, store: this.store.kind, metricsPort: this.metricsPort },
      'head started',
    );
  }

  private handlers(): grpc.UntypedServiceImplementation {
    const guard: ServerGuard = {
      token: this.token,
      serverName: () => `head ${this.address}`,
      service: 'HeadService',
      rpcDuration: rpcDurationHistogram(this.registry),
      logger: this.logger,
    };
    const h = <Req, Res>(name: string, fn: (req: Req) => Promise<Res>) => unary<Req, Res>(guard, name, fn);
    return {
      RegisterNode: h(
        'RegisterNode',
        async (req: m.RegisterNodeRequest__Output): Promise<m.RegisterNodeReply> => {
          const { nodeId, known } = await this.nodes.register(req);
          const stopActorIds = known
            ? await this.actors.reconcileNode(nodeId, req.actors)
            : req.actors.map((a) => a.actorId);
          return { nodeId, heartbeatIntervalMs: this.options.heartbeatIntervalMs, stopActorIds };
        },
      ),
      Heartbeat: h('Heartbeat', async (req: m.HeartbeatRequest__Output) => this.nodes.heartbeat(req.nodeId)),
      DrainNode: h('DrainNode', async (req: m.DrainNodeRequest__Output) => {
        await this.nodes.drain(req.nodeId, req.exiting, req.reason);
        return {};
      }),
      ReportActorExit: h('ReportActorExit', async (req: m.ReportActorExitRequest__Output) => {
        await this.actors.onExit(req);
        return {};
      }),
      CreateActor: h('CreateActor', async (req: m.CreateActorRequest__Output) =>
        actorInfo(await this.actors.create(checkActorSpec(req.spec))),
      ),
      GetActor: h('GetActor', async (req: m.GetActorRequest__Output) =>
        actorInfo(
          req.actorId
            ? this.actors.get(req.actorId)
            : this.actors.getByName(req.name, req.namespace || 'default'),
        ),
      ),
      ListActors: h('ListActors', async (req: m.ListActorsRequest__Output) => ({
        actors: this.actors.list(req).map(actorInfo),
      })),
      KillActor: h('KillActor', async (req: m.KillActorRequest__Output) => {
        await this.actors.kill(req.actorId, req.noRestart);
        return {};
      }),
      CreatePlacementGroup: h('CreatePlacementGroup', async (req: m.CreatePlacementGroupRequest__Output) => {
        if (req.ownerActorId && !req.detached) {
          this.actors.assertOwnerActorAlive(
            req.ownerActorId,
            req.ownerIncarnation,
            `placement group ${req.name || req.placementGroupId}`,
          );
        }
        return placementGroupInfo(await this.groups.create(req));
      }),
      RemovePlacementGroup: h('RemovePlacementGroup', async (req: m.RemovePlacementGroupRequest__Output) => {
        await this.groups.remove(req.placementGroupId);
        return {};
      }),
      GetPlacementGroup: h('GetPlacementGroup', async (req: m.GetPlacementGroupRequest__Output) =>
        placementGroupInfo(
          req.placementGroupId
            ? this.groups.get(req.placementGroupId)
            : this.groups.getByName(req.name, req.namespace || 'default'),
        ),
      ),
      ListPlacementGroups: h('ListPlacementGroups', async () => ({
        placementGroups: this.groups.list().map(placementGroupInfo),
      })),
      PlanPlacementGroups: h('PlanPlacementGroups', async (req: m.PlanPlacementGroupsRequest__Output) =>
        planPlacementGroups(this.scheduler, req),
      ),
      GetClusterStatus: h('GetClusterStatus', async (): Promise<m.ClusterStatus> => this.status()),
      OpenOwnerSession: serverStream(
        guard,
        'OpenOwnerSession',
        (call: grpc.ServerWritableStream<m.OwnerSessionRequest__Output, m.OwnerEvent>) => {
          if (!call.request.ownerId) throw new ConfigError('an owner session needs an owner_id');
          this.owners.attach(call.request, call);
        },
      ),
      CloseOwnerSession: h('CloseOwnerSession', async (req: m.OwnerSessionRequest__Output) => {
        const released = await this.owners.close(req.ownerId);
        return { killedActors: released.actors, removedPlacementGroups: released.groups };
      }),
      ...jobHandlers(guard, this.jobs, this.store),
    };
  }

  status(): m.ClusterStatus {
    return {
      headAddress: this.address,
      store: this.store.kind,
      startedAtMs: this.startedAtMs,
      nodes: this.nodes.list().map((n): m.NodeStatus => {
        const view = this.scheduler.nodeView(n.record.nodeId);
        return {
          nodeId: n.record.nodeId,
          address: n.record.address,
          hostname: n.record.hostname,
          state: n.record.state,
          total: resourcesToWire(n.record.resources),
          available: resourcesToWire(view?.available ?? emptyResources()),
          gpusAvailable: view?.gpusAvailable ?? [],
          labels: n.record.labels,
          lastHeartbeatMs: n.lastSeenMs,
        };
      }),
      actors: this.actors.list().map(actorInfo),
      placementGroups: this.groups.list().map(placementGroupInfo),
      pendingDemands: [...this.actors.pendingDemands(), ...this.groups.pendingDemands()].sort(
        (a, b) => Number(a.pendingSinceMs) - Number(b.pendingSinceMs),
      ),
      droppedDeadActors: this.actors.droppedDead,
      droppedFinishedJobs: this.jobs.droppedFinished,
    };
  }

  /** Stops serving. The store keeps everything for the next head. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    // Local clients must not find a head that is going away (they would wait on its address).
    if (this.options.writeLocalFiles) removeLocalHead();
    this.health.notReady();
    this.nodes.stop();
    this.pendingWarner.stop();
    this.owners.stop();
    await shutdownServer(this.server, 1000);
    await this.metricsEndpoint?.close();
    await this.jobs.close();
    this.nodeClients.close();
    await this.store.close();
  }
}

/**
 * A CreateActor request as the head takes it: a spec with an id, an importable module and an
 * export name (a client that is not the SDK may send anything, or no spec at all).
 */
function checkActorSpec(spec: m.ActorSpec__Output | null): m.ActorSpec__Output {
  if (!spec) {
    throw new ConfigError(
      "CreateActor needs a spec (the actor's module, className, args and options); the request has none",
      { fields: { field: 'spec' } },
    );
  }
  if (!isPathId(spec.actorId)) {
    throw new ConfigError(
      `invalid actor_id ${JSON.stringify(spec.actorId.slice(0, 200))}: use ${PATH_ID_RULE} (the SDK makes one, actor_…)`,
      { fields: { field: 'actorId' } },
    );
  }
  checkActorModule(spec.module);
  checkActorClassName(spec.className);
  return spec;
}
