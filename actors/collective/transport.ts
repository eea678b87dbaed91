/**
 * How two neighbouring ranks of a ring reach each other.
 *
 *   tcp   loopback or network TCP (node:net), between any two hosts.
 *   unix  a Unix domain socket (Linux: the abstract namespace, so no file exists to leak when a
 *         rank dies; elsewhere a socket file in the temp directory, removed on close). Only
 *         between ranks on the same host.
 *   shm   every rank on one host: the all-reduce goes through shared memory (shared-memory.ts,
 *         shm-allreduce.ts); the links are Unix sockets and carry only its barriers and the
 *         broadcasts.
 *   auto  (the default) 'shm' when every rank is on this host and the region can be mapped;
 *         otherwise each link is a Unix socket when both ranks are on the same host and in
 *         the same network namespace, TCP otherwise; a Unix dial that fails falls back to TCP.
 *
 * Why the links are still sockets under 'shm': a dead peer is a closed connection, which the
 * kernel reports at once; a rank that died inside shared memory would just stop writing.
 * (Without mapping, through pwrite/pread on a tmpfs file, shared memory had been slower than a
 * Unix socket here: 2.7–4.3 against 5.8–7.2 GB/s one way, 256 MiB on the 2-core dev box.)
 *
 * An address is what `CollectiveGroup.create` returns: `host:port` for a TCP-only rank, or
 * `host:port;unix=NAME;host=HOSTID` for one that also listens on a Unix socket.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../common/errors.js';

export type TransportOption = 'auto' | 'tcp' | 'unix' | 'shm';
export type LinkTransport = 'tcp' | 'unix';
export const TRANSPORT_OPTIONS: readonly TransportOption[] = ['auto', 'tcp', 'unix', 'shm'];

export function validateTransport(value: unknown, field = 'transport'): TransportOption {
  if (value === undefined) return 'auto';
  if (typeof value === 'string' && (TRANSPORT_OPTIONS as readonly string[]).includes(value))
    return value as TransportOption;
  throw new ConfigError(
    `collective ${field} must be one of ${TRANSPORT_OPTIONS.join(', ')}, got ${String(value)}`,
  );
}

let cachedHostId: string | undefined;

/**
 * Same value on two processes ⇔ they can reach each other's abstract Unix sockets: the hostname,
 * the kernel's boot id (two containers may share a hostname) and the network namespace
 * (abstract sockets are per namespace).
 */
export function hostId(): string {
  if (cachedHostId === undefined) {
    const read = (f: () => string): string => {
      try {
        return f().trim();
      } catch {
        return '';
      }
    };
    const boot = read(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8'));
    const netns = read(() => readlinkSync('/proc/self/ns/net'));
    cachedHostId = [hostname(), boot, netns].join('|');
  }
  return cachedHostId;
}

/** A fresh Unix socket path for one rank's server. */
export function unixSocketPath(rank: number): string {
  const suffix = `clawray-collective-${process.pid}-${rank}-${randomBytes(6).toString('hex')}`;
  return process.platform === 'linux' ? `\0${suffix}` : join(tmpdir(), `${suffix}.sock`);
}

export interface PeerAddress {
  host: string;
  port: number;
  /** The peer's Unix socket path, when it listens on one. */
  unix?: string;
  /** The peer's host id (see `hostId`), when it listens on a Unix socket. */
  hostId?: string;
}

export function formatHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

export function formatAddress(peer: PeerAddress): string {
  const base = formatHostPort(peer.host, peer.port);
  if (peer.unix === undefined) return base;
  // The abstract-namespace NUL is written as '@' (as `ss -x` shows it).
  const unix = peer.unix.startsWith('\0') ? `@${peer.unix.slice(1)}` : peer.unix;
  return `${base};unix=${encodeURIComponent(unix)};host=${encodeURIComponent(peer.hostId ?? '')}`;
}

export function parseAddress(address: string): PeerAddress {
  const [hostPort, ...params] = address.split(';');
  const match = /^\[?([^\]]*?)\]?:(\d+)$/.exec(hostPort ?? '');
  if (!match) throw new ConfigError(`bad collective address '${address}' (want host:port)`);
  const peer: PeerAddress = { host: match[1]!, port: Number(match[2]) };
  for (const param of params) {
    const eq = param.indexOf('=');
    const key = param.slice(0, eq);
    const value = decodeURIComponent(param.slice(eq + 1));
    if (key === 'unix') peer.unix = value.startsWith('@') ? `\0${value.slice(1)}` : value;
    else if (key === 'host') peer.hostId = value;
  }
  return peer;
}

/** Which transport the link to `peer` should try first under `option`. */
export function chooseLink(option: TransportOption, peer: PeerAddress): LinkTransport {
  if (option === 'tcp' || peer.unix === undefined) return 'tcp';
  if (option === 'unix') return 'unix';
  return peer.hostId === hostId() ? 'unix' : 'tcp';
}
