/**
 * Driver side: builds a collective group out of actors whose class includes the
 * `CollectiveMember` methods (`collectiveInit`, `collectiveConnect`).
 */

import { ConfigError } from '../../common/errors.js';
import type { ActorHandle, Cluster } from '../../runtime/index.js';
import type { CollectiveInitOptions } from './member.js';

/**
 * Rank i is `handles[i]`. Calls `collectiveInit(rank, worldSize, groupName, options)` on every
 * actor (each starts its data server and returns its address), then
 * `collectiveConnect(addresses)` on every actor; resolves with the addresses once the ring is
 * up. `cluster` is the caller's client (kept for placement-aware variants; unused today).
 */
export async function createCollectiveGroup<T>(
  _cluster: Cluster | undefined,
  handles: ActorHandle<T>[],
  groupName: string,
  options: CollectiveInitOptions = {},
): Promise<string[]> {
  if (handles.length === 0) throw new ConfigError('a collective group needs at least one actor');
  const worldSize = handles.length;
  const addresses = (await Promise.all(
    handles.map((h, rank) => (h as ActorHandle).call('collectiveInit', rank, worldSize, groupName, options)),
  )) as string[];
  await Promise.all(handles.map((h) => (h as ActorHandle).call('collectiveConnect', addresses)));
  return addresses;
}
