/**
 * The actor side of a collective group. An actor class that takes part in collectives either
 * extends `CollectiveMember` or holds one and delegates its two methods to it:
 *
 *   export class TrainerShard extends CollectiveMember {
 *     async step() { ...; await this.allReduce(grads, 'mean'); }
 *   }
 *
 *   export class Other {
 *     member = new CollectiveMember();
 *     collectiveInit(...a) { return this.member.collectiveInit(...a); }
 *     collectiveConnect(a) { return this.member.collectiveConnect(a); }
 *   }
 *
 * The driver then builds the group with `createCollectiveGroup(cluster, handles, name)`.
 */

import { ConfigError } from '../../common/errors.js';
import { ambientToken } from '../../runtime/index.js';
import { CollectiveGroup, type CollectiveGroupOptions, type ReduceOp } from './group.js';
import type { TransportOption } from './transport.js';

/** Per-group settings the driver may pass to `collectiveInit`. */
export interface CollectiveInitOptions {
  timeoutMs?: number;
  subChunkBytes?: number;
  /**
   * 'auto' (default): shared memory when every rank is on one host, else Unix sockets between
   * ranks on one host and TCP between hosts; or 'tcp', 'unix', 'shm'.
   */
  transport?: TransportOption;
  /** The shared-memory all-reduce's window (default 16 MiB; see CollectiveGroupOptions). */
  shmWindowBytes?: number;
  /** Overrides the actor's cluster token (tests; groups outside an actor process). */
  token?: string;
}

export class CollectiveMember {
  /** The current group, if `collectiveInit` was called. */
  protected collective?: CollectiveGroup;

  /**
   * Starts this rank's data server for a new group (closing any previous group first) and
   * returns its address for the driver to hand to every rank.
   */
  async collectiveInit(
    rank: number,
    worldSize: number,
    groupName: string,
    options: CollectiveInitOptions = {},
  ): Promise<string> {
    await this.collectiveClose();
    const token = options.token ?? ambientToken();
    if (!token)
      throw new ConfigError(
        'collectiveInit outside an actor process needs options.token (the cluster token)',
      );
    const groupOptions: CollectiveGroupOptions = {
      rank,
      worldSize,
      groupName,
      token,
      timeoutMs: options.timeoutMs,
      subChunkBytes: options.subChunkBytes,
      transport: options.transport,
      shmWindowBytes: options.shmWindowBytes,
    };
    this.collective = await CollectiveGroup.create(groupOptions);
    return this.collective.address;
  }

  /** Opens the ring: `addresses` are every rank's `collectiveInit` result, in rank order. */
  async collectiveConnect(addresses: string[]): Promise<void> {
    await this.collectiveGroup.connect(addresses);
  }

  /** Closes the current group (if any); a new one can be built with `collectiveInit`. */
  async collectiveClose(): Promise<void> {
    const group = this.collective;
    this.collective = undefined;
    await group?.close();
  }

  /** The current group; throws when `collectiveInit` was not called. */
  get collectiveGroup(): CollectiveGroup {
    if (!this.collective)
      throw new ConfigError('this actor is in no collective group: call collectiveInit first');
    return this.collective;
  }

  allReduce(buffer: Float32Array, op: ReduceOp = 'sum'): Promise<void> {
    return this.collectiveGroup.allReduce(buffer, op);
  }

  broadcast(buffer: Float32Array, root: number): Promise<void> {
    return this.collectiveGroup.broadcast(buffer, root);
  }
}
