/**
 * A promise-based client of the head's gRPC service with the cluster token attached. Requests
 * that fail because the head is unreachable are retried with backoff for `retryForMs` (every
 * HeadService request is idempotent: ids are chosen by the caller), so a head restart looks
 * like a pause to callers, not an error.
 */
import * as grpc from '@grpc/grpc-js';
import { Backoff, HEAD_RECONNECT_INITIAL_MS, HEAD_RECONNECT_MAX_MS, sleep } from '../common/backoff.js';
import { UnavailableError } from '../common/errors.js';
import { unaryCall } from '../common/grpc-client.js';
import { CHANNEL_OPTIONS } from '../common/grpc-server.js';
import type { HeadServiceClient } from '../proto/generated/clawray/v1/HeadService.js';
import { protos } from '../proto/loader.js';
import type * as m from '../proto/messages.js';

/** Request and reply types of each HeadService method. */
interface HeadRpcs {
  RegisterNode: [m.RegisterNodeRequest, m.RegisterNodeReply__Output];
  Heartbeat: [m.HeartbeatRequest, m.HeartbeatReply__Output];
  DrainNode: [m.DrainNodeRequest, m.Empty__Output];
  ReportActorExit: [m.ReportActorExitRequest, m.Empty__Output];
  CreateActor: [m.CreateActorRequest, m.ActorInfo__Output];
  GetActor: [m.GetActorRequest, m.ActorInfo__Output];
  ListActors: [m.ListActorsRequest, m.ListActorsReply__Output];
  KillActor: [m.KillActorRequest, m.Empty__Output];
  CreatePlacementGroup: [m.CreatePlacementGroupRequest, m.PlacementGroupInfo__Output];
  RemovePlacementGroup: [m.RemovePlacementGroupRequest, m.Empty__Output];
  GetPlacementGroup: [m.GetPlacementGroupRequest, m.PlacementGroupInfo__Output];
  ListPlacementGroups: [m.Empty, m.ListPlacementGroupsReply__Output];
  PlanPlacementGroups: [m.PlanPlacementGroupsRequest, m.PlanPlacementGroupsReply__Output];
  GetClusterStatus: [m.Empty, m.ClusterStatus__Output];
  CloseOwnerSession: [m.OwnerSessionRequest, m.CloseOwnerSessionReply__Output];
}

const WAITING_METHODS = new Set<keyof HeadRpcs>([
  'CreateActor',
  'CreatePlacementGroup',
  'KillActor',
  'RemovePlacementGroup',
  'DrainNode',
  'ReportActorExit',
  'CloseOwnerSession',
]);

export interface HeadClientOptions {
  address: string;
  token: string;
  /** How long an unreachable head is retried before giving up. Default 30 000 ms. */
  retryForMs?: number;
}

export class HeadClient {
  readonly address: string;
  private readonly client: HeadServiceClient;
  private readonly token: string;
  private readonly retryForMs: number;
  private closed = false;

  constructor(options: HeadClientOptions) {
    this.address = options.address;
    this.token = options.token;
    this.retryForMs = options.retryForMs ?? 30_000;
    const Service = protos().clawray.v1.HeadService;
    // gRPC's own reconnect backoff grows to 120 s; a head that restarts must be found again
    // within its nodes' timeout, so the channel retries at least every HEAD_RECONNECT_MAX_MS.
    this.client = new Service(options.address, grpc.credentials.createInsecure(), {
      ...CHANNEL_OPTIONS,
      'grpc.initial_reconnect_backoff_ms': HEAD_RECONNECT_INITIAL_MS,
      'grpc.max_reconnect_backoff_ms': HEAD_RECONNECT_MAX_MS,
    });
  }

  /** Fails fast with a clear message when nothing answers at the address. */
  async waitReady(timeoutMs = 5000): Promise<void> {
    await new Promise<void>((resolve, reject) =>
      this.client.waitForReady(Date.now() + timeoutMs, (err) =>
        err
          ? reject(
              new UnavailableError(
                `cannot reach the clawray head at ${this.address} within ${timeoutMs} ms`,
                {
                  cause: err,
                  fields: { address: this.address },
                },
              ),
            )
          : resolve(),
      ),
    );
  }

  async call<M extends keyof HeadRpcs>(
    method: M,
    request: HeadRpcs[M][0],
    options: { retryForMs?: number; deadlineMs?: number } = {},
  ): Promise<HeadRpcs[M][1]> {
    const retryForMs = options.retryForMs ?? this.retryForMs;
    // Lookups answer at once; a head that does not is treated as unreachable (and retried)
    // rather than hanging the caller. Requests that wait for resources have no deadline.
    const deadlineMs = options.deadlineMs ?? (WAITING_METHODS.has(method) ? undefined : 10_000);
    const giveUpAt = Date.now() + retryForMs;
    const backoff = new Backoff({ initialMs: 50, maxMs: 1000 });
    for (;;) {
      try {
        return await this.once(method, request, deadlineMs);
      } catch (err) {
        if (!(err instanceof UnavailableError) || this.closed || Date.now() >= giveUpAt) throw err;
        await sleep(Math.min(backoff.next(), Math.max(1, giveUpAt - Date.now())));
      }
    }
  }

  private once<M extends keyof HeadRpcs>(
    method: M,
    request: HeadRpcs[M][0],
    deadlineMs?: number,
  ): Promise<HeadRpcs[M][1]> {
    return unaryCall(this.client, method, request, this.token, `head ${this.address}`, deadlineMs);
  }

  close(): void {
    this.closed = true;
    this.client.close();
  }
}
