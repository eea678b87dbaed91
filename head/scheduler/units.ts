/**
 * Resource amounts as integers of 0.0001 (Ray's precision). Floats would drift after many
 * allocate/release rounds (0.1 + 0.2 !== 0.3) and make a full GPU look 0.9999 free; integers
 * keep every add and subtract exact.
 */
import { ConfigError } from '../../common/errors.js';
import { RESOURCE_PRECISION, type ResourceRequest } from '../../common/resources.js';

/** Units per 1.0 of a resource; one whole GPU. */
export const UNIT = Math.round(1 / RESOURCE_PRECISION);

/** The resource kinds as messages and `ResourceTotals` name them. */
export const CPU = 'CPU';
export const GPU = 'GPU';
export const MEMORY = 'memory_mb';
const RESERVED_NAMES = new Set([CPU, GPU, MEMORY, 'memory']);

/** An amount of each resource kind in units. `custom` holds only non-zero entries. */
export interface UnitVector {
  cpu: number;
  gpu: number;
  mem: number;
  custom: Map<string, number>;
}

export function toUnits(amount: number): number {
  return Math.round(amount * UNIT);
}

export function fromUnits(units: number): number {
  return units / UNIT;
}

export function zeroVector(): UnitVector {
  return { cpu: 0, gpu: 0, mem: 0, custom: new Map() };
}

export function cloneVector(v: UnitVector): UnitVector {
  return { cpu: v.cpu, gpu: v.gpu, mem: v.mem, custom: new Map(v.custom) };
}

function checkedUnits(amount: number, name: string, what: string): number {
  if (typeof amount !== 'number' || !Number.isFinite(amount) || amount < 0) {
    throw new ConfigError(`${what}: ${name} must be a non-negative number, got ${String(amount)}`, {
      fields: { resource: name, requested: String(amount) },
    });
  }
  return toUnits(amount);
}

/**
 * Validates and converts a request. A GPU amount above 1 must be whole because a GPU share
 * is either part of one device or a set of whole devices.
 */
export function toUnitVector(request: ResourceRequest, what: string): UnitVector {
  const v: UnitVector = {
    cpu: checkedUnits(request.numCpus ?? 0, 'numCpus', what),
    gpu: checkedUnits(request.numGpus ?? 0, 'numGpus', what),
    mem: checkedUnits(request.memoryMb ?? 0, 'memoryMb', what),
    custom: new Map(),
  };
  if (v.gpu > UNIT && v.gpu % UNIT !== 0) {
    throw new ConfigError(
      `${what}: numGpus ${fromUnits(v.gpu)} must be a fraction of one GPU (≤ 1) or a whole number of GPUs`,
      { fields: { resource: GPU, requested: fromUnits(v.gpu) } },
    );
  }
  const names = Object.keys(request.custom ?? {}).sort();
  for (const name of names) {
    if (RESERVED_NAMES.has(name)) {
      throw new ConfigError(
        `${what}: custom resource "${name}" is reserved; set CPU, GPU and memory with numCpus, numGpus and memoryMb`,
        { fields: { resource: name } },
      );
    }
    const units = checkedUnits(request.custom[name], `resource "${name}"`, what);
    if (units > 0) v.custom.set(name, units);
  }
  return v;
}

export function toResourceRequest(v: UnitVector): ResourceRequest {
  const custom: Record<string, number> = {};
  for (const [name, units] of v.custom) custom[name] = fromUnits(units);
  return { numCpus: fromUnits(v.cpu), numGpus: fromUnits(v.gpu), memoryMb: fromUnits(v.mem), custom };
}

/** Like `toResourceRequest`, but negative amounts (an over-committed restore) read as 0. */
export function toClampedRequest(v: UnitVector): ResourceRequest {
  const custom: Record<string, number> = {};
  for (const [name, units] of v.custom) custom[name] = fromUnits(Math.max(0, units));
  return {
    numCpus: fromUnits(Math.max(0, v.cpu)),
    numGpus: fromUnits(Math.max(0, v.gpu)),
    memoryMb: fromUnits(Math.max(0, v.mem)),
    custom,
  };
}

export function isZero(v: UnitVector): boolean {
  return v.cpu === 0 && v.gpu === 0 && v.mem === 0 && v.custom.size === 0;
}

