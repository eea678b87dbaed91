/**
 * Validates Kubernetes objects offline against the API's OpenAPI schemas (kubernetes-models,
 * and @kubernetes-models/prometheus-operator for the monitoring CRDs) with unknown fields
 * rejected, as `kubectl apply --validate=strict` does against a server.
 *
 * The packages ship the schemas as compiled validators that ignore properties they do not
 * know. To reject those, the object is validated through a proxy that records which property
 * names the validator looked up on each object: a schema with properties reads every property
 * it defines (present or not), and map-like schemas (labels, resources.limits) enumerate their
 * keys. A key of an object whose schema read properties, that the schema never read, is unknown.
 * Objects whose schema reads nothing are free-form (arbitrary JSON) and are not checked.
 */

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; [k: string]: unknown };
  // biome-ignore lint/suspicious/noExplicitAny: manifests are arbitrary JSON, narrowed by the tests
  [field: string]: any;
}

type ModelClass = { prototype: { validate(this: unknown): void } };

/** The module exporting the model classes of an apiVersion. */
function modelModule(apiVersion: string): string {
  if (apiVersion.startsWith('monitoring.coreos.com/')) {
    return `@kubernetes-models/prometheus-operator/${apiVersion}`;
  }
  return `kubernetes-models/${apiVersion}`;
}

async function modelClass(apiVersion: string, kind: string): Promise<ModelClass | undefined> {
  let mod: Record<string, unknown>;
  try {
    mod = (await import(modelModule(apiVersion))) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const cls = mod[kind] as ModelClass | undefined;
  return typeof cls?.prototype?.validate === 'function' ? cls : undefined;
}

function tracked(root: unknown) {
  const reads = new WeakMap<object, Set<string>>();
  const proxies = new WeakMap<object, object>();
  const wrap = (value: unknown): unknown => {
    if (value === null || typeof value !== 'object') return value;
    const cached = proxies.get(value);
    if (cached) return cached;
    const seen = new Set<string>();
    reads.set(value, seen);
    const proxy = new Proxy(value, {
      get(target, key, receiver) {
        if (typeof key === 'string') seen.add(key);
        return wrap(Reflect.get(target, key, receiver));
      },
      has(target, key) {
        if (typeof key === 'string') seen.add(key);
        return Reflect.has(target, key);
      },
      getOwnPropertyDescriptor(target, key) {
        if (typeof key === 'string') seen.add(key);
        return Reflect.getOwnPropertyDescriptor(target, key);
      },
    });
    proxies.set(value, proxy);
    return proxy;
  };
  return { proxy: wrap(root), reads };
}

function unknownFields(
  value: unknown,
  path: string,
  reads: WeakMap<object, Set<string>>,
  out: string[],
): void {
  if (value === null || typeof value !== 'object') return;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) unknownFields(item, `${path}[${i}]`, reads, out);
    return;
  }
  const seen = reads.get(value);
  if (!seen || seen.size === 0) return;
  for (const [key, child] of Object.entries(value)) {
    if (seen.has(key)) unknownFields(child, `${path}.${key}`, reads, out);
    else out.push(`${path}.${key}: unknown field`);
  }
}

/** Problems of one object, each naming its field path; [] when it is valid. */
export async function validateK8sObject(obj: K8sObject): Promise<string[]> {
  const where = `${obj?.kind ?? '?'}/${obj?.metadata?.name ?? '?'}`;
  const cls = await modelClass(obj.apiVersion, obj.kind);
  if (!cls) return [`${where}: no schema for ${obj.apiVersion} ${obj.kind}`];
  const { proxy, reads } = tracked(obj);
  const problems: string[] = [];
  try {
    cls.prototype.validate.call(proxy);
  } catch (err) {
    problems.push(`${where}: ${(err as Error).message}`);
  }
  const unknown: string[] = [];
  unknownFields(obj, '', reads, unknown);
  problems.push(...unknown.map((u) => `${where}: ${u.slice(1)}`));
  return problems;
}
