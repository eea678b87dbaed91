/**
 * The SDK's view of a running cluster: create, find and kill actors, reserve placement groups,
 * read the cluster's status. Calls to actors go straight to the actor processes; only
 * lookups go through the head.
 */

import type http2 from 'node:http2';
import { isAbsolute, resolve as resolvePath } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { checkActorClassName, checkActorModule } from '../common/actor-class.js';
import { requireClientToken } from '../common/auth.js';
import { fromErrorInfo } from '../common/errors.js';
import { newId } from '../common/ids.js';
import { createLogger, type Logger } from '../common/logger.js';
import {
  PLACEMENT_STRATEGIES,
  type PlacementStrategy,
  resourceRequestSchema,
  toResourceRequest,
} from '../common/resources.js';
import type * as m from '../proto/messages.js';
import { ActorConnection, type ConnectionHost } from './actor-connection.js';
import { ActorHandle, type HandleRuntime } from './actor-handle.js';
import { type ActorOptions, actorOptionsSchema, LIFETIMES, parseWith } from './actor-options.js';
import { openActorSession } from './actor-stream.js';
import { encodeArgs, type HandleDescriptor, type HandleFactory } from './codec.js';
import { HeadClient } from './head-client.js';
import { OwnerSession } from './owner-session.js';
import type { PlacedBundle, PlacementGroup } from './placement-group.js';
import {
  type ActorView,
  actorView,
  type ClusterStatusView,
  clusterStatusView,
  gpusFromWire,
  placementGroupView,
  resourcesFromWire,
  resourcesToWire,
} from './views.js';

export interface ClusterOptions {
  /** host:port of the head. */
  address: string;
  /** Cluster token; default: `CLAWRAY_TOKEN`, then the local token file. */
  token?: string;
  /** Namespace of named actors and groups created or looked up here. Default `default`. */
  namespace?: string;
  /** Job id recorded on actors created here. Default `CLAWRAY_JOB_ID` or empty. */
  jobId?: string;
  /** How long an unreachable head is retried before a request fails. Default 30 000 ms. */
  headRetryMs?: number;
  /**
   * Where warnings about requests that wait for resources go (Ray's "pending creation"
   * warnings). Default: a pino logger on stderr.
   */
  logger?: Logger;
  /**
   * Inside an actor: the actor (incarnation) that owns what this client creates, so it dies
   * with that actor rather than with this connection. Set by the actor host.
   */
  ownerActor?: () => { actorId: string; incarnation: number } | undefined;
}

export interface CreateActorRequest {
  /** A path (relative paths resolve against the current directory), file URL or package name. */
  module: string | URL;
  /** The exported class; default the module's default export. */
  className?: string;
  args?: unknown[];
  options?: ActorOptions;
}

const bundleSchema = resourceRequestSchema;
const placementGroupRequestSchema = z
  .object({
    bundles: z.array(bundleSchema).min(1, 'needs at least one bundle'),
    strategy: z.enum(PLACEMENT_STRATEGIES as [PlacementStrategy, ...PlacementStrategy[]]).default('PACK'),
    name: z.string().min(1).optional(),
    timeoutMs: z.number().nonnegative().default(0),
    /** As an actor's: `detached` outlives the connection (or actor) that created it. */
    lifetime: z.enum(LIFETIMES).default('non_detached'),
  })
  .strict();

export type PlacementGroupRequest = z.input<typeof placementGroupRequestSchema>;

const placementPlanRequestSchema = z
  .object({
    /** Names the group in the answer and its errors. Default `#<index>`. */
    name: z.string().min(1).optional(),
    bundles: z.array(bundleSchema).min(1, 'needs at least one bundle'),
    strategy: z.enum(PLACEMENT_STRATEGIES as [PlacementStrategy, ...PlacementStrategy[]]).default('PACK'),
  })
  .strict();

export type PlacementPlanRequest = z.input<typeof placementPlanRequestSchema>;

/** One group of a placement plan. */
export interface PlannedGroupView {
  name: string;
  placed: boolean;
  /** When placed: each bundle's node and GPU shares (rank order), in bundle order. */
  bundles: PlacedBundle[];
  /** When not: InfeasibleError (never) or ResourcesBusyError (not now); none if not tried. */
  error?: Error;
}

export interface PlacementPlanView {
  fits: boolean;
  /** One per requested group, in request order. */
  groups: PlannedGroupView[];
}

export interface PlacementGroupsPlan {
  /** On what is free now. */
  now: PlacementPlanView;
  /** On the cluster's nodes idle: `fits: false` means never. */
  ever: PlacementPlanView;
}

export function moduleSpecifier(module: string | URL): string {
  if (module instanceof URL) return module.href;
  if (module.startsWith('file:')) return module;
  if (module.startsWith('.') || isAbsolute(module)) return pathToFileURL(resolvePath(module)).href;
  return module;
}

