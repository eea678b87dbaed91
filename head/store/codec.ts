/**
 * Checks and JSON encoding shared by both backends, so the memory store rejects exactly what
 * Redis would and a test passing against one passes against the other.
 */
import { InternalError } from '../../common/errors.js';
import { isTableName } from '../../common/redis-keys.js';
import type { StoreOp, TableName } from './types.js';

export type EncodedOp =
  | { op: 'put'; table: TableName; id: string; json: string }
  | { op: 'delete'; table: TableName; id: string };

export function checkTable(table: unknown): asserts table is TableName {
  if (!isTableName(table)) throw new InternalError(`unknown store table ${JSON.stringify(table)}`);
}

export function checkKey(table: unknown, id: unknown): asserts table is TableName {
  checkTable(table);
  if (typeof id !== 'string' || id === '') {
    throw new InternalError(`store record id must be a non-empty string, got ${JSON.stringify(id)}`, {
      fields: { table },
    });
  }
}

export function encode(table: TableName, id: string, value: unknown): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (err) {
    throw new InternalError(`cannot store ${table}/${id} as JSON: ${(err as Error).message}`, {
      cause: err,
      fields: { table, id },
    });
  }
  // JSON.stringify yields undefined for undefined, functions and symbols: nothing to store.
  if (json === undefined) {
    throw new InternalError(`cannot store ${table}/${id}: ${typeof value} is not a JSON value`, {
      fields: { table, id },
    });
  }
  return json;
}

export function decode<T>(table: TableName, id: string, json: string): T {
  try {
    return JSON.parse(json) as T;
  } catch (err) {
    throw new InternalError(`stored record ${table}/${id} is not valid JSON`, {
      cause: err,
      fields: { table, id },
    });
  }
}

/** Checks and encodes every op before any is applied, so a bad op leaves the store untouched. */
export function encodeOps(ops: readonly StoreOp[]): EncodedOp[] {
  return ops.map((op) => {
    checkKey(op.table, op.id);
    if (op.op === 'put')
      return { op: 'put', table: op.table, id: op.id, json: encode(op.table, op.id, op.value) };
    if (op.op === 'delete') return { op: 'delete', table: op.table, id: op.id };
    throw new InternalError(`unknown store op ${JSON.stringify((op as { op: unknown }).op)}`);
  });
}
