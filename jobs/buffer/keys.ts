/** Every Redis key of the trajectory buffer is built here. */
import { ConfigError } from '../../common/errors.js';
import { clusterPrefix } from '../../head/store/keys.js';

export const DEFAULT_BUFFER_NAME = 'trajectories';

const NAME = /^[A-Za-z0-9._-]+$/;

export interface BufferKeys {
  /** The stream of entries (field `record` = the record as JSON text). */
  stream: string;
  /** The dead-letter stream. */
  dead: string;
  /** Hash trajectoryId → entry id (idempotent append). */
  ids: string;
  /** Set of trajectory ids already trained on. */
  trained: string;
}

export function validateBufferName(name: string | undefined): string {
  const n = name ?? DEFAULT_BUFFER_NAME;
  if (!NAME.test(n)) {
    throw new ConfigError(
      `invalid buffer name ${JSON.stringify(n)}: use letters, digits, '-', '_' and '.' only`,
      {
        fields: { name: n },
      },
    );
  }
  return n;
}

/** `clawray:{cluster}:buffer:{name}:…` */
export function bufferKeys(cluster: string | undefined, name: string | undefined): BufferKeys {
  const base = `${clusterPrefix(cluster ?? 'default')}buffer:${validateBufferName(name)}:`;
  return { stream: `${base}stream`, dead: `${base}dead`, ids: `${base}ids`, trained: `${base}trained` };
}
