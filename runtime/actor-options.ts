/**
 * Actor options as users write them, validated once at the SDK's edge. Defaults follow Ray:
 * no restarts, at-most-once calls, concurrency 1 for sync classes and 1000 when the class has
 * async methods, no pending-call limit.
 */
import { z } from 'zod';
import { ConfigError } from '../common/errors.js';
import { resourceRequestSchema } from '../common/resources.js';

const intAtLeast = (min: number) => z.number().int().min(min);

export const LIFETIMES = ['non_detached', 'detached'] as const;
export type Lifetime = (typeof LIFETIMES)[number];

export const actorOptionsSchema = z
  .object({
    numCpus: resourceRequestSchema.shape.numCpus,
    numGpus: resourceRequestSchema.shape.numGpus,
    memoryMb: resourceRequestSchema.shape.memoryMb,
    resources: resourceRequestSchema.shape.resources,
    labelSelector: z.record(z.string(), z.string()).default({}),
    name: z.string().min(1).max(256).optional(),
    namespace: z.string().min(1).max(256).optional(),
    getIfExists: z.boolean().default(false),
    maxRestarts: intAtLeast(-1).default(0),
    maxTaskRetries: intAtLeast(-1).default(0),
    maxConcurrency: intAtLeast(1).optional(),
    maxPendingCalls: intAtLeast(-1).default(-1),
    placementGroup: z
      .union([
        z.string(),
        z.custom<{ id: string }>((v) => typeof (v as { id?: unknown } | null)?.id === 'string', {
          message: 'must be a placement group or its id',
        }),
      ])
      .optional(),
    bundleIndex: intAtLeast(-1).default(-1),
    env: z.record(z.string(), z.string()).default({}),
    scheduleTimeoutMs: z.number().nonnegative().default(0),
    /**
     * Ray's `lifetime`: `non_detached` (the default) dies with its owner — the connection
     * (`Cluster`) or the actor that created it; `detached` lives until it is killed.
     */
    lifetime: z.enum(LIFETIMES).default('non_detached'),
  })
  .strict()
  .superRefine((o, ctx) => {
    if (o.getIfExists && !o.name) {
      ctx.addIssue({ code: 'custom', path: ['getIfExists'], message: 'needs a name' });
    }
    if (o.maxTaskRetries !== 0 && o.maxRestarts === 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['maxTaskRetries'],
        message: 'needs maxRestarts other than 0: a call can only be retried on a restarted actor',
      });
    }
    if (o.bundleIndex !== -1 && !o.placementGroup) {
      ctx.addIssue({ code: 'custom', path: ['bundleIndex'], message: 'needs placementGroup' });
    }
  });

export type ActorOptions = z.input<typeof actorOptionsSchema>;
export type ParsedActorOptions = z.output<typeof actorOptionsSchema>;

/** Parses options; a mistake becomes a ConfigError naming the field, what was wrong and where. */
export function parseWith<S extends z.ZodType>(schema: S, value: unknown, where: string): z.output<S> {
  const result = schema.safeParse(value ?? {});
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const path = issue.path.length > 0 ? issue.path.join('.') : '(options)';
    return `${path}: ${issue.message}`;
  });
  throw new ConfigError(`invalid ${where}: ${problems.join('; ')}`, {
    fields: { field: result.error.issues[0]?.path.join('.') ?? '' },
  });
}
