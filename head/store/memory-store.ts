/**
 * The embedded store: one process, nothing survives it. Values are kept as JSON text, not as
 * objects, so callers see the same copies and the same failures as with Redis.
 */
import { InternalError } from '../../common/errors.js';
import { TABLES, validateCluster } from '../../common/redis-keys.js';
import { checkKey, checkTable, decode, encode, encodeOps } from './codec.js';
import type { ClusterStore, StoreOp, StoreOptions, TableName } from './types.js';

export class MemoryStore implements ClusterStore {
  readonly kind = 'memory' as const;
  readonly cluster: string;
  private readonly tables = new Map<TableName, Map<string, string>>(TABLES.map((t) => [t, new Map()]));
  private state: 'new' | 'open' | 'closed' = 'new';

  constructor(options: StoreOptions = {}) {
    this.cluster = validateCluster(options.cluster);
  }

  async open(): Promise<void> {
    this.state = 'open';
  }

  async get<T>(table: TableName, id: string): Promise<T | undefined> {
    checkKey(table, id);
    const json = this.rows(table).get(id);
    return json === undefined ? undefined : decode<T>(table, id, json);
  }

  async put(table: TableName, id: string, value: unknown): Promise<void> {
    checkKey(table, id);
    this.rows(table).set(id, encode(table, id, value));
  }

  async delete(table: TableName, id: string): Promise<boolean> {
    checkKey(table, id);
    return this.rows(table).delete(id);
  }

  async list<T>(table: TableName): Promise<T[]> {
    checkTable(table);
    return [...this.rows(table)].map(([id, json]) => decode<T>(table, id, json));
  }

  async apply(ops: StoreOp[]): Promise<void> {
    this.assertOpen();
    const encoded = encodeOps(ops);
    for (const op of encoded) {
      const rows = this.rows(op.table);
      if (op.op === 'put') rows.set(op.id, op.json);
      else rows.delete(op.id);
    }
  }

  async close(): Promise<void> {
    if (this.state === 'open') this.state = 'closed';
  }

  private rows(table: TableName): Map<string, string> {
    this.assertOpen();
    return this.tables.get(table)!;
  }

  private assertOpen(): void {
    if (this.state !== 'open') {
      throw new InternalError(`memory store used while ${this.state === 'new' ? 'not yet open' : 'closed'}`);
    }
  }
}
