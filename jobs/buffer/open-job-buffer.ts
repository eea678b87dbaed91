/**
 * The one place that picks a job's buffer backend: Redis Streams whenever the cluster keeps its
 * store on Redis (the streams then outlive the driver: a restarted driver resumes from them),
 * memory otherwise (the embedded cluster, where nothing outlives the process anyway).
 */
import type { RedisOptions } from 'ioredis';
import { ConfigError } from '../../common/errors.js';
import { validateCluster } from '../../common/redis-keys.js';
import { MemoryTrajectoryBuffer } from './memory-buffer.js';
import { RedisTrajectoryBuffer } from './redis-buffer.js';
import type { BufferOptions, TrajectoryBuffer } from './types.js';

export interface JobBufferOptions extends Omit<BufferOptions, 'cluster' | 'name'> {
  /** `redis://` or `rediss://` URL of the cluster's Redis; absent: an in-memory buffer. */
  redisUrl?: string;
  /** The cluster name the head uses (keys live under `clawray:{cluster}:`). */
  cluster: string;
  /** The buffer name, usually `jobStreamName(submissionId, stage)` from common/redis-keys.ts. */
  name: string;
  /** Extra ioredis options (Redis only). */
  redis?: RedisOptions;
}

export function openJobBuffer(options: JobBufferOptions): TrajectoryBuffer {
  const { redisUrl, redis, ...buffer } = options;
  validateCluster(buffer.cluster);
  if (redisUrl === undefined || redisUrl === '') {
    if (redis !== undefined) {
      throw new ConfigError('buffer option redis (ioredis options) needs redisUrl', {
        fields: { field: 'redis' },
      });
    }
    return new MemoryTrajectoryBuffer(buffer);
  }
  if (!/^rediss?:\/\//.test(redisUrl)) {
    throw new ConfigError(
      `buffer redisUrl must start with redis:// or rediss://, got ${redactUrl(redisUrl)}`,
      {
        fields: { field: 'redisUrl' },
      },
    );
  }
  return new RedisTrajectoryBuffer(redisUrl, { ...buffer, redis });
}

/** The URL without its password, for error messages. */
function redactUrl(url: string): string {
  return JSON.stringify(url.replace(/([^/:@\s]*):[^/@\s]*@/g, '$1:***@'));
}
