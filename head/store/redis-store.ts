/**
 * The durable store: one Redis hash per table (see common/redis-keys.ts), records as JSON text.
 * A head that restarts on the same URL and cluster name reloads what the previous one wrote.
 */
import { Redis, ReplyError } from 'ioredis';
import {
  AuthError,
  ClawrayError,
  ConfigError,
  InternalError,
  UnavailableError,
} from '../../common/errors.js';
import { type Logger, silentLogger } from '../../common/logger.js';
import { tableKey, validateCluster } from '../../common/redis-keys.js';
import { checkKey, checkTable, decode, encode, encodeOps } from './codec.js';
import type { ClusterStore, StoreOp, StoreOptions, TableName } from './types.js';

export interface RedisStoreOptions extends StoreOptions {
  /** Where connection loss and recovery are reported. Default: silent. */
  logger?: Logger;
}

/** The URL with its password (in the user part or a `password=` query item) replaced by `***`. */
export function redactUrl(url: string): string {
  let out = url;
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    if (parsed.searchParams.has('password')) parsed.searchParams.set('password', '***');
    out = parsed.toString();
  } catch {
    // Not a URL at all: the pattern below still finds any `user:password@`.
  }
  // A mistyped scheme (`redis:/u:pw@h`) hides credentials from the URL parser, not from this.
  return out.replace(/([^/:@\s]*):[^/@\s]*@/g, '$1:***@');
}

// Redis < 6 says "invalid password"; ACL-era servers say WRONGPASS, NOAUTH or NOPERM.
const AUTH_REPLY = /^(WRONGPASS|NOAUTH|NOPERM)|invalid password/;

function isAuthReply(err: unknown): err is Error {
  return err instanceof ReplyError && AUTH_REPLY.test((err as Error).message);
}

export class RedisStore implements ClusterStore {
  readonly kind = 'redis' as const;
  readonly cluster: string;
  private readonly url: string;
  private readonly user: string;
  private readonly tls: boolean;
  private readonly connectTimeoutMs: number;
  private readonly logger: Logger;
  private client: Redis | undefined;
  private opening: Promise<void> | undefined;

