/**
 * Every Redis key clawray writes is built here, so a grep for a key name lands in one file and
 * two clusters sharing one Redis can never collide.
 */
import { ConfigError, InternalError } from '../../common/errors.js';
import type { TableName } from './types.js';

export const DEFAULT_CLUSTER = 'default';

export const TABLES: readonly TableName[] = ['nodes', 'actors', 'placementGroups', 'jobs', 'packages'];

// Restricted so a name can never smuggle in a `:` or a glob character (`*`, `?`, `[`) that
// would let one cluster's key pattern match another cluster's keys.
const CLUSTER_NAME = /^[A-Za-z0-9._-]+$/;

/** Returns the cluster name (the default when absent), or throws ConfigError if it is malformed. */
export function validateCluster(cluster: string | undefined): string {
  const name = cluster ?? DEFAULT_CLUSTER;
  if (!CLUSTER_NAME.test(name)) {
    throw new ConfigError(
      `invalid cluster name ${JSON.stringify(name)}: use letters, digits, '-', '_' and '.' only`,
      { fields: { cluster: name } },
    );
  }
  return name;
}

export function isTableName(table: unknown): table is TableName {
  return typeof table === 'string' && (TABLES as readonly string[]).includes(table);
}

/** `clawray:{cluster}:`; every key of the cluster starts with it. */
export function clusterPrefix(cluster: string): string {
  return `clawray:${validateCluster(cluster)}:`;
}

/** The Redis hash holding one table: field = record id, value = the record as JSON text. */
export function tableKey(cluster: string, table: TableName): string {
  if (!isTableName(table)) throw new InternalError(`unknown store table ${JSON.stringify(table)}`);
  return `${clusterPrefix(cluster)}table:${table}`;
}
