import type {} from 'vitest';
import type { TestProject } from 'vitest/node';
import { type RedisServer, startRedisServer } from '../../bench/redis-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
  }
}

let redis: RedisServer | undefined;

/** One redis-server for the whole run; tests keep apart by using their own cluster names. */
export async function setup(project: TestProject): Promise<void> {
  redis = await startRedisServer();
  project.provide('redisUrl', redis.url);
}

export async function teardown(): Promise<void> {
  await redis?.stop();
}
