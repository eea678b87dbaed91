/**
 * Logical resources as users write them (`numCpus`, `numGpus`, `memoryMb`, custom
 * `resources`) and the one validation every edge uses. Precision is 0.0001, as in Ray.
 */
import { z } from 'zod';

export interface ResourceRequest {
  numCpus: number;
  numGpus: number;
  memoryMb: number;
  /** Custom resources by name, e.g. `{ "accelerator_type:H200": 0.001 }`. */
  custom: Record<string, number>;
}

export const RESOURCE_PRECISION = 1e-4;

const amount = z
  .number()
  .finite()
  .nonnegative()
  .refine((v) => Math.abs(Math.round(v / RESOURCE_PRECISION) * RESOURCE_PRECISION - v) < 1e-9, {
    message: 'has more precision than 0.0001',
  });

export const resourceRequestSchema = z
  .object({
    numCpus: amount.default(0),
    numGpus: amount
      .refine((v) => v <= 1 || Number.isInteger(v), {
        message: 'must be a fraction of one GPU (≤ 1) or a whole number of GPUs',
      })
      .default(0),
    memoryMb: amount.default(0),
    resources: z
      .record(z.string(), amount)
      .refine((r) => !['CPU', 'GPU', 'memory'].some((k) => k in r), {
        message: 'CPU, GPU and memory are set with numCpus, numGpus and memoryMb, not as custom resources',
      })
      .default({}),
  })
  .strict();

export type ResourceInput = z.input<typeof resourceRequestSchema>;

export function toResourceRequest(parsed: z.output<typeof resourceRequestSchema>): ResourceRequest {
  return {
    numCpus: parsed.numCpus,
    numGpus: parsed.numGpus,
    memoryMb: parsed.memoryMb,
    custom: parsed.resources,
  };
}

export const emptyResources = (): ResourceRequest => ({ numCpus: 0, numGpus: 0, memoryMb: 0, custom: {} });

/** A physical GPU share handed to an actor or a placement-group bundle. */
export interface GpuShare {
  gpuId: number;
  fraction: number;
}

/**
 * Ray-style label selector: `{ zone: 'us-east' }`, `{ zone: '!us-east' }`,
 * `{ zone: 'in(a,b)' }`, `{ zone: '!in(a,b)' }`.
 */
export type LabelSelector = Record<string, string>;

export type PlacementStrategy = 'PACK' | 'SPREAD' | 'STRICT_PACK' | 'STRICT_SPREAD';
export const PLACEMENT_STRATEGIES: readonly PlacementStrategy[] = [
  'PACK',
  'SPREAD',
  'STRICT_PACK',
  'STRICT_SPREAD',
];
