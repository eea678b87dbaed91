/**
 * The cluster store: where the head writes every change before acknowledging it, and what a
 * restarted head reloads. Records are JSON values; both backends store them as JSON text so
 * they behave the same (a Buffer does not survive, encode bytes as base64 first).
 */
import type { TableName } from '../../common/redis-keys.js';

export type { TableName };

export type StoreOp =
  | { op: 'put'; table: TableName; id: string; value: unknown }
  | { op: 'delete'; table: TableName; id: string };

export interface ClusterStore {
  /** `memory` or `redis`, for status output. */
  readonly kind: 'memory' | 'redis';
  /** Connects (and checks the connection). Idempotent. */
  open(): Promise<void>;
  get<T>(table: TableName, id: string): Promise<T | undefined>;
  put(table: TableName, id: string, value: unknown): Promise<void>;
  /** Resolves true when something was deleted. */
  delete(table: TableName, id: string): Promise<boolean>;
  list<T>(table: TableName): Promise<T[]>;
  /** Applies all ops atomically, in order. */
  apply(ops: StoreOp[]): Promise<void>;
  close(): Promise<void>;
}

export interface StoreOptions {
  /**
   * Separates clusters sharing one Redis: every key starts with `clawray:{cluster}:`.
   * Default `default`.
   */
  cluster?: string;
  /** Redis connection timeout. Default 5000 ms. */
  connectTimeoutMs?: number;
}
