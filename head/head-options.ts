/** Options of the head (`clawray head start`), validated once with their defaults. */
import { z } from 'zod';
import { HEAD_RECONNECT_MAX_MS } from '../common/backoff.js';

export const DEFAULT_HEAD_PORT = 6390;

export const headOptionsSchema = z
  .object({
    /** Address the head binds. Default 127.0.0.1. */
    host: z.string().default('127.0.0.1'),
    /** gRPC port. Default 6390; 0 picks a free port. */
    port: z.number().int().min(0).max(65535).default(DEFAULT_HEAD_PORT),
    /** `memory` (default) or a `redis://` / `rediss://` URL. */
    store: z.string().default('memory'),
    /** Separates clusters that share one Redis. Default `default`. */
    clusterName: z.string().default('default'),
    /** Serve /metrics on this port (0: any free port); omit to not serve. */
    metricsPort: z.number().int().min(0).max(65535).optional(),
    /** The cluster token; default CLAWRAY_TOKEN, then the token file, then a new one. */
    token: z.string().min(1).optional(),
    /** How often workers heartbeat. Default 500 ms. */
    heartbeatIntervalMs: z.number().int().positive().default(500),
    /** A node that has not heartbeated for this long is dead. Default 3000 ms. */
    nodeTimeoutMs: z.number().int().positive().default(3000),
    /**
     * After a restart on a durable store, a reloaded node that has not re-registered yet gets
     * this long on top of nodeTimeoutMs (counted from when the head listens) before it is
     * declared dead: the workers' longest reconnect backoff. Default 1000 ms.
     */
    reloadGraceMs: z.number().int().nonnegative().default(HEAD_RECONNECT_MAX_MS),
    /** Write the token file and head.json for local clients. Default true. */
    writeLocalFiles: z.boolean().default(true),
  })
  .strict()
  .refine((o) => o.nodeTimeoutMs >= o.heartbeatIntervalMs * 2, {
    message: 'must be at least twice heartbeatIntervalMs, or every hiccup kills a node',
    path: ['nodeTimeoutMs'],
  });

export type HeadOptions = z.input<typeof headOptionsSchema>;
export type ParsedHeadOptions = z.output<typeof headOptionsSchema>;
