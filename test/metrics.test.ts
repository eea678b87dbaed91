import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { distEntry } from '../common/package-root.js';
import { eventually, fixture, TestCluster } from './helpers/processes.js';

function metricsPort(output: string[]): number {
  const line = output.find((l) => /metrics on :\d+/.test(l));
  return Number(/metrics on :(\d+)/.exec(line ?? '')?.[1]);
}

describe('Prometheus metrics', () => {
  const tc = new TestCluster();
  let headPort = 0;
  let workerPort = 0;

  beforeAll(async () => {
    const head = await tc.startHead({ metricsPort: 0 });
    const worker = await tc.startWorker({ gpus: 1, metricsPort: 0 });
    headPort = metricsPort(head.output);
    workerPort = metricsPort(worker.output);
    const cluster = await tc.connect();
    const counter = await cluster.createActor({
      module: fixture('counter.mjs'),
      className: 'Counter',
      options: { numGpus: 1 },
    });
    for (let i = 0; i < 10; i++) await counter.call('inc', 1);
    await counter.call('boom', 'x').catch(() => {});
    await cluster.createPlacementGroup({ bundles: [{ numCpus: 1 }] });
  });
  afterAll(() => tc.teardown());

  const scrape = (port: number, token?: string) =>
    fetch(`http://127.0.0.1:${port}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });

  it('requires the cluster token', async () => {
    expect((await scrape(headPort)).status).toBe(401);
    expect((await scrape(workerPort, 'wrong')).status).toBe(401);
  });

  it('exports the head metrics: nodes, actors, resources, groups, scheduling latency, RPCs, restarts', async () => {
    const text = await (await scrape(headPort, tc.token)).text();
    expect(text).toContain('clawray_cluster_nodes{state="ALIVE"} 1');
    expect(text).toContain('clawray_cluster_actors{state="ALIVE",actor_class="Counter"} 1');
    expect(text).toContain('clawray_cluster_resources{resource="GPU"} 1');
    expect(text).toContain('clawray_cluster_resources_used{resource="GPU"} 1');
    expect(text).toContain('clawray_cluster_placement_groups{state="CREATED"} 1');
    expect(text).toMatch(/clawray_scheduler_latency_seconds_count \d+/);
    expect(text).toMatch(
      /clawray_rpc_duration_seconds_count\{service="HeadService",method="CreateActor",code="OK"\} 1/,
    );
    expect(text).toContain('# TYPE clawray_actor_restarts_total counter');
  });

  it('exports the worker metrics including those of its actor processes', async () => {
    const text = await (await scrape(workerPort, tc.token)).text();
    expect(text).toContain('clawray_worker_actor_processes{state="running"} 1');
    expect(text).toContain('clawray_worker_actor_starts_total{outcome="ok"} 1');
    expect(text).toContain('clawray_actor_calls_total{outcome="ok",actor_class="Counter",job=""} 10');
    expect(text).toContain('clawray_actor_calls_total{outcome="error",actor_class="Counter",job=""} 1');
    expect(text).toContain('clawray_actor_call_seconds_count{actor_class="Counter",job=""} 11');
  });

  it("serves the process's default metrics on both, and names no gauge *_total", async () => {
    for (const port of [headPort, workerPort]) {
      const text = await (await scrape(port, tc.token)).text();
      expect(text).toMatch(/^process_resident_memory_bytes \d+/m);
      expect(text).toMatch(/^process_cpu_seconds_total /m);
      expect(text).toContain('# TYPE nodejs_heap_size_used_bytes gauge');
      expect(text.match(/^# TYPE process_resident_memory_bytes /gm)).toHaveLength(1);
      // `_total` is the counter suffix (OpenMetrics); a gauge named so reads as a counter.
      // (prom-client's own nodejs_active_*_total gauges are the standard names, left as they are.)
      const gauges = [...text.matchAll(/^# TYPE (clawray_\S+) gauge$/gm)].map((m) => m[1]);
      expect(gauges.length).toBeGreaterThan(0);
      expect(gauges.filter((name) => name.endsWith('_total'))).toEqual([]);
    }
  });

  it("exports a job driver's metrics through its supervisor (CLAWRAY_JOB_METRICS_FILE)", async () => {
    // What `clawray rljob run` does: prom-client metric JSON written to the file it is given.
    const metric = [
      {
        name: 'clawray_job_steps_total',
        help: 'Optimizer steps taken by the job',
        type: 'counter',
        aggregator: 'sum',
        values: [{ value: 7, labels: { job: 'metrics-driver' } }],
      },
    ];
    const script = `printf '%s' '${JSON.stringify(metric)}' > "$CLAWRAY_JOB_METRICS_FILE"; sleep 30`;
    const submit = spawnSync(
      process.execPath,
      [
        distEntry('cli/main'),
        'job',
        'submit',
        '--address',
        tc.head!.address,
        '--no-wait',
        '--submission-id',
        'metrics-driver',
        '--',
        script,
      ],
      { encoding: 'utf8', env: { ...process.env, CLAWRAY_ADDRESS: '', ...tc.env } },
    );
    expect(submit.status).toBe(0);
    const text = await eventually(async () => {
      const body = await (await scrape(workerPort, tc.token)).text();
      return body.includes('clawray_job_steps_total{job="metrics-driver"} 7') ? body : undefined;
    }, 30_000);
    expect(text).toContain('# TYPE clawray_job_steps_total counter');
    spawnSync(
      process.execPath,
      [distEntry('cli/main'), 'job', 'stop', '--address', tc.head!.address, 'metrics-driver'],
      {
        env: { ...process.env, CLAWRAY_ADDRESS: '', ...tc.env },
      },
    );
  });
});