export class Cluster implements ConnectionHost, HandleRuntime {
  readonly head: HeadClient;
  readonly token: string;
  readonly callerId = newId('caller');
  readonly namespace: string;
  readonly jobId: string;
  private readonly connections = new Map<string, ActorConnection>();
  private readonly actorSessions = new Map<string, http2.ClientHttp2Session>();
  private readonly closeHooks: Array<() => Promise<void> | void> = [];
  private readonly ownerSession: OwnerSession;
  private readonly ownerActor?: ClusterOptions['ownerActor'];
  private logger?: Logger;
  private closed = false;

  readonly handleFactory: HandleFactory = (d) => new ActorHandle(this, d);

  constructor(options: ClusterOptions) {
    this.token = requireClientToken(options.token).token;
    this.namespace = options.namespace ?? 'default';
    this.jobId = options.jobId ?? process.env.CLAWRAY_JOB_ID ?? '';
    this.head = new HeadClient({
      address: options.address,
      token: this.token,
      retryForMs: options.headRetryMs,
    });
    this.logger = options.logger;
    this.ownerActor = options.ownerActor;
    // This connection is the owner of what it creates (Ray's driver); the session opens with
    // the first creation.
    this.ownerSession = new OwnerSession(this.head, this.token, this.callerId, this.jobId, (event) =>
      this.onOwnerEvent(event),
    );
  }

  /** The owner id the head knows this connection by (it owns what it creates). */
  get ownerId(): string {
    return this.callerId;
  }

  private owner(): Pick<m.ActorSpec, 'ownerId' | 'ownerActorId' | 'ownerIncarnation'> {
    this.ownerSession.open();
    const actor = this.ownerActor?.();
    return {
      ownerId: this.callerId,
      ownerActorId: actor?.actorId ?? '',
      ownerIncarnation: actor?.incarnation ?? 0,
    };
  }

  /** A request of ours waits for resources: say so, as Ray's driver prints the warning. */
  private onOwnerEvent(event: m.OwnerEvent__Output): void {
    if (event.kind !== 'PENDING') return;
    this.logger ??= createLogger({ component: 'clawray' });
    this.logger.warn(
      {
        ...(event.actorId ? { actorId: event.actorId } : {}),
        ...(event.placementGroupId ? { placementGroupId: event.placementGroupId } : {}),
      },
      event.message,
    );
  }

  /** Connects and checks the address and the token with one request. */
  static async connect(options: ClusterOptions): Promise<Cluster> {
    const cluster = new Cluster(options);
    try {
      await cluster.head.waitReady();
      await cluster.head.call('ListPlacementGroups', {}, { retryForMs: 0 });
    } catch (err) {
      await cluster.close();
      throw err;
    }
    return cluster;
  }

  get address(): string {
    return this.head.address;
  }

  async createActor<T = unknown>(request: CreateActorRequest): Promise<ActorHandle<T>> {
    const o = parseWith(actorOptionsSchema, request.options, 'actor options');
    const placementGroupId =
      typeof o.placementGroup === 'string' ? o.placementGroup : (o.placementGroup?.id ?? '');
    const spec: m.ActorSpec = {
      actorId: newId('actor'),
      // The head checks these too (common/actor-class.ts); refused here, nothing is sent.
      module: checkActorModule(moduleSpecifier(request.module)),
      className: checkActorClassName(request.className ?? 'default'),
      args: encodeArgs(request.args ?? []),
      jobId: this.jobId,
      ...this.owner(),
      options: {
        resources: resourcesToWire(toResourceRequest(o)),
        labelSelector: o.labelSelector,
        name: o.name ?? '',
        namespace: o.namespace ?? this.namespace,
        getIfExists: o.getIfExists,
        maxRestarts: o.maxRestarts,
        maxTaskRetries: o.maxTaskRetries,
        maxConcurrency: o.maxConcurrency ?? 0,
        maxPendingCalls: o.maxPendingCalls,
        placementGroupId,
        bundleIndex: o.bundleIndex,
        env: o.env,
        scheduleTimeoutMs: o.scheduleTimeoutMs,
        detached: o.lifetime === 'detached',
      },
    };
    const info = await this.head.call('CreateActor', { spec }, { retryForMs: 60_000 });
    return this.handleFrom(info) as ActorHandle<T>;
  }

  /** The named actor in this client's namespace (or the one given). */
  async getActor<T = unknown>(name: string, options: { namespace?: string } = {}): Promise<ActorHandle<T>> {
    const info = await this.head.call('GetActor', { name, namespace: options.namespace ?? this.namespace });
    return this.handleFrom(info) as ActorHandle<T>;
  }

  /**
   * Kills the actor at once (detached ones too); with `noRestart: false` it restarts if its
   * `maxRestarts` allows. `noRestart` defaults to true, as Ray's `ray.kill`.
   */
  async killActor<T>(actor: ActorHandle<T> | string, options: { noRestart?: boolean } = {}): Promise<void> {
    const actorId = typeof actor === 'string' ? actor : actor.actorId;
    await this.head.call('KillActor', { actorId, noRestart: options.noRestart ?? true });
  }

