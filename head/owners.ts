/**
 * Owners, as in Ray: every SDK connection (`Cluster`) that creates actors or placement groups
 * holds an owner session, a server stream it keeps open for as long as it lives. What it owns
 * and is not detached goes with it:
 *
 * - a clean end (`CloseOwnerSession`, sent by `Cluster.close()`) releases it at once;
 * - a stream that breaks (the process died or was SIGKILLed, the network or the head went
 *   away) gives the owner `graceMs` to open it again — Ray Client's reconnect grace period —
 *   after which what it owns is released. The OS closes a dead process's TCP connection, so a
 *   killed driver is noticed at once; a vanished host is noticed by gRPC keepalive.
 * - after a head restart (durable store) every owner of something live gets the same grace,
 *   counted from when the head starts, to reconnect.
 *
 * Actors created by an actor are owned by that actor's incarnation; the actor directory ends
 * them itself (their owner's death is an actor event, not a session one).
 */
import type * as grpc from '@grpc/grpc-js';
import type { Logger } from '../common/logger.js';
import type * as m from '../proto/messages.js';

export interface ReleaseCounts {
  actors: number;
  groups: number;
}

export interface OwnerRegistryDeps {
  graceMs: number;
  logger: Logger;
  /** Kills the owner's non-detached actors and removes its non-detached placement groups. */
  release(ownerId: string, reason: string): Promise<ReleaseCounts>;
}

type OwnerStream = grpc.ServerWritableStream<m.OwnerSessionRequest__Output, m.OwnerEvent>;

interface Session {
  ownerId: string;
  /** Who, for messages: `pid 123 on host`. */
  who: string;
  stream?: OwnerStream;
  expiry?: NodeJS.Timeout;
}

/** Owners that ended, remembered so a request of theirs that arrives late is released too. */
const MAX_ENDED_REMEMBERED = 10_000;

export class OwnerRegistry {
  private readonly sessions = new Map<string, Session>();
  private readonly ended = new Set<string>();
  private stopped = false;

  constructor(private readonly d: OwnerRegistryDeps) {}

  /** An owner opened (or reopened) its session stream. */
  attach(req: m.OwnerSessionRequest__Output, stream: OwnerStream): void {
    const ownerId = req.ownerId;
    const who = `pid ${req.pid} on ${req.hostname || 'an unknown host'}${req.jobId ? ` (job ${req.jobId})` : ''}`;
    this.ended.delete(ownerId);
    const session = this.sessions.get(ownerId) ?? { ownerId, who };
    session.who = who;
    clearTimeout(session.expiry);
    session.expiry = undefined;
    const previous = session.stream;
    session.stream = stream;
    this.sessions.set(ownerId, session);
    if (previous && previous !== stream) previous.end();
    let gone = false;
    const onGone = () => {
      if (gone) return;
      gone = true;
      if (session.stream !== stream || this.sessions.get(ownerId) !== session) return;
      session.stream = undefined;
      this.startGrace(session, 'its connection to the head broke');
    };
    stream.on('cancelled', onGone);
    stream.on('close', onGone);
    stream.on('error', onGone);
    stream.write({ kind: 'READY', message: '' });
  }

  /** The owner is going away for good: release what it owns now. */
  async close(ownerId: string): Promise<ReleaseCounts> {
    const session = this.sessions.get(ownerId);
    if (session) {
      clearTimeout(session.expiry);
      this.sessions.delete(ownerId);
      session.stream?.end();
    }
    this.remember(ownerId);
    return this.d.release(ownerId, `its owner (${session?.who ?? ownerId}) closed its connection`);
  }

  /**
   * Something owned by `ownerId` was recorded (created, or reloaded after a head restart). An
   * owner with no open session must open one within the grace period; one that already ended
   * releases it at once.
   */
  track(ownerId: string): void {
    if (!ownerId || this.stopped) return;
    if (this.ended.has(ownerId)) {
      void this.d.release(ownerId, `its owner (${ownerId}) had already gone`).catch(() => {});
      return;
    }
    if (this.sessions.has(ownerId)) return;
    const session: Session = { ownerId, who: ownerId };
    this.sessions.set(ownerId, session);
    this.startGrace(session, 'it has no session with this head');
  }

  /** Sends an event to the owner if it is connected; resolves whether it was sent. */
  send(ownerId: string, event: m.OwnerEvent): boolean {
    const stream = this.sessions.get(ownerId)?.stream;
    if (!stream) return false;
    stream.write(event);
    return true;
  }

  connected(ownerId: string): boolean {
    return Boolean(this.sessions.get(ownerId)?.stream);
  }

  /** Owners with an open session. */
  get size(): number {
    return [...this.sessions.values()].filter((s) => s.stream).length;
  }

  /** The head stops: no more expiries (the next head gives every owner a new grace period). */
  stop(): void {
    this.stopped = true;
    for (const session of this.sessions.values()) {
      clearTimeout(session.expiry);
      session.stream?.end();
    }
    this.sessions.clear();
  }

  private startGrace(session: Session, why: string): void {
    if (this.stopped) return;
    clearTimeout(session.expiry);
    session.expiry = setTimeout(() => {
      if (this.sessions.get(session.ownerId) !== session || session.stream) return;
      this.sessions.delete(session.ownerId);
      this.remember(session.ownerId);
      const reason = `its owner (${session.who}) was lost: ${why} and it did not come back within ${this.d.graceMs} ms`;
      this.d.logger.warn({ ownerId: session.ownerId, graceMs: this.d.graceMs }, `owner lost: ${why}`);
      void this.d
        .release(session.ownerId, reason)
        .catch((err: Error) =>
          this.d.logger.error({ ownerId: session.ownerId, err: err.message }, 'could not release an owner'),
        );
    }, this.d.graceMs);
    session.expiry.unref();
  }

  private remember(ownerId: string): void {
    this.ended.add(ownerId);
    if (this.ended.size > MAX_ENDED_REMEMBERED) {
      const oldest = this.ended.values().next().value;
      if (oldest !== undefined) this.ended.delete(oldest);
    }
  }
}