/** True when `have` holds at least `need` of every kind. Hot path: no allocation. */
export function fitsIn(need: UnitVector, have: UnitVector): boolean {
  if (need.cpu > have.cpu || need.gpu > have.gpu || need.mem > have.mem) return false;
  if (need.custom.size === 0) return true;
  for (const [name, units] of need.custom) {
    if (units > (have.custom.get(name) ?? 0)) return false;
  }
  return true;
}

export function vectorsEqual(a: UnitVector, b: UnitVector): boolean {
  if (a.cpu !== b.cpu || a.gpu !== b.gpu || a.mem !== b.mem || a.custom.size !== b.custom.size) return false;
  for (const [name, units] of a.custom) if (b.custom.get(name) !== units) return false;
  return true;
}

/** The kinds `v` asks for, in a fixed order: CPU, GPU, memory_mb, then custom names sorted. */
export function kindsOf(v: UnitVector): string[] {
  const kinds: string[] = [];
  if (v.cpu > 0) kinds.push(CPU);
  if (v.gpu > 0) kinds.push(GPU);
  if (v.mem > 0) kinds.push(MEMORY);
  for (const name of [...v.custom.keys()].sort()) kinds.push(name);
  return kinds;
}

export function amountOf(v: UnitVector, kind: string): number {
  switch (kind) {
    case CPU:
      return v.cpu;
    case GPU:
      return v.gpu;
    case MEMORY:
      return v.mem;
    default:
      return v.custom.get(kind) ?? 0;
  }
}

/** The first kind (in `kindsOf` order) where `need` exceeds `have`. */
export function firstShortfall(need: UnitVector, have: UnitVector): string | undefined {
  return kindsOf(need).find((kind) => amountOf(need, kind) > amountOf(have, kind));
}

/** `target += v`, each kind capped at `cap` when given (a double release must not mint resources). */
export function addInto(target: UnitVector, v: UnitVector, cap?: UnitVector): void {
  target.cpu += v.cpu;
  target.gpu += v.gpu;
  target.mem += v.mem;
  for (const [name, units] of v.custom) target.custom.set(name, (target.custom.get(name) ?? 0) + units);
  if (cap === undefined) return;
  target.cpu = Math.min(target.cpu, cap.cpu);
  target.gpu = Math.min(target.gpu, cap.gpu);
  target.mem = Math.min(target.mem, cap.mem);
  for (const name of v.custom.keys()) {
    target.custom.set(name, Math.min(target.custom.get(name) ?? 0, cap.custom.get(name) ?? 0));
  }
}

/** `target -= v`; may go negative, which records an over-commit rather than hiding it. */
export function subtractFrom(target: UnitVector, v: UnitVector): void {
  target.cpu -= v.cpu;
  target.gpu -= v.gpu;
  target.mem -= v.mem;
  for (const [name, units] of v.custom) target.custom.set(name, (target.custom.get(name) ?? 0) - units);
}

export function sumVectors(vs: readonly UnitVector[]): UnitVector {
  const sum = zeroVector();
  for (const v of vs) addInto(sum, v);
  return sum;
}

/** `4 GPU`, `0.5 CPU`, `2048 MB of memory`, `1 of custom resource "x"`. */
export function formatAmount(kind: string, units: number): string {
  const n = fromUnits(units);
  if (kind === CPU || kind === GPU) return `${n} ${kind}`;
  if (kind === MEMORY) return `${n} MB of memory`;
  return `${n} of custom resource "${kind}"`;
}

export function describeVector(v: UnitVector): string {
  const parts = kindsOf(v).map((kind) => formatAmount(kind, amountOf(v, kind)));
  return parts.length === 0 ? 'no resources' : parts.join(', ');
}

/** Amounts keyed the way `ResourceTotals` names them. */
export function toKeyedRecord(v: UnitVector): Record<string, number> {
  const out: Record<string, number> = {
    [CPU]: fromUnits(v.cpu),
    [GPU]: fromUnits(v.gpu),
    [MEMORY]: fromUnits(v.mem),
  };
  for (const [name, units] of v.custom) out[name] = fromUnits(units);
  return out;
}
