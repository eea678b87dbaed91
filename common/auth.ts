/**
 * The cluster token. Every RPC and HTTP endpoint requires it. It comes from a flag, from
 * `CLAWRAY_TOKEN`, or from the token file a head writes (mode 0600) for local clients.
 */

import { randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import { AuthError } from './errors.js';
import { tokenFilePath } from './home.js';

export interface ResolvedToken {
  token: string;
  /** Where it came from, for messages: `--token`, `CLAWRAY_TOKEN` or the file path. */
  source: string;
}

/** The token a client uses: the flag, else `CLAWRAY_TOKEN`, else the local token file. */
export function resolveClientToken(flag?: string): ResolvedToken | undefined {
  if (flag) return { token: flag, source: '--token' };
  if (process.env.CLAWRAY_TOKEN) return { token: process.env.CLAWRAY_TOKEN, source: 'CLAWRAY_TOKEN' };
  const file = tokenFilePath();
  if (existsSync(file)) {
    const token = readFileSync(file, 'utf8').trim();
    if (token) return { token, source: file };
  }
  return undefined;
}

export function requireClientToken(flag?: string): ResolvedToken {
  const resolved = resolveClientToken(flag);
  if (!resolved) {
    throw new AuthError(
      `no cluster token: pass --token, set CLAWRAY_TOKEN, or run where the head wrote ${tokenFilePath()}`,
    );
  }
  return resolved;
}

/**
 * The token a head serves with: the flag or `CLAWRAY_TOKEN` when given, else the token file
 * (reused across restarts so running workers keep working), else a new random one. The file
 * is (re)written with mode 0600 so local clients find it.
 */
export function ensureHeadToken(flag?: string): ResolvedToken {
  const given = flag || process.env.CLAWRAY_TOKEN || undefined;
  const file = tokenFilePath();
  let token = given;
  if (!token && existsSync(file)) token = readFileSync(file, 'utf8').trim() || undefined;
  token ||= randomBytes(24).toString('base64url');
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return { token, source: flag ? '--token' : given ? 'CLAWRAY_TOKEN' : file };
}

export const AUTH_HEADER = 'authorization';

export function bearer(token: string): string {
  return `Bearer ${token}`;
}

export function authMetadata(metadata: grpc.Metadata, token: string): grpc.Metadata {
  metadata.set(AUTH_HEADER, bearer(token));
  return metadata;
}

/** Constant-time check of an `Authorization: Bearer …` value against the expected token. */
export function tokenMatches(header: unknown, expected: string): boolean {
  if (typeof header !== 'string' || !header.startsWith('Bearer ')) return false;
  const given = Buffer.from(header.slice(7));
  const want = Buffer.from(expected);
  return given.length === want.length && timingSafeEqual(given, want);
}

export function unauthenticated(server: string): AuthError {
  return new AuthError(
    `wrong or missing cluster token for ${server}: use the token the head was started with ` +
      `(its --token flag or CLAWRAY_TOKEN), or on the head's machine the token file ${tokenFilePath()}; ` +
      'pass it with --token or CLAWRAY_TOKEN',
    { fields: { server } },
  );
}
