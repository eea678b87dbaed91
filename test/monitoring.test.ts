/**
 * Every metric a Grafana panel or a Prometheus alert of k8s/monitoring reads is really exported.
 * A real cluster (a head and a worker process, both with /metrics) runs the actor classes whose
 * metrics the dashboard shows — a rollout engine, a trainer shard, a judge voter, two collective
 * ranks that all-reduce, and a job — and both endpoints are scraped over HTTP with the token.
 * The clawray_job_* metrics need a running RL job; they are read from `JobMetrics` (the class the
 * pipeline driver exports them with) registered in a fresh prom-client registry.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { createCollectiveGroup } from '../actors/collective/driver.js';
import { initRandomModel } from '../actors/models/model-init.js';
import { distEntry, packageRoot } from '../common/package-root.js';
import { JobMetrics } from '../jobs/rl/job-metrics.js';
import type { Cluster } from '../runtime/index.js';
import { fixture, TestCluster } from './helpers/processes.js';
import { expandGrafana, type Selector, selectors } from './helpers/promql.js';

const monitoring = join(packageRoot(), 'k8s', 'monitoring');
// biome-ignore lint/suspicious/noExplicitAny: the dashboard is Grafana's JSON model
const dashboard: any = JSON.parse(readFileSync(join(monitoring, 'grafana', 'clawray.json'), 'utf8'));
// biome-ignore lint/suspicious/noExplicitAny: a PrometheusRule manifest
const rules: any = parseYaml(readFileSync(join(monitoring, 'alerts.yaml'), 'utf8'));

/** Series Prometheus makes itself for every target, and the labels it attaches to them. */
const PROMETHEUS_SERIES = new Set(['up']);
const TARGET_LABELS = new Set(['job', 'instance', 'namespace', 'pod', 'worker_group', 'k8s_node']);

interface Family {
  type: string;
  /** Label names seen on its samples (empty when it has none yet). */
  labels: Set<string>;
}

/** Metric families of Prometheus text exposition, with the label names of their samples. */
function families(text: string, into = new Map<string, Family>()): Map<string, Family> {
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)/.exec(line);
    if (type) {
      if (!into.has(type[1])) into.set(type[1], { type: type[2], labels: new Set() });
      continue;
    }
    const sample = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? /.exec(line);
    if (!sample) continue;
    const family = into.get(sample[1]) ?? into.get(sample[1].replace(/_(bucket|sum|count)$/, ''));
    for (const m of (sample[2] ?? '').matchAll(/([a-zA-Z_]\w*)="/g)) family?.labels.add(m[1]);
  }
  return into;
}

/** The family a selector reads: the name itself, or a histogram's _bucket/_sum/_count. */
function familyOf(name: string, known: Map<string, Family>): [string, Family] | undefined {
  const exact = known.get(name);
  if (exact) return [name, exact];
  const base = name.replace(/_(bucket|sum|count)$/, '');
  const f = known.get(base);
  return f && (f.type === 'histogram' || f.type === 'summary') ? [base, f] : undefined;
}

function dashboardQueries(): Array<{ where: string; expr: string }> {
  const out: Array<{ where: string; expr: string }> = [];
  for (const panel of dashboard.panels) {
    for (const t of panel.targets ?? []) out.push({ where: `panel "${panel.title}"`, expr: t.expr });
  }
  for (const v of dashboard.templating.list.filter((x: { type: string }) => x.type === 'query')) {
    const inner = /^label_values\((\w+),\s*(\w+)\)$/.exec(v.definition);
    expect(inner, `variable ${v.name}: label_values(metric, label)`).not.toBeNull();
    out.push({ where: `variable $${v.name}`, expr: `${inner![1]}{${inner![2]}!=""}` });
  }
  return out;
}

function alertQueries(): Array<{ where: string; expr: string }> {
  return rules.spec.groups.flatMap((g: { rules: Array<{ alert: string; expr: string }> }) =>
    g.rules.map((r) => ({ where: `alert ${r.alert}`, expr: r.expr })),
  );
}

