/**
 * What a node (or a placement-group bundle) holds and has left, in units, with each GPU
 * device tracked on its own. A ledger never decides where things go; it only answers "does
 * this fit" and records takes and returns.
 */
import type { GpuShare } from '../../common/resources.js';
import {
  canEverFit,
  chooseGpus,
  debitGpus,
  emptyClone,
  fractionDevice,
  freeShares,
  type GpuPool,
  hasWholeFree,
  newGpuPool,
  returnGpus,
  takeGpus,
} from './gpu-allocator.js';
import type { NodeCapacity, NodeView } from './types.js';
import {
  addInto,
  cloneVector,
  fitsIn,
  subtractFrom,
  toClampedRequest,
  toResourceRequest,
  toUnitVector,
  UNIT,
  type UnitVector,
} from './units.js';

export class ResourceLedger {
  readonly avail: UnitVector;

  constructor(
    readonly total: UnitVector,
    readonly gpus: GpuPool,
  ) {
    this.avail = cloneVector(total);
  }

  /** Could this ever hold `need` if everything else left? */
  canEverHold(need: UnitVector): boolean {
    return fitsIn(need, this.total) && canEverFit(this.gpus, need.gpu);
  }

  /** Whether `need` fits now; like `pick` but allocation-free, for scans over many nodes. */
  fitsNow(need: UnitVector): boolean {
    if (!fitsIn(need, this.avail)) return false;
    if (need.gpu === 0) return true;
    if (need.gpu < UNIT) return fractionDevice(this.gpus, need.gpu) >= 0;
    return hasWholeFree(this.gpus, need.gpu / UNIT);
  }

  /** Pool positions for `need` if it fits now, else undefined. Takes nothing. */
  pick(need: UnitVector): readonly number[] | undefined {
    if (!fitsIn(need, this.avail)) return undefined;
    return chooseGpus(this.gpus, need.gpu);
  }

  take(need: UnitVector, picks: readonly number[]): GpuShare[] {
    subtractFrom(this.avail, need);
    return takeGpus(this.gpus, picks, need.gpu);
  }

  tryTake(need: UnitVector): GpuShare[] | undefined {
    const picks = this.pick(need);
    return picks === undefined ? undefined : this.take(need, picks);
  }

  /** Returns an allocation; capped at the totals so a repeated release is harmless. */
  give(need: UnitVector, shares: readonly GpuShare[]): void {
    addInto(this.avail, need, this.total);
    returnGpus(this.gpus, shares);
  }

  /** Re-applies a known allocation without checks; availability may go negative (over-commit). */
  debit(need: UnitVector, shares: readonly GpuShare[]): void {
    subtractFrom(this.avail, need);
    debitGpus(this.gpus, shares);
  }

  /**
   * The highest fraction used, after adding `need`, over the kinds `need` asks for; for an
   * empty `need`, the node's current CPU/GPU/memory utilization. This is the load measure of
   * Ray's hybrid policy, kept to the kinds that matter for this request.
   */
  utilizationAfter(need: UnitVector): number {
    const { total, avail } = this;
    let u = 0;
    if (need.cpu === 0 && need.gpu === 0 && need.mem === 0 && need.custom.size === 0) {
      if (total.cpu > 0) u = Math.max(u, (total.cpu - avail.cpu) / total.cpu);
      if (total.gpu > 0) u = Math.max(u, (total.gpu - avail.gpu) / total.gpu);
      if (total.mem > 0) u = Math.max(u, (total.mem - avail.mem) / total.mem);
      return u;
    }
    if (need.cpu > 0) u = Math.max(u, (total.cpu - avail.cpu + need.cpu) / total.cpu);
    if (need.gpu > 0) u = Math.max(u, (total.gpu - avail.gpu + need.gpu) / total.gpu);
    if (need.mem > 0) u = Math.max(u, (total.mem - avail.mem + need.mem) / total.mem);
    if (need.custom.size === 0) return u;
    for (const [name, units] of need.custom) {
      const t = total.custom.get(name) ?? 0;
      if (t > 0) u = Math.max(u, (t - (avail.custom.get(name) ?? 0) + units) / t);
    }
    return u;
  }
}

/** A node's ledger plus who it is. `order` is its registration order, the final tie-breaker. */
export class NodeResources extends ResourceLedger {
  readonly hasGpus: boolean;

  constructor(
    readonly capacity: NodeCapacity,
    readonly order: number,
    total: UnitVector,
    gpus: GpuPool,
  ) {
    super(total, gpus);
    this.hasGpus = gpus.ids.length > 0;
  }

  /**
   * The GPU total is the device count: a device list is the truth a worker reports. A node that
   * gives only `numGpus` gets ids 0..n-1.
   */
  static fromCapacity(capacity: NodeCapacity, order: number): NodeResources {
    const what = `node ${capacity.nodeId}`;
    const total = toUnitVector(capacity.resources, what);
    let ids = [...new Set(capacity.gpuIds ?? [])].sort((a, b) => a - b);
    if (ids.length === 0 && total.gpu >= UNIT)
      ids = Array.from({ length: Math.floor(total.gpu / UNIT) }, (_, i) => i);
    total.gpu = ids.length * UNIT;
    return new NodeResources(capacity, order, total, newGpuPool(ids));
  }

  get nodeId(): string {
    return this.capacity.nodeId;
  }

  get id(): string {
    return this.capacity.nodeId;
  }

  get address(): string {
    return this.capacity.address;
  }

  get labels(): Record<string, string> {
    return this.capacity.labels ?? {};
  }

  /** `node_x (127.0.0.1:7001)` for messages. */
  get title(): string {
    return `${this.nodeId} (${this.address})`;
  }

  /** The same node with nothing allocated: for asking "could this ever fit". */
  emptyClone(): NodeResources {
    return new NodeResources(this.capacity, this.order, this.total, emptyClone(this.gpus));
  }

  /** The same node with what is allocated now: for asking "would this fit now" without taking it. */
  currentClone(): NodeResources {
    const gpus = { ids: [...this.gpus.ids], capacity: [...this.gpus.capacity], free: [...this.gpus.free] };
    const clone = new NodeResources(this.capacity, this.order, this.total, gpus);
    // A ledger starts full; take off what is in use here.
    const used = cloneVector(this.total);
    subtractFrom(used, this.avail);
    subtractFrom(clone.avail, used);
    return clone;
  }

  view(): NodeView {
    return {
      nodeId: this.nodeId,
      total: toResourceRequest(this.total),
      available: toClampedRequest(this.avail),
      gpusAvailable: freeShares(this.gpus),
    };
  }
}
