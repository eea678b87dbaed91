import { describe, expect, it } from 'vitest';
import { silentLogger } from '../common/logger.js';
import type * as m from '../proto/messages.js';
import { PendingWarner } from './pending-warnings.js';

const INTERVAL_MS = 10_000;
const NOW = 1_000_000;

const demand = (over: Partial<m.PendingDemand>): m.PendingDemand => ({
  kind: 'actor',
  id: 'actor_1',
  name: 'Trainer',
  bundles: [{ numCpus: 0, numGpus: 1, memoryMb: 0, custom: {} }],
  strategy: 'DEFAULT',
  labelSelector: {},
  pendingSinceMs: NOW - 25_000,
  state: 'PENDING_CREATION',
  ownerId: 'owner_1',
  ...over,
});

describe('PendingWarner', () => {
  it('tells each owner what its waiting requests need and what is free, once they waited an interval', () => {
    const sent: Array<[string, m.OwnerEvent]> = [];
    const warner = new PendingWarner({
      intervalMs: INTERVAL_MS,
      logger: silentLogger,
      now: () => NOW,
      demands: () => [
        demand({}),
        demand({ id: 'actor_2', pendingSinceMs: NOW - 1000 }),
        demand({
          kind: 'placement group',
          id: 'pg_1',
          name: 'trainers',
          strategy: 'STRICT_SPREAD',
          bundles: [
            { numGpus: 1, custom: {} },
            { numGpus: 1, custom: {} },
          ],
          ownerId: 'owner_2',
        }),
        demand({ id: 'actor_3', ownerId: '' }),
      ],
      free: () => [
        {
          nodeId: 'node_a',
          address: '10.0.0.1:7001',
          available: { numCpus: 3, numGpus: 0, memoryMb: 100, custom: {} },
          total: { numCpus: 4, numGpus: 1, memoryMb: 1000, custom: {} },
        },
      ],
      send: (ownerId, event) => {
        sent.push([ownerId, event]);
        return true;
      },
    });
    const events = warner.tick();
    expect(events.map((e) => e.actorId || e.placementGroupId)).toEqual(['actor_1', 'pg_1', 'actor_3']);
    expect(sent.map(([owner, e]) => [owner, e.kind])).toEqual([
      ['owner_1', 'PENDING'],
      ['owner_2', 'PENDING'],
    ]);
    expect(sent[0][1].message).toBe(
      'Warning: the actor Trainer (actor_1) is pending creation, waiting 25 s for resources. ' +
        'Required resources: {GPU: 1}; strategy: DEFAULT. ' +
        'Available resources: node_a (10.0.0.1:7001) {CPU: 3, memory_mb: 100} of {CPU: 4, GPU: 1, memory_mb: 1000}. ' +
        'It starts once they are free (kill actors, remove placement groups, or add nodes); ' +
        'set scheduleTimeoutMs (actors) or timeoutMs (placement groups) to give up instead.',
    );
    expect(sent[1][1].message).toContain(
      'placement group trainers (pg_1) is pending, waiting 25 s for resources. Required resources: {GPU: 1}, {GPU: 1}; strategy: STRICT_SPREAD',
    );
  });
});
