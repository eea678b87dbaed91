/**
 * What a container of a rendered manifest would see, computed the way the kubelet does: its
 * env list in order (values, downward API fields, resource limits, secret keys; `$(VAR)`
 * expanded only from variables defined before it), and its args with `$(VAR)` expanded.
 */
import type { K8sObject } from './k8s-schema.js';

export interface PodFacts {
  podIp: string;
  nodeName: string;
  /** The pod's labels (the template's, plus what controllers add, e.g. the Job's name). */
  labels: Record<string, string>;
  /** Secrets of the namespace: name → key → value. */
  secrets: Record<string, Record<string, string>>;
}

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests are arbitrary JSON
export type Container = any;

const SUFFIX: Record<string, number> = {
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
};

/** A Kubernetes quantity (`500m`, `4Gi`, `32`) in base units. */
export function quantity(q: string | number): number {
  const m = /^(\d+(?:\.\d+)?)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/.exec(String(q));
  if (!m) throw new Error(`not a quantity this test understands: ${q}`);
  return Number(m[1]) * (m[2] ? SUFFIX[m[2]] : 1);
}

/** `$(VAR)` from `vars`, `$$` as `$`; an unknown reference stays as written (as in Kubernetes). */
export function expand(text: string, vars: Record<string, string>): string {
  return text.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name?: string) => {
    if (whole === '$$') return '$';
    return name !== undefined && name in vars ? vars[name] : whole;
  });
}

/** `$(VAR)` references in `text` that `vars` does not define. */
export function unresolved(text: string, vars: Record<string, string>): string[] {
  return [...text.matchAll(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g)].map((m) => m[1]).filter((n) => !(n in vars));
}

function fieldRef(path: string, pod: PodFacts): string {
  if (path === 'status.podIP') return pod.podIp;
  if (path === 'spec.nodeName') return pod.nodeName;
  const label = /^metadata\.labels\['(.+)'\]$/.exec(path);
  if (label) {
    if (!(label[1] in pod.labels)) throw new Error(`the pod has no label ${label[1]}`);
    return pod.labels[label[1]];
  }
  throw new Error(`fieldRef ${path} is not one this test knows`);
}

function resourceRef(ref: { resource: string; divisor?: string }, container: Container): string {
  const [kind, name] = ref.resource.split('.');
  const value = container.resources?.[kind]?.[name];
  if (value === undefined) throw new Error(`container ${container.name} sets no ${ref.resource}`);
  return String(Math.ceil(quantity(value) / quantity(ref.divisor ?? '1')));
}

/** The container's environment, with every problem (an undefined reference) thrown. */
export function containerEnv(container: Container, pod: PodFacts): Record<string, string> {
  const env: Record<string, string> = {};
  for (const e of container.env ?? []) {
    if (e.value !== undefined) {
      const missing = unresolved(e.value, env);
      if (missing.length > 0) throw new Error(`env ${e.name} uses $(${missing[0]}) before it is defined`);
      env[e.name] = expand(e.value, env);
    } else if (e.valueFrom?.fieldRef) {
      env[e.name] = fieldRef(e.valueFrom.fieldRef.fieldPath, pod);
    } else if (e.valueFrom?.resourceFieldRef) {
      env[e.name] = resourceRef(e.valueFrom.resourceFieldRef, container);
    } else if (e.valueFrom?.secretKeyRef) {
      const { name, key } = e.valueFrom.secretKeyRef;
      const value = pod.secrets[name]?.[key];
      if (value === undefined) throw new Error(`env ${e.name}: secret ${name} has no key ${key}`);
      env[e.name] = value;
    } else {
      throw new Error(`env ${e.name}: a source this test does not know`);
    }
  }
  return env;
}

/** The container's args as the process receives them. */
export function containerArgs(container: Container, env: Record<string, string>): string[] {
  return (container.args ?? []).map((arg: string) => {
    const missing = unresolved(arg, env);
    if (missing.length > 0) throw new Error(`arg ${arg} uses $(${missing[0]}), which is not in its env`);
    return expand(arg, env);
  });
}

/** name → key → decoded value, from the rendered Secrets. */
export function secretsOf(objects: K8sObject[]): PodFacts['secrets'] {
  const out: PodFacts['secrets'] = {};
  for (const o of objects.filter((x) => x.kind === 'Secret')) {
    out[o.metadata.name] = Object.fromEntries(
      Object.entries((o.data ?? {}) as Record<string, string>).map(([k, v]) => [
        k,
        Buffer.from(v, 'base64').toString(),
      ]),
    );
  }
  return out;
}

/** Replaces the values of `--flag=value` args; every flag named must be there. */
export function withFlags(args: string[], values: Record<string, string>): string[] {
  const seen = new Set<string>();
  const out = args.map((arg) => {
    const m = /^(--[\w-]+)=/.exec(arg);
    if (!m || !(m[1] in values)) return arg;
    seen.add(m[1]);
    return `${m[1]}=${values[m[1]]}`;
  });
  for (const flag of Object.keys(values)) {
    if (!seen.has(flag)) throw new Error(`${flag}=… is not among the args ${args.join(' ')}`);
  }
  return out;
}