  async listActors(filter: { state?: string; jobId?: string } = {}): Promise<ActorView[]> {
    const reply = await this.head.call('ListActors', {
      state: filter.state ?? '',
      jobId: filter.jobId ?? '',
    });
    return reply.actors.map(actorView);
  }

  /** Reserves all bundles at once (or none); waits while the cluster is busy, up to `timeoutMs`. */
  async createPlacementGroup(request: PlacementGroupRequest): Promise<PlacementGroup> {
    const r = parseWith(placementGroupRequestSchema, request, 'placement group');
    const info = await this.head.call(
      'CreatePlacementGroup',
      {
        placementGroupId: newId('pg'),
        name: r.name ?? '',
        namespace: this.namespace,
        strategy: r.strategy,
        bundles: r.bundles.map((b) => resourcesToWire(toResourceRequest(b))),
        timeoutMs: r.timeoutMs,
        jobId: this.jobId,
        ...this.owner(),
        detached: r.lifetime === 'detached',
      },
      { retryForMs: 60_000 },
    );
    return placementGroupView(info);
  }

  /**
   * A dry run of `createPlacementGroup` for several groups created one after another in this
   * order: would they all be placed on what is free now, and could they ever be? The head's
   * scheduler answers it and reserves nothing.
   */
  async planPlacementGroups(requests: readonly PlacementPlanRequest[]): Promise<PlacementGroupsPlan> {
    const groups = requests.map((r, i) =>
      parseWith(placementPlanRequestSchema, r, `placement plan group ${i}`),
    );
    const reply = await this.head.call('PlanPlacementGroups', {
      groups: groups.map((g, i) => ({
        name: g.name ?? `#${i}`,
        strategy: g.strategy,
        bundles: g.bundles.map((b) => resourcesToWire(toResourceRequest(b))),
      })),
    });
    const view = (plan: m.PlacementPlan__Output | null): PlacementPlanView => ({
      fits: plan?.fits ?? false,
      groups: (plan?.groups ?? []).map((g) => ({
        name: g.name,
        placed: g.placed,
        bundles: g.bundles.map((b) => ({
          resources: resourcesFromWire(b.resources),
          nodeId: b.nodeId,
          gpus: gpusFromWire(b.gpus),
        })),
        ...(g.error?.name ? { error: fromErrorInfo(g.error) } : {}),
      })),
    });
    return { now: view(reply.now), ever: view(reply.ever) };
  }

  /** Frees the group's reservation and kills the actors placed in it. */
  async removePlacementGroup(group: PlacementGroup | string): Promise<void> {
    const placementGroupId = typeof group === 'string' ? group : group.id;
    await this.head.call('RemovePlacementGroup', { placementGroupId });
  }

  async getPlacementGroup(name: string): Promise<PlacementGroup> {
    return placementGroupView(await this.head.call('GetPlacementGroup', { name, namespace: this.namespace }));
  }

  async status(): Promise<ClusterStatusView> {
    return clusterStatusView(await this.head.call('GetClusterStatus', {}));
  }

  connectionFor(descriptor: HandleDescriptor): ActorConnection {
    let connection = this.connections.get(descriptor.actorId);
    if (!connection) {
      connection = new ActorConnection(this, descriptor.actorId, {
        maxTaskRetries: descriptor.maxTaskRetries,
        maxPendingCalls: descriptor.maxPendingCalls,
      });
      this.connections.set(descriptor.actorId, connection);
    }
    return connection;
  }

  actorSession(address: string): http2.ClientHttp2Session {
    let session = this.actorSessions.get(address);
    if (!session || session.closed || session.destroyed) {
      const opened = openActorSession(address, () => {
        if (this.actorSessions.get(address) === opened) this.actorSessions.delete(address);
      });
      session = opened;
      this.actorSessions.set(address, session);
    }
    return session;
  }

  /** Runs `hook` when the client closes (the embedded cluster stops with its client). */
  onClose(hook: () => Promise<void> | void): void {
    this.closeHooks.push(hook);
  }

  /**
   * Ends this connection. What it created and is not detached is killed first (the head
   * answers once it is), as a Ray driver's actors die when it exits.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.ownerSession.close();
    for (const connection of this.connections.values()) connection.close();
    this.connections.clear();
    for (const session of this.actorSessions.values()) session.destroy();
    this.actorSessions.clear();
    this.head.close();
    for (const hook of this.closeHooks.reverse()) await hook();
  }

  private handleFrom(info: m.ActorInfo__Output): ActorHandle<unknown> {
    const spec = info.spec!;
    return new ActorHandle(this, {
      actorId: spec.actorId,
      className: spec.className,
      name: spec.options?.name ?? '',
      namespace: spec.options?.namespace ?? '',
      maxTaskRetries: spec.options?.maxTaskRetries ?? 0,
      maxPendingCalls: spec.options?.maxPendingCalls ?? -1,
    });
  }
}
