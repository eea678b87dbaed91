/** Options of a node agent (`clawray worker start`), validated once with their defaults. */
import { cpus, hostname, totalmem } from 'node:os';
import { z } from 'zod';

export const workerOptionsSchema = z
  .object({
    /** host:port of the head. */
    headAddress: z.string().min(1),
    token: z.string().min(1),
    /** Address the node agent and its actors bind. Default 127.0.0.1. */
    bindHost: z.string().default('127.0.0.1'),
    /** Address others use to reach this node. Default: bindHost. */
    advertiseHost: z.string().optional(),
    /** NodeService port. Default 0 (any free port). */
    port: z.number().int().min(0).max(65535).default(0),
    /** CPUs offered to actors. Default: the machine's cores. */
    cpus: z.number().nonnegative().optional(),
    /** Memory offered to actors. Default: 70% of the machine's memory, as Ray does. */
    memoryMb: z.number().nonnegative().optional(),
    /** Declares N GPUs numbered 0..N-1 (machines and tests without nvidia-smi). */
    gpus: z.number().int().nonnegative().optional(),
    /** Declares exactly these GPU ids. */
    gpuIds: z.array(z.number().int().nonnegative()).optional(),
    /** Custom resources, e.g. { "accelerator_type:H200": 1 }. */
    resources: z.record(z.string(), z.number().nonnegative()).default({}),
    labels: z.record(z.string(), z.string()).default({}),
    /** Pre-started actor hosts kept waiting. Default 2. */
    poolSize: z.number().int().min(0).default(2),
    /** Serve /metrics on this port (0: any free port); omit to not serve. */
    metricsPort: z.number().int().min(0).max(65535).optional(),
    /** How long a graceful actor stop may take before it is killed. Default 5000 ms. */
    stopGraceMs: z.number().nonnegative().default(5000),
    hostname: z.string().default(hostname()),
  })
  .strict()
  .refine((o) => o.gpus === undefined || o.gpuIds === undefined, {
    message: 'give either gpus or gpuIds, not both',
    path: ['gpus'],
  });

export type WorkerOptions = z.input<typeof workerOptionsSchema>;
export type ParsedWorkerOptions = z.output<typeof workerOptionsSchema>;

export const defaultCpus = (): number => cpus().length;
export const defaultMemoryMb = (): number => Math.floor((totalmem() / 1024 / 1024) * 0.7);
