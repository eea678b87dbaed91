/**
 * The Kubernetes manifests under k8s/, checked without a cluster: every kustomization is
 * rendered with `kubectl kustomize` and every object validated against the Kubernetes (and
 * Prometheus Operator) schemas with unknown fields rejected; selectors, ports, probes and
 * references are checked against each other; and the head, each worker group and the submit
 * Job are run as real processes from their rendered args and env, to show the flags parse, the
 * probes ask for services that are served, and each worker registers the GPUs of its limit.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../bench/redis-server.js';
import { registerHealthCommand } from '../cli/health-command.js';
import { registerJobCommands } from '../cli/job-commands.js';
import { registerServerCommands } from '../cli/server-commands.js';
import {
  checkHealth,
  HEAD_READINESS_SERVICE,
  LIVENESS_SERVICE,
  WORKER_READINESS_SERVICE,
} from '../common/health.js';
import { distEntry, packageRoot } from '../common/package-root.js';
import { Cluster } from '../runtime/index.js';
import { type K8sObject, validateK8sObject } from './helpers/k8s-schema.js';
import { find, K8sTree, kubectlVersion, matches } from './helpers/kustomize.js';
import {
  type Container,
  containerArgs,
  containerEnv,
  type PodFacts,
  quantity,
  secretsOf,
  withFlags,
} from './helpers/pod-env.js';
import { eventually, type Proc, startProc } from './helpers/processes.js';

if (!kubectlVersion()) throw new Error('kubectl is needed to render k8s/ (.ci/run installs it)');

const SECRETS = {
  token: `k8s-test-${Math.random().toString(36).slice(2)}`,
  redisPassword: 'not-used-here',
  storeUrl: 'rediss://clawray:pw@redis.example.internal:6380/0',
};

const WORKLOAD_KINDS = new Set(['Deployment', 'StatefulSet', 'Job']);
const workloads = (objects: K8sObject[]) => objects.filter((o) => WORKLOAD_KINDS.has(o.kind));
const templateLabels = (w: K8sObject): Record<string, string> => w.spec.template.metadata?.labels ?? {};
const containerOf = (w: K8sObject, name: string): Container => {
  const c = w.spec.template.spec.containers.find((x: Container) => x.name === name);
  if (!c) throw new Error(`${w.kind}/${w.metadata.name} has no container ${name}`);
  return c;
};
const portNamed = (c: Container, name: string): number | undefined =>
  c.ports?.find((p: { name: string }) => p.name === name)?.containerPort;
const workerGroups = (objects: K8sObject[]) =>
  objects.filter(
    (o) => o.kind === 'Deployment' && templateLabels(o)['app.kubernetes.io/component'] === 'worker',
  );

/** The clawray command an args list runs, parsed by the real CLI definition without running it. */
function parseCli(args: string[]) {
  const program = new Command().exitOverride();
  registerServerCommands(program);
  registerJobCommands(program);
  registerHealthCommand(program);
  let cmd: Command = program;
  let i = 0;
  while (i < args.length && !args[i].startsWith('-')) {
    const sub = cmd.commands.find((c) => c.name() === args[i]);
    if (!sub) break;
    cmd = sub;
    i++;
  }
  cmd.exitOverride();
  const { operands, unknown } = cmd.parseOptions(args.slice(i));
  return { path: args.slice(0, i).join(' '), opts: cmd.opts(), operands, unknown };
}

/** The GPUs a worker container must register: CLAWRAY_GPUS when set, else its GPU limit. */
function expectedGpus(c: Container): number {
  const declared = c.env?.find((e: { name: string }) => e.name === 'CLAWRAY_GPUS')?.value;
  if (declared !== undefined) return Number(declared);
  return Number(c.resources?.limits?.['nvidia.com/gpu'] ?? 0);
}

