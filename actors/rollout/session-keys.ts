/**
 * Per-session API keys (AReaL's proxy model): `POST /rl/start_session` hands a client a key
 * that names its session, so an agent that cannot set headers still files every request, its
 * feedback and its end under the right session. Keys live in the serving process: a driver
 * that restarts forgets them, and clients start new sessions (as with AReaL).
 *
 * Keys are kept by their SHA-256, so a lookup's timing says nothing about a stored key.
 */
import { createHash, randomBytes } from 'node:crypto';

export interface IssuedKey {
  sessionId: string;
  apiKey: string;
}

const hash = (key: string) => createHash('sha256').update(key).digest('base64url');

export class SessionKeys {
  /** hash → session, in issue order (the oldest is dropped past `maxKeys`). */
  private readonly bySession = new Map<string, string>();
  private readonly byHash = new Map<string, string>();

  constructor(private readonly maxKeys = 100_000) {}

  /** A new key for `sessionId` (or for a new session id); a session has one key at a time. */
  issue(sessionId = `sess-${randomBytes(9).toString('base64url')}`): IssuedKey {
    this.revoke(sessionId);
    const apiKey = `sk-clawray-${randomBytes(24).toString('base64url')}`;
    const h = hash(apiKey);
    this.byHash.set(h, sessionId);
    this.bySession.set(sessionId, h);
    if (this.bySession.size > this.maxKeys) {
      const oldest = this.bySession.keys().next().value as string;
      this.revoke(oldest);
    }
    return { sessionId, apiKey };
  }

  /** The session of an `Authorization` header's key, if it is one of ours. */
  sessionOf(authorization: unknown): string | undefined {
    if (typeof authorization !== 'string' || !authorization.startsWith('Bearer ')) return undefined;
    return this.byHash.get(hash(authorization.slice(7).trim()));
  }

  revoke(sessionId: string): void {
    const h = this.bySession.get(sessionId);
    if (h === undefined) return;
    this.bySession.delete(sessionId);
    this.byHash.delete(h);
  }

  get size(): number {
    return this.bySession.size;
  }
}