describe('the dashboard and the alerts', () => {
  it('are well-formed: unique ids, panels that do not overlap, alerts with severity and summary', () => {
    const ids = dashboard.panels.map((p: { id: number }) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    const boxes = dashboard.panels.map(
      (p: { gridPos: { x: number; y: number; w: number; h: number } }) => p.gridPos,
    );
    for (const [i, a] of boxes.entries()) {
      expect(a.x + a.w).toBeLessThanOrEqual(24);
      for (const b of boxes.slice(i + 1)) {
        const apart = a.x + a.w <= b.x || b.x + b.w <= a.x || a.y + a.h <= b.y || b.y + b.h <= a.y;
        expect(apart, `panels at ${JSON.stringify(a)} and ${JSON.stringify(b)} overlap`).toBe(true);
      }
    }
    for (const p of dashboard.panels.filter((x: { type: string }) => x.type !== 'row')) {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax
      expect(p.datasource.uid, p.title).toBe('${datasource}');
      expect(p.targets.length, p.title).toBeGreaterThan(0);
    }
    const alerts = rules.spec.groups.flatMap((g: { rules: unknown[] }) => g.rules);
    expect(alerts.map((r: { alert: string }) => r.alert).sort()).toEqual([
      'ClawrayActorRestartLoop',
      'ClawrayBufferLagGrowing',
      'ClawrayHeadDown',
      'ClawrayJobFailed',
      'ClawrayNodeDead',
      'ClawrayTrainerIdle',
      'ClawrayTrainerSkippedSteps',
    ]);
    for (const r of alerts) {
      expect(['critical', 'warning', 'info'], r.alert).toContain(r.labels.severity);
      expect(r.annotations.summary, r.alert).toBeTruthy();
      if (r.for !== undefined) expect(r.for, r.alert).toMatch(/^\d+[smh]$/);
    }
  });

  it('parse as PromQL', () => {
    for (const { where, expr } of [...dashboardQueries(), ...alertQueries()]) {
      const parsed = selectors(expandGrafana(expr));
      expect(parsed.error, `${where}: ${expr}`).toBeUndefined();
      expect(parsed.selectors.length, `${where}: ${expr}`).toBeGreaterThan(0);
    }
  });

  describe('read only metrics a real cluster exports', () => {
    const tc = new TestCluster();
    const root = mkdtempSync(join(tmpdir(), 'clawray-monitoring-'));
    const exported = new Map<string, Family>();
    let cluster: Cluster;

    beforeAll(async () => {
      const modelDir = join(root, 'tiny');
      initRandomModel({ preset: 'tiny', outDir: modelDir, seed: 3 });
      const head = await tc.startHead({ metricsPort: 0 });
      const worker = await tc.startWorker({ gpus: 2, cpus: 16, metricsPort: 0, poolSize: 6 });
      cluster = await tc.connect();

      const counter = await cluster.createActor({ module: fixture('counter.mjs'), className: 'Counter' });
      await counter.call('inc', 1);
      const engine = await cluster.createActor({
        module: 'clawray/rollout',
        className: 'RolloutEngine',
        args: [{ modelDir, maxBatchSize: 2 }],
        options: { numGpus: 0.5 },
      });
      await engine.call('generate', { promptTokenIds: [1, 2, 3], maxTokens: 4 });
      const shard = await cluster.createActor({
        module: 'clawray/trainer',
        className: 'TrainerShard',
        args: [
          {
            modelDir,
            method: 'rl',
            optimizer: { lr: 1e-3 },
            backend: 'cpu',
            checkpointDir: join(root, 'ckpt'),
          },
        ],
      });
      await shard.call('ready');
      const voter = await cluster.createActor({
        module: join(packageRoot(), 'dist', 'actors', 'judge', 'judge-voter.js'),
        className: 'JudgeVoter',
        args: [{ backend: 'rule', rule: 'boxed-answer' }],
      });
      await voter.call('vote', {
        messages: [{ role: 'user', content: '1+1?' }],
        response: '\\boxed{2}',
        nextState: null,
        reference: { answer: '2' },
      });
      const ranks = await Promise.all(
        [0, 1].map(() =>
          cluster.createActor({ module: fixture('collective-rank.mjs'), className: 'CollectiveRank' }),
        ),
      );
      await createCollectiveGroup(cluster, ranks, 'monitoring');
      await Promise.all(ranks.map((r) => r.call('fill', 1024)));
      await Promise.all(ranks.map((r) => r.call('runAllReduce', 'sum')));
      const job = spawnSync(
        process.execPath,
        [distEntry('cli/main'), 'job', 'submit', '--address', head.address, '--', 'true'],
        { env: { ...process.env, ...tc.env }, encoding: 'utf8', timeout: 60_000 },
      );
      expect(job.status, job.stderr).toBe(0);

      for (const proc of [head, worker]) {
        const port = Number(/metrics on :(\d+)/.exec(proc.output.join('\n'))?.[1]);
        const res = await fetch(`http://127.0.0.1:${port}/metrics`, {
          headers: { authorization: `Bearer ${tc.token}` },
        });
        expect(res.status).toBe(200);
        families(await res.text(), exported);
      }
    }, 180_000);

    afterAll(async () => {
      await tc.teardown();
      rmSync(root, { recursive: true, force: true });
    });

    it('every metric and label a panel or an alert reads', async () => {
      // Job metrics need an RL job's driver; their names and labels come from its metrics class.
      const jobRegistry = new Registry();
      new JobMetrics(jobRegistry);
      const known = new Map(exported);
      for (const m of await jobRegistry.getMetricsAsJSON()) {
        const metric = jobRegistry.getSingleMetric(m.name) as unknown as { labelNames: string[] };
        known.set(m.name, { type: String(m.type), labels: new Set(metric.labelNames) });
      }
      const problems: string[] = [];
      const read = new Set<string>();
      for (const { where, expr } of [...dashboardQueries(), ...alertQueries()]) {
        for (const s of selectors(expandGrafana(expr)).selectors as Selector[]) {
          if (PROMETHEUS_SERIES.has(s.metric)) continue;
          const family = familyOf(s.metric, known);
          if (!family) {
            problems.push(`${where}: ${s.metric} is not exported`);
            continue;
          }
          read.add(family[0]);
          for (const label of s.labels) {
            const ok = family[1].labels.has(label) || TARGET_LABELS.has(label) || label === 'le';
            if (!ok)
              problems.push(`${where}: ${s.metric} has no label ${label} (it has ${[...family[1].labels]})`);
          }
        }
      }
      expect(problems).toEqual([]);
      // What the issue asks the dashboard and alerts to cover.
      for (const name of [
        'clawray_cluster_nodes',
        'clawray_cluster_resources_used',
        'clawray_cluster_actors',
        'clawray_scheduler_latency_seconds',
        'clawray_job_reward_mean',
        'clawray_job_success_ratio',
        'clawray_rollout_tokens_total',
        'clawray_job_staleness_versions',
        'clawray_job_trainer_idle_ratio',
        'clawray_job_rollout_idle_ratio',
        'clawray_allreduce_bytes_total',
        'clawray_judge_agreement_ratio',
        'clawray_job_buffer_lag_entries',
        'clawray_actor_restarts_total',
        'clawray_cluster_jobs',
        'clawray_cluster_node_losses_total',
      ]) {
        expect(read, name).toContain(name);
      }
    });
  });
});
