import { randomBytes } from 'node:crypto';

/** A short random id with a readable prefix: `actor_3f9a…`, `node_…`, `pg_…`. */
export function newId(prefix: 'actor' | 'node' | 'pg' | 'job' | 'caller'): string {
  return `${prefix}_${randomBytes(8).toString('hex')}`;
}