  constructor(url: string, options: RedisStoreOptions = {}) {
    this.cluster = validateCluster(options.cluster);
    this.url = url;
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new ConfigError(`invalid Redis URL ${redactUrl(url)}`, { fields: { url: redactUrl(url) } });
    }
    if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
      throw new ConfigError(`Redis URL must start with redis:// or rediss://, got ${redactUrl(url)}`);
    }
    this.tls = parsed.protocol === 'rediss:';
    this.user = decodeURIComponent(parsed.username) || 'default';
    this.connectTimeoutMs = options.connectTimeoutMs ?? 5000;
    this.logger = options.logger ?? silentLogger;
  }

  /** Connects and PINGs; fails after `connectTimeoutMs` instead of queueing forever. */
  async open(): Promise<void> {
    if (this.client) return;
    this.opening ??= this.connect().finally(() => {
      this.opening = undefined;
    });
    return this.opening;
  }

  async get<T>(table: TableName, id: string): Promise<T | undefined> {
    checkKey(table, id);
    const json = await this.run('HGET', (c) => c.hget(tableKey(this.cluster, table), id));
    return json === null ? undefined : decode<T>(table, id, json);
  }

  async put(table: TableName, id: string, value: unknown): Promise<void> {
    checkKey(table, id);
    const json = encode(table, id, value);
    await this.run('HSET', (c) => c.hset(tableKey(this.cluster, table), id, json));
  }

  async delete(table: TableName, id: string): Promise<boolean> {
    checkKey(table, id);
    return (await this.run('HDEL', (c) => c.hdel(tableKey(this.cluster, table), id))) > 0;
  }

  async list<T>(table: TableName): Promise<T[]> {
    checkTable(table);
    const rows = await this.run('HGETALL', (c) => c.hgetall(tableKey(this.cluster, table)));
    return Object.entries(rows).map(([id, json]) => decode<T>(table, id, json));
  }

  async apply(ops: StoreOp[]): Promise<void> {
    const encoded = encodeOps(ops);
    await this.run('MULTI/EXEC', async (c) => {
      if (encoded.length === 0) return;
      const multi = c.multi();
      for (const op of encoded) {
        const key = tableKey(this.cluster, op.table);
        if (op.op === 'put') multi.hset(key, op.id, op.json);
        else multi.hdel(key, op.id);
      }
      const results = await multi.exec();
      const failed = results?.find(([err]) => err);
      if (failed) throw failed[0];
    });
  }

  async close(): Promise<void> {
    await this.opening?.catch(() => {});
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    if (client.status !== 'ready') return client.disconnect();
    try {
      await client.quit();
    } catch {
      client.disconnect();
    }
  }

  private async connect(): Promise<void> {
    const client = new Redis(this.url, {
      lazyConnect: true,
      connectTimeout: this.connectTimeoutMs,
      // On, so a write during a short outage waits for the reconnect instead of failing.
      enableOfflineQueue: true,
      connectionName: `clawray:${this.cluster}`,
      // ioredis only turns TLS on for a lower-case `rediss://`; URL schemes are case-insensitive.
      ...(this.tls ? { tls: {} } : {}),
    });
    let lastError: Error | undefined;
    let down = false;
    client.on('error', (err: Error) => {
      lastError = err;
      if (this.client === client && !down) {
        down = true;
        this.logger.warn({ url: redactUrl(this.url), err: err.message }, 'lost the Redis store; retrying');
      }
    });
    client.on('ready', () => {
      if (down) this.logger.info({ url: redactUrl(this.url) }, 'Redis store reconnected');
      down = false;
    });

    let timer: NodeJS.Timeout | undefined;
    let rejectAuth: (err: Error) => void = () => {};
    const onAuthError = (err: Error) => isAuthReply(err) && rejectAuth(err);
    client.on('error', onAuthError);
    try {
      await Promise.race([
        // ioredis keeps retrying refused connections by itself until the deadline below.
        new Promise<void>((resolve) => {
          client.once('ready', resolve);
          client.connect().catch(() => {});
        }).then(() => client.ping()),
        new Promise<never>((_, reject) => {
          rejectAuth = reject;
          timer = setTimeout(() => reject(lastError ?? new Error('no answer')), this.connectTimeoutMs);
        }),
      ]);
    } catch (err) {
      client.disconnect();
      throw this.openError(err);
    } finally {
      clearTimeout(timer);
      client.off('error', onAuthError);
    }
    this.client = client;
  }

  private openError(err: unknown): ClawrayError {
    const url = redactUrl(this.url);
    const reason = err instanceof Error ? err.message : String(err);
    if (isAuthReply(err)) {
      return new AuthError(
        `Redis at ${url} refused user "${this.user}": ${reason} (check the user and password in the store URL)`,
        { cause: err, fields: { url, user: this.user } },
      );
    }
    return new UnavailableError(
      `cannot reach Redis at ${url} within ${this.connectTimeoutMs} ms: ${reason}`,
      {
        cause: err,
        fields: { url },
      },
    );
  }

  private async run<T>(command: string, fn: (client: Redis) => Promise<T>): Promise<T> {
    const client = this.client;
    if (!client) throw new InternalError('Redis store used before open() or after close()');
    try {
      return await fn(client);
    } catch (err) {
      if (err instanceof ClawrayError) throw err;
      const url = redactUrl(this.url);
      const reason = err instanceof Error ? err.message : String(err);
      if (isAuthReply(err)) {
        throw new AuthError(`Redis user "${this.user}" may not run ${command} on ${url}: ${reason}`, {
          cause: err,
          fields: { url, user: this.user },
        });
      }
      if (err instanceof ReplyError) {
        throw new InternalError(`Redis ${command} failed on ${url}: ${reason}`, {
          cause: err,
          fields: { url },
        });
      }
      throw new UnavailableError(`Redis at ${url} is unavailable (${command}): ${reason}`, {
        cause: err,
        fields: { url },
      });
    }
  }
}
