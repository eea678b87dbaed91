/** The head's Prometheus metrics, read from its tables at scrape time. */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { LATENCY_BUCKETS_S } from '../common/metrics.js';
import type { ActorDirectory } from './actor-directory.js';
import { JOB_STATUSES, type JobManager } from './job-manager.js';
import type { NodeTable } from './node-table.js';
import type { PlacementGroups } from './placement-groups.js';
import type { Scheduler } from './scheduler/scheduler.js';

export interface HeadMetrics {
  schedulingLatency: Histogram<string>;
  actorRestarts: Counter<'actor_class'>;
}

export function headMetrics(
  registry: Registry,
  read: () => {
    nodes: NodeTable;
    actors: ActorDirectory;
    groups: PlacementGroups;
    scheduler: Scheduler;
    jobs: JobManager;
  },
): HeadMetrics {
  new Gauge({
    name: 'clawray_cluster_jobs',
    help: 'Job records kept by the head, by status',
    labelNames: ['status'],
    registers: [registry],
    collect() {
      this.reset();
      for (const status of JOB_STATUSES) this.set({ status }, 0);
      for (const j of read().jobs.list()) this.inc({ status: j.status });
    },
  });
  new Gauge({
    name: 'clawray_cluster_nodes',
    help: 'Nodes known to the head, by state',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      this.reset();
      for (const state of ['ALIVE', 'DRAINING', 'DEAD']) this.set({ state }, 0);
      for (const n of read().nodes.list()) this.inc({ state: n.record.state });
    },
  });
  new Gauge({
    name: 'clawray_cluster_actors',
    help: 'Actors known to the head, by state and class',
    labelNames: ['state', 'actor_class'],
    registers: [registry],
    collect() {
      this.reset();
      for (const a of read().actors.list()) this.inc({ state: a.state, actor_class: a.className });
    },
  });
  const collectResources = (gauge: Gauge<'resource'>, pick: 'total' | 'used') => {
    gauge.reset();
    const totals = read().scheduler.totals();
    for (const [resource, value] of Object.entries(totals[pick])) gauge.set({ resource }, value);
  };
  new Gauge({
    name: 'clawray_cluster_resources',
    help: 'Logical resources of all live nodes, by resource (CPU, GPU, memory_mb, custom)',
    labelNames: ['resource'],
    registers: [registry],
    collect() {
      collectResources(this, 'total');
    },
  });
  new Gauge({
    name: 'clawray_cluster_resources_used',
    help: 'Logical resources held by actors and placement groups, by resource',
    labelNames: ['resource'],
    registers: [registry],
    collect() {
      collectResources(this, 'used');
    },
  });
  new Gauge({
    name: 'clawray_cluster_placement_groups',
    help: 'Placement groups, by state',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      this.reset();
      for (const state of ['PENDING', 'CREATED', 'RESCHEDULING']) this.set({ state }, 0);
      for (const g of read().groups.list()) this.inc({ state: g.state });
    },
  });
  return {
    schedulingLatency: new Histogram({
      name: 'clawray_scheduler_latency_seconds',
      help: 'Time from an actor request (or restart) to its placement on a node',
      buckets: LATENCY_BUCKETS_S,
      registers: [registry],
    }),
    actorRestarts: new Counter({
      name: 'clawray_actor_restarts_total',
      help: 'Actor restarts after a process or node failure, by class',
      labelNames: ['actor_class'],
      registers: [registry],
    }),
  };
}