describe('Kubernetes manifests', () => {
  const tree = new K8sTree(SECRETS);
  const rendered: Record<string, K8sObject[]> = {};

  beforeAll(() => {
    tree.addKustomization(
      'overlays/test-external-redis',
      'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../gpu]\n' +
        'components: [../../components/external-redis]\n',
    );
    for (const rel of [
      'overlays/cpu',
      'overlays/gpu',
      'overlays/test-external-redis',
      'monitoring',
      'jobs/submit',
    ]) {
      rendered[rel] = tree.render(rel);
    }
  });
  afterAll(() => tree.close());

  it('every kustomization renders, and every object passes the schemas with unknown fields rejected', async () => {
    const problems: string[] = [];
    for (const [rel, objects] of Object.entries(rendered)) {
      expect(objects.length, rel).toBeGreaterThan(0);
      for (const o of objects) problems.push(...(await validateK8sObject(o)).map((p) => `${rel}: ${p}`));
    }
    expect(problems).toEqual([]);
    const kinds = (rel: string) => new Set(rendered[rel].map((o) => o.kind));
    for (const overlay of ['overlays/cpu', 'overlays/gpu']) {
      expect([...kinds(overlay)].sort()).toEqual(
        [
          'ConfigMap',
          'Deployment',
          'Namespace',
          'NetworkPolicy',
          'PodDisruptionBudget',
          'Secret',
          'Service',
          'StatefulSet',
        ].sort(),
      );
    }
    expect([...kinds('monitoring')].sort()).toEqual([
      'ConfigMap',
      'PodMonitor',
      'PrometheusRule',
      'ServiceMonitor',
    ]);
    expect(kinds('overlays/test-external-redis').has('StatefulSet')).toBe(false);
  });

  it('the strict validation catches unknown and misplaced fields and wrong types', async () => {
    const gpu = rendered['overlays/gpu'];
    const deployment = structuredClone(find(gpu, 'Deployment', 'clawray-head'));
    deployment.spec.template.spec.containers[0].imagee = 'typo';
    deployment.spec.template.spec.containers[0].resources.limitz = { cpu: '1' };
    deployment.spec.replicas = 'one';
    deployment.spec.template.spec.nodeSelecter = { a: 'b' };
    const problems = await validateK8sObject(deployment);
    expect(problems.join('\n')).toMatch(/spec\.template\.spec\.containers\[0\]\.imagee: unknown field/);
    expect(problems.join('\n')).toMatch(/containers\[0\]\.resources\.limitz: unknown field/);
    expect(problems.join('\n')).toMatch(/spec\.template\.spec\.nodeSelecter: unknown field/);
    expect(problems.join('\n')).toMatch(/replicas must be integer/);

    const monitor = structuredClone(find(rendered.monitoring, 'PodMonitor', 'clawray-workers'));
    monitor.spec.podMetricsEndpoints[0].bearerTokenSecrett = {};
    expect(await validateK8sObject(monitor)).toEqual([
      'PodMonitor/clawray-workers: spec.podMetricsEndpoints[0].bearerTokenSecrett: unknown field',
    ]);
    const rule = structuredClone(find(rendered.monitoring, 'PrometheusRule', 'clawray'));
    rule.spec.groups[0].rules[0].fro = '5m';
    expect((await validateK8sObject(rule)).join('\n')).toMatch(/rules\[0\]\.fro: unknown field/);
    // Free-form values (labels, annotations, limits) are maps, not unknown fields.
    const labelled = structuredClone(find(gpu, 'Deployment', 'clawray-worker-trainer'));
    labelled.metadata.labels = { ...labelled.metadata.labels, 'example.com/anything': 'x' };
    expect(await validateK8sObject(labelled)).toEqual([]);
  });

  it('selectors pick exactly the pods they are meant for', () => {
    for (const overlay of ['overlays/cpu', 'overlays/gpu', 'overlays/test-external-redis']) {
      const objects = rendered[overlay];
      const ws = workloads(objects);
      const selecting = (selector: Record<string, string>) =>
        ws.filter((w) => matches(selector, templateLabels(w))).map((w) => w.metadata.name);
      for (const w of ws) {
        // Each workload owns its pods, and only its own.
        expect(selecting(w.spec.selector.matchLabels), `${overlay} ${w.metadata.name}`).toEqual([
          w.metadata.name,
        ]);
        expect(Object.keys(w.spec.selector.matchLabels).length).toBeGreaterThan(0);
      }
      expect(selecting(find(objects, 'Service', 'clawray-head').spec.selector)).toEqual(['clawray-head']);
      const pdb = find(objects, 'PodDisruptionBudget', 'clawray-worker-trainer');
      expect(selecting(pdb.spec.selector.matchLabels)).toEqual(['clawray-worker-trainer']);
      expect(workerGroups(objects).map((w) => templateLabels(w)['clawray.dev/worker-group'])).toEqual([
        'rollout',
        'trainer',
      ]);
      const policies = objects.filter((o) => o.kind === 'NetworkPolicy');
      for (const p of policies) {
        expect(selecting(p.spec.podSelector.matchLabels), p.metadata.name).toHaveLength(1);
        // The admitted pods: every pod of this cluster, the submit Job's included.
        const from = p.spec.ingress[0].from[0].podSelector.matchLabels;
        const submit = find(rendered['jobs/submit'], 'Job', 'clawray-submit');
        for (const w of [...ws, submit]) expect(matches(from, templateLabels(w)), w.metadata.name).toBe(true);
      }
      if (overlay !== 'overlays/test-external-redis') {
        expect(selecting(find(objects, 'Service', 'clawray-redis').spec.selector)).toEqual(['clawray-redis']);
        expect(find(objects, 'StatefulSet', 'clawray-redis').spec.serviceName).toBe('clawray-redis');
        expect(policies.map((p) => p.metadata.name).sort()).toEqual(['clawray-head', 'clawray-redis']);
      } else {
        expect(policies.map((p) => p.metadata.name)).toEqual(['clawray-head']);
      }
    }

    // Prometheus: the head through its Service, the workers (both groups) as pods.
    const gpu = rendered['overlays/gpu'];
    const headService = find(gpu, 'Service', 'clawray-head');
    const serviceMonitor = find(rendered.monitoring, 'ServiceMonitor', 'clawray-head');
    const services = gpu.filter((o) => o.kind === 'Service');
    expect(
      services
        .filter((s) => matches(serviceMonitor.spec.selector.matchLabels, s.metadata.labels))
        .map((s) => s.metadata.name),
    ).toEqual(['clawray-head']);
    expect(headService.spec.ports.map((p: { name: string }) => p.name)).toContain(
      serviceMonitor.spec.endpoints[0].port,
    );
    const podMonitor = find(rendered.monitoring, 'PodMonitor', 'clawray-workers');
    expect(
      workloads(gpu)
        .filter((w) => matches(podMonitor.spec.selector.matchLabels, templateLabels(w)))
        .map((w) => w.metadata.name),
    ).toEqual(['clawray-worker-rollout', 'clawray-worker-trainer']);
    for (const w of workerGroups(gpu)) {
      expect(portNamed(containerOf(w, 'worker'), podMonitor.spec.podMetricsEndpoints[0].port)).toBe(8080);
    }
    // Both monitors read the token from the Secret the cluster was deployed with.
    const secrets = secretsOf(gpu);
    for (const auth of [
      serviceMonitor.spec.endpoints[0].authorization,
      podMonitor.spec.podMetricsEndpoints[0].authorization,
    ]) {
      expect(auth.type).toBe('Bearer');
      expect(secrets[auth.credentials.name][auth.credentials.key]).toBe(SECRETS.token);
    }
    for (const o of rendered.monitoring) expect(o.metadata.namespace).toBe(headService.metadata.namespace);
  });

  it('ports, volumes and references agree with each other', () => {
    for (const [rel, objects] of Object.entries(rendered)) {
      if (rel === 'monitoring') continue;
      const names = (kind: string) =>
        new Set(objects.filter((o) => o.kind === kind).map((o) => o.metadata.name));
      const base = rel === 'jobs/submit' ? rendered['overlays/cpu'] : objects;
      for (const w of workloads(objects)) {
        const spec = w.spec.template.spec;
        const volumes = new Map<string, Container>(spec.volumes.map((v: Container) => [v.name, v]));
        const claims = (w.spec.volumeClaimTemplates ?? []).map((t: Container) => t.metadata.name);
        for (const claim of claims) volumes.set(claim, { name: claim });
        for (const c of spec.containers) {
          for (const m of c.volumeMounts ?? [])
            expect(volumes.has(m.name), `${w.metadata.name} ${m.name}`).toBe(true);
          for (const probe of [c.readinessProbe, c.livenessProbe, c.startupProbe].filter(Boolean)) {
            const port = probe.grpc?.port ?? probe.tcpSocket?.port ?? probe.httpGet?.port;
            if (port === undefined) continue;
            const ports = (c.ports ?? []).flatMap((p: Container) => [p.name, p.containerPort]);
            expect(ports, `${w.metadata.name} probe port ${port}`).toContain(port);
          }
          for (const e of c.env ?? []) {
            const ref = e.valueFrom?.secretKeyRef;
            if (ref)
              expect(secretsOf(base)[ref.name]?.[ref.key], `${w.metadata.name} ${e.name}`).toBeDefined();
          }
        }
        // Services named clawray-* would otherwise inject CLAWRAY_*_PORT variables.
        expect(spec.enableServiceLinks, w.metadata.name).toBe(false);
        for (const v of volumes.values()) {
          if (v.configMap) expect(names('ConfigMap').has(v.configMap.name), v.configMap.name).toBe(true);
        }
      }
      for (const s of objects.filter((o) => o.kind === 'Service')) {
        const [target] = workloads(objects).filter((w) => matches(s.spec.selector, templateLabels(w)));
        for (const p of s.spec.ports) {
          expect(
            portNamed(target.spec.template.spec.containers[0], p.targetPort),
            `${s.metadata.name} ${p.name}`,
          ).toBe(p.port);
        }
      }
    }
  });

  it('the CLI accepts every container’s args; they listen where the ports, probes and Service say', () => {
    for (const overlay of ['overlays/cpu', 'overlays/gpu']) {
      const objects = rendered[overlay];
      const headService = find(objects, 'Service', 'clawray-head');
      const servicePort = (name: string) =>
        headService.spec.ports.find((p: { name: string }) => p.name === name);
      const pod = (w: K8sObject): PodFacts => ({
        podIp: '10.0.0.7',
        nodeName: 'node-a',
        labels: templateLabels(w),
        secrets: secretsOf(objects),
      });

      const head = find(objects, 'Deployment', 'clawray-head');
      expect(head.spec.replicas).toBe(1);
      expect(head.spec.strategy.type).toBe('Recreate');
      const hc = containerOf(head, 'head');
      expect(hc.command).toBeUndefined(); // the image's entrypoint (tini, then clawray) stays
      const henv = containerEnv(hc, pod(head));
      const h = parseCli(containerArgs(hc, henv));
      expect(h).toMatchObject({ path: 'head start', operands: [], unknown: [] });
      expect(h.opts.host).toBe('0.0.0.0');
      expect(h.opts.port).toBe(portNamed(hc, 'grpc'));
      expect(h.opts.metricsPort).toBe(portNamed(hc, 'metrics'));
      expect(h.opts.store).toBe(`redis://clawray:${SECRETS.redisPassword}@clawray-redis:6379/0`);
      expect(servicePort('grpc').port).toBe(h.opts.port);
      for (const probe of [hc.startupProbe, hc.readinessProbe]) {
        expect(probe.grpc).toEqual({ port: h.opts.port, service: HEAD_READINESS_SERVICE });
      }
      expect(hc.livenessProbe.grpc.port).toBe(h.opts.port);
      expect(hc.livenessProbe.grpc.service ?? '').toBe(LIVENESS_SERVICE);
      expect(henv.CLAWRAY_HEALTH_ADDRESS).toBe(`127.0.0.1:${h.opts.port}`);
      expect(hc.lifecycle.preStop.exec.command[0]).toBe('sleep');
      expect(head.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(
        Number(hc.lifecycle.preStop.exec.command[1]) + 10,
      );

      for (const w of workerGroups(objects)) {
        const c = containerOf(w, 'worker');
        expect(c.command).toBeUndefined();
        const env = containerEnv(c, pod(w));
        const o = parseCli(containerArgs(c, env));
        expect(o).toMatchObject({ path: 'worker start', operands: [], unknown: [] });
        expect(o.opts.head).toBe(`${headService.metadata.name}:${servicePort('grpc').port}`);
        expect(o.opts.advertiseHost).toBe('10.0.0.7');
        expect(o.opts.port).toBe(portNamed(c, 'grpc'));
        expect(o.opts.metricsPort).toBe(portNamed(c, 'metrics'));
        expect(o.opts.labels.pool).toBe(templateLabels(w)['clawray.dev/worker-group']);
        expect(o.opts.cpus).toBe(Math.ceil(quantity(c.resources.limits.cpu)));
        expect(o.opts.memoryMb).toBe(quantity(c.resources.limits.memory) / 2 ** 20);
        expect(o.opts.gpus === undefined && o.opts.gpuIds === undefined).toBe(true);
        expect(c.readinessProbe.grpc).toEqual({ port: o.opts.port, service: WORKER_READINESS_SERVICE });
        expect(c.livenessProbe.grpc.port).toBe(o.opts.port);
        expect(c.livenessProbe.grpc.service ?? '').toBe(LIVENESS_SERVICE);
        expect(env.CLAWRAY_HEALTH_ADDRESS).toBe(`127.0.0.1:${o.opts.port}`);
        // SIGTERM drains: every actor gets its graceful stop (5 s) before the kubelet's SIGKILL.
        expect(w.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(30);
        const limit = c.resources.limits['nvidia.com/gpu'];
        if (overlay === 'overlays/gpu') {
          expect(Number(limit)).toBeGreaterThan(0);
          expect(w.spec.template.spec.tolerations).toContainEqual({
            key: 'nvidia.com/gpu',
            operator: 'Exists',
            effect: 'NoSchedule',
          });
          expect(w.spec.template.spec.nodeSelector).toBeDefined();
          expect(w.spec.strategy.rollingUpdate.maxSurge).toBe(0);
        } else {
          expect(limit).toBeUndefined();
        }
      }
    }

    const submit = find(rendered['jobs/submit'], 'Job', 'clawray-submit');
    const sc = containerOf(submit, 'submit');
    const jobPod: PodFacts = {
      podIp: '10.0.0.9',
      nodeName: 'node-b',
      labels: { ...templateLabels(submit), 'batch.kubernetes.io/job-name': submit.metadata.name },
      secrets: secretsOf(rendered['overlays/cpu']),
    };
    const s = parseCli(containerArgs(sc, containerEnv(sc, jobPod)));
    expect(s).toMatchObject({ path: 'job submit', operands: ['node', 'driver.mjs'], unknown: [] });
    expect(s.opts.address).toBe('clawray-head:6390');
    expect(s.opts.submissionId).toBe('clawray-submit');
    const mount = sc.volumeMounts.find((m: { mountPath: string }) => m.mountPath === s.opts.workingDir);
    const volume = submit.spec.template.spec.volumes.find((v: { name: string }) => v.name === mount.name);
    const files = rendered['jobs/submit'].find((o) => o.metadata.name === volume.configMap.name)!;
    expect(Object.keys(files.data)).toContain('driver.mjs');
    expect(submit.spec.template.spec.restartPolicy).toBe('Never');
  });

  describe('as real processes', () => {
    const scratch = mkdtempSync(join(tmpdir(), 'clawray-k8s-run-'));
    // The submit test's driver imports 'clawray': the images link it at /node_modules/clawray;
    // here the worker's home lies inside this package, where the package resolves itself.
    const jobHome = packageScratch();
    let head: Proc | undefined;
    let headGrpc = '';
    const workers: Proc[] = [];
    let client: Cluster | undefined;

    beforeAll(async () => {
      const objects = rendered['overlays/gpu'];
      const deployment = find(objects, 'Deployment', 'clawray-head');
      const hc = containerOf(deployment, 'head');
      const env = containerEnv(hc, {
        podIp: '127.0.0.1',
        nodeName: 'node-a',
        labels: templateLabels(deployment),
        secrets: secretsOf(objects),
      });
      const [port, metricsPort] = [await freePort(), await freePort()];
      // Loopback and free ports instead of the pod's; the memory store (k8s-redis.test runs
      // the manifest's Redis).
      const args = withFlags(containerArgs(hc, env), {
        '--host': '127.0.0.1',
        '--port': String(port),
        '--metrics-port': String(metricsPort),
        '--store': 'memory',
      });
      head = await startProc(
        args,
        { ...env, CLAWRAY_HOME: join(scratch, 'head'), CLAWRAY_HEALTH_ADDRESS: `127.0.0.1:${port}` },
        /clawray head listening on (?<address>\S+)/,
      );
      headGrpc = head.address;
      client = await Cluster.connect({ address: headGrpc, token: SECRETS.token, headRetryMs: 0 });
    });

    afterAll(async () => {
      await client?.close();
      await Promise.all(workers.map((w) => w.kill('SIGKILL')));
      await head?.kill('SIGKILL');
      rmSync(scratch, { recursive: true, force: true });
      rmSync(jobHome, { recursive: true, force: true });
    });

    it('the head serves the probes’ health services and /metrics with the Secret’s token', async () => {
      expect(await checkHealth(headGrpc, HEAD_READINESS_SERVICE)).toBe('SERVING');
      expect(await checkHealth(headGrpc, LIVENESS_SERVICE)).toBe('SERVING');
      const metricsPort = Number(/metrics on :(\d+)/.exec(head!.output.join('\n'))?.[1]);
      const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, {
        headers: { authorization: `Bearer ${SECRETS.token}` },
      });
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('clawray_cluster_nodes');
    });

    for (const overlay of ['overlays/cpu', 'overlays/gpu']) {
      it(`${overlay}: each worker group registers the GPUs its limit (or CLAWRAY_GPUS) gives it`, async () => {
        const objects = rendered[overlay];
        for (const w of workerGroups(objects)) {
          const c = containerOf(w, 'worker');
          const group = templateLabels(w)['clawray.dev/worker-group'];
          const nodeName = `${overlay.split('/')[1]}-${group}`;
          const env = containerEnv(c, {
            podIp: '127.0.0.1',
            nodeName,
            labels: templateLabels(w),
            secrets: secretsOf(objects),
          });
          const gpus = expectedGpus(c);
          const limit = Number(c.resources.limits['nvidia.com/gpu'] ?? 0);
          // What the NVIDIA device plugin adds to a container that was given `limit` GPUs.
          const devicePlugin =
            limit > 0
              ? {
                  NVIDIA_VISIBLE_DEVICES: Array.from(
                    { length: limit },
                    (_, i) => `GPU-${String(i).padStart(8, '0')}-1111-2222-3333-444455556666`,
                  ).join(','),
                }
              : {};
          const [port, metricsPort] = [await freePort(), await freePort()];
          const args = withFlags(containerArgs(c, env), {
            '--head': headGrpc,
            '--host': '127.0.0.1',
            '--port': String(port),
            '--metrics-port': String(metricsPort),
          });
          const processEnv: NodeJS.ProcessEnv = {
            ...process.env,
            ...env,
            ...devicePlugin,
            CLAWRAY_HOME: jobHome,
          };
          if (!('NVIDIA_VISIBLE_DEVICES' in devicePlugin)) delete processEnv.NVIDIA_VISIBLE_DEVICES;
          if (!('CLAWRAY_GPUS' in env)) delete processEnv.CLAWRAY_GPUS;
          // No warm pool: four workers start one after the other on a small machine.
          const worker = await startProc(
            [...args, '--pool-size', '0'],
            processEnv,
            /clawray worker (?<nodeId>\S+) listening on (?<address>\S+)/,
          );
          workers.push(worker);
          const node = await eventually(async () =>
            (await client!.status()).nodes.find((n) => n.nodeId === worker.nodeId && n.state === 'ALIVE'),
          );
          expect(node.total.GPU, `${overlay} ${group}`).toBe(gpus);
          expect(node.labels).toEqual({ pool: group, 'k8s-node': nodeName });
          expect(node.total.CPU).toBe(Math.ceil(quantity(c.resources.limits.cpu)));
          expect(node.total.memory_mb).toBe(quantity(c.resources.limits.memory) / 2 ** 20);
          expect(await checkHealth(`127.0.0.1:${port}`, WORKER_READINESS_SERVICE)).toBe('SERVING');
        }
      });
    }

    it('the submit Job runs its driver on the cluster and ends with the job’s outcome', async () => {
      const objects = rendered['jobs/submit'];
      const job = find(objects, 'Job', 'clawray-submit');
      const c = containerOf(job, 'submit');
      const env = containerEnv(c, {
        podIp: '127.0.0.1',
        nodeName: 'node-b',
        labels: { ...templateLabels(job), 'batch.kubernetes.io/job-name': job.metadata.name },
        secrets: secretsOf(rendered['overlays/gpu']),
      });
      // The ConfigMap volume, as the kubelet mounts it.
      const files = objects.find((o) => o.kind === 'ConfigMap')!;
      const jobDir = join(scratch, 'job');
      mkdirSync(jobDir);
      for (const [name, text] of Object.entries(files.data as Record<string, string>)) {
        writeFileSync(join(jobDir, name), text);
      }
      const args = withFlags(containerArgs(c, env), { '--address': headGrpc, '--working-dir': jobDir });
      const run = await runToEnd(args, { ...env, CLAWRAY_HOME: join(scratch, 'submit') });
      expect(run.code, run.output).toBe(0);
      // The driver saw the workers of both overlays, with the GPUs they registered.
      const gpus = ['overlays/cpu', 'overlays/gpu']
        .flatMap((o) => workerGroups(rendered[o]))
        .reduce((sum, w) => sum + expectedGpus(containerOf(w, 'worker')), 0);
      expect(run.output).toMatch(new RegExp(`${workers.length} live node\\(s\\), ${gpus} GPU\\(s\\)`));
      expect(run.output).toMatch(/job 'clawray-submit' submitted/);
    });
  });
});

/** A temporary folder inside this package (its .clawray/ is git-ignored). */
function packageScratch(): string {
  const parent = join(packageRoot(), '.clawray');
  mkdirSync(parent, { recursive: true });
  return mkdtempSync(join(parent, 'k8s-test-'));
}

function runToEnd(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child: ChildProcess = spawn(process.execPath, [distEntry('cli/main'), ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout?.on('data', (b: Buffer) => {
      output += b.toString();
    });
    child.stderr?.on('data', (b: Buffer) => {
      output += b.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}
