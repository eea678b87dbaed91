/**
 * The PlanPlacementGroups RPC: the wire side of the scheduler's dry run (scheduler/group-plan.ts).
 * Bundles are validated as CreatePlacementGroup validates them, so a plan never accepts what a
 * creation would refuse.
 */
import { ConfigError, toErrorInfo } from '../common/errors.js';
import { type PlacementStrategy, resourceRequestSchema, toResourceRequest } from '../common/resources.js';
import type * as m from '../proto/messages.js';
import { parseWith, resourcesFromWire, resourcesToWire } from '../runtime/index.js';
import type { GroupPlanAsk, PlacementPlan } from './scheduler/group-plan.js';
import type { Scheduler } from './scheduler/scheduler.js';

export function planPlacementGroups(
  scheduler: Scheduler,
  req: m.PlanPlacementGroupsRequest__Output,
): m.PlanPlacementGroupsReply {
  if (req.groups.length === 0) throw new ConfigError('a placement plan needs at least one group');
  const asks = req.groups.map((g, i): GroupPlanAsk => {
    const name = g.name || `#${i}`;
    return {
      name,
      strategy: g.strategy as PlacementStrategy,
      bundles: g.bundles.map((b, j) => {
        const r = resourcesFromWire(b);
        return toResourceRequest(
          parseWith(
            resourceRequestSchema,
            { numCpus: r.numCpus, numGpus: r.numGpus, memoryMb: r.memoryMb, resources: r.custom },
            `bundle ${j} of placement group ${name}`,
          ),
        );
      }),
    };
  });
  const plan = scheduler.planGroups(asks);
  return { now: planToWire(plan.now, asks), ever: planToWire(plan.ever, asks) };
}

function planToWire(plan: PlacementPlan, asks: readonly GroupPlanAsk[]): m.PlacementPlan {
  return {
    fits: plan.fits,
    groups: plan.groups.map((g, i) => ({
      name: g.name,
      placed: g.placement !== undefined,
      bundles: (g.placement ?? []).map((p, j) => ({
        resources: resourcesToWire(asks[i].bundles[j]),
        nodeId: p.nodeId,
        gpus: p.gpus,
      })),
      error: g.error ? toErrorInfo(g.error) : null,
    })),
  };
}
