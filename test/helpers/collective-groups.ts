/** Collective groups of `n` ranks in this process (not yet connected), for the collective tests. */
import { CollectiveGroup, type CollectiveGroupOptions } from '../../actors/collective/group.js';

export function createGroups(
  n: number,
  options: (rank: number) => Partial<CollectiveGroupOptions> = () => ({}),
): Promise<CollectiveGroup[]> {
  return Promise.all(
    Array.from({ length: n }, (_, rank) =>
      CollectiveGroup.create({
        rank,
        worldSize: n,
        groupName: 'test',
        token: 't0k3n',
        timeoutMs: 5000,
        ...options(rank),
      }),
    ),
  );
}
