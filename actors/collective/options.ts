/**
 * What a collective group is created with, and the checks `CollectiveGroup.create` runs on it
 * before it listens on anything.
 */
import { ConfigError } from '../../common/errors.js';
import type { SharedMemory } from './shared-memory.js';
import { type TransportOption, validateTransport } from './transport.js';

export interface CollectiveGroupOptions {
  rank: number;
  worldSize: number;
  groupName: string;
  /** The cluster token; peers must present the same one. */
  token: string;
  /** Host to bind the data server on. Default CLAWRAY_BIND_HOST, else 127.0.0.1. */
  bindHost?: string;
  /** Host put in the returned address. Default CLAWRAY_ADVERTISE_HOST, else the bind host
   * (the machine's hostname when binding a wildcard address). */
  advertiseHost?: string;
  /** An operation (or connect) fails when nothing arrives for this long. Default 60 000 ms. */
  timeoutMs?: number;
  /** Pipelining granularity. Default 1 MiB. */
  subChunkBytes?: number;
  /**
   * How ranks reach each other: 'auto' (default; shared memory when every rank is on this host
   * and it can be mapped, else a Unix socket to a neighbour on the same host and TCP otherwise),
   * 'tcp' (always TCP), 'unix' (always a Unix socket: every rank on one host), 'shm' (shared
   * memory, or `connect` fails saying why).
   */
  transport?: TransportOption;
  /**
   * The shared-memory all-reduce's window: it moves the buffer through this many bytes at a
   * time, and the region it maps is 2·(worldSize + 1) windows. Default 16 MiB (a region of
   * 160 MiB for 4 ranks): each window costs a barrier, N − 1 hops around the ring.
   */
  shmWindowBytes?: number;
  /** Where shared regions come from (default: the host's, through koffi); tests hand a failing one. */
  sharedMemory?: SharedMemory | string;
}

export const DEFAULT_SHM_WINDOW_BYTES = 16 << 20;

/** Refuses options `create` cannot honour; returns the transport option. */
export function validateOptions(options: CollectiveGroupOptions): TransportOption {
  const { rank, worldSize, groupName, token } = options;
  if (!Number.isInteger(worldSize) || worldSize < 1)
    throw new ConfigError(`collective worldSize must be a positive integer, got ${worldSize}`);
  if (!Number.isInteger(rank) || rank < 0 || rank >= worldSize)
    throw new ConfigError(`collective rank must be an integer in [0, ${worldSize}), got ${rank}`);
  if (!groupName) throw new ConfigError('collective groupName must not be empty');
  if (!token) throw new ConfigError('collective group needs the cluster token');
  const transport = validateTransport(options.transport);
  if (
    options.subChunkBytes !== undefined &&
    (!Number.isInteger(options.subChunkBytes) || options.subChunkBytes < 4)
  )
    throw new ConfigError(`collective subChunkBytes must be an integer ≥ 4, got ${options.subChunkBytes}`);
  const window = options.shmWindowBytes;
  if (window !== undefined && !(Number.isInteger(window) && window >= 16 && window % 4 === 0))
    throw new ConfigError(`collective shmWindowBytes must be a multiple of 4 ≥ 16, got ${window}`);
  if ((transport === 'tcp' || transport === 'unix') && (window !== undefined || options.sharedMemory))
    throw new ConfigError(
      `collective shmWindowBytes applies to transport 'auto' or 'shm'; transport '${transport}' never uses shared memory`,
    );
  return transport;
}
