/**
 * The handshake that opens every ring link: the dialling rank sends a hello (length-prefixed
 * JSON carrying the cluster token, the group name, its rank and the world size), the accepting
 * rank checks it and answers `{ ok: true }` or `{ ok: false, error }`. Frames follow
 * (frame-codec.ts). JSON is used only here, once per link, so its cost does not matter.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type net from 'node:net';

export const HELLO_MAGIC = 'clawray-collective/1';
/** Longest handshake message either side reads: anything longer is not a clawray peer. */
export const MAX_HANDSHAKE_BYTES = 4096;

export interface Hello {
  magic: string;
  token: string;
  groupName: string;
  rank: number;
  worldSize: number;
}

export interface HandshakeReply {
  ok?: boolean;
  error?: string;
}

/** What the accepting rank expects of a hello. */
export interface HelloExpectation {
  token: string;
  groupName: string;
  worldSize: number;
  /** This rank, and the rank it sends to: the only one that may dial it. */
  rank: number;
  next: number;
}

export interface Refusal {
  reason: string;
  /** The peer is a clawray rank of this ring that got something wrong: the group cannot form. */
  failGroup: boolean;
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

/** Compares digests, so the time taken says nothing about the token. */
function tokensEqual(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

/** Why `hello` may not open the link, or undefined when it may. */
export function refusal(hello: Partial<Hello> | undefined, want: HelloExpectation): Refusal | undefined {
  if (hello?.magic !== HELLO_MAGIC) return { reason: 'not a clawray collective handshake', failGroup: false };
  if (typeof hello.token !== 'string' || !tokensEqual(hello.token, want.token))
    return { reason: 'wrong cluster token', failGroup: true };
  if (hello.groupName !== want.groupName)
    return { reason: `group name '${hello.groupName}' is not '${want.groupName}'`, failGroup: true };
  if (hello.worldSize !== want.worldSize)
    return { reason: `world size ${hello.worldSize} is not ${want.worldSize}`, failGroup: true };
  if (hello.rank !== want.next)
    return {
      reason: `rank ${want.rank} sends to rank ${want.next}, not rank ${hello.rank}`,
      failGroup: true,
    };
  return undefined;
}

/** Length-prefixed JSON. */
export function encodeMessage(value: Hello | HandshakeReply): Buffer {
  const body = Buffer.from(JSON.stringify(value));
  const out = Buffer.allocUnsafe(4 + body.length);
  out.writeUInt32LE(body.length, 0);
  body.copy(out, 4);
  return out;
}

/** The reply whose body is `body`; one that does not parse is a refusal. */
export function decodeReply(body: Buffer): HandshakeReply {
  try {
    return JSON.parse(body.toString('utf8')) as HandshakeReply;
  } catch {
    return { ok: false, error: 'handshake reply is not valid JSON: not a clawray collective peer' };
  }
}

/**
 * Reads one length-prefixed JSON message from `socket` (the accepting side, which reads nothing
 * else); resolves with it and any bytes after it, and leaves the socket paused.
 */
export function readMessage(
  socket: net.Socket,
  timeoutMs: number,
  what: string,
): Promise<{ value: unknown; rest: Buffer }> {
  return new Promise((resolve, reject) => {
    let acc: Buffer = Buffer.alloc(0);
    const cleanup = (): void => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('close', onClose);
      socket.off('error', onError);
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`no ${what} within ${timeoutMs} ms`));
    }, timeoutMs);
    const onError = (err: Error): void => {
      cleanup();
      reject(err);
    };
    const onClose = (): void => {
      cleanup();
      reject(new Error(`connection closed before the ${what}`));
    };
    const onData = (chunk: Buffer): void => {
      acc = acc.length === 0 ? chunk : Buffer.concat([acc, chunk]);
      if (acc.length < 4) return;
      const len = acc.readUInt32LE(0);
      if (len > MAX_HANDSHAKE_BYTES) {
        cleanup();
        reject(new Error(`${what} too large (${len} bytes): not a clawray collective peer`));
        return;
      }
      if (acc.length < 4 + len) return;
      cleanup();
      socket.pause();
      try {
        resolve({
          value: JSON.parse(acc.subarray(4, 4 + len).toString('utf8')),
          rest: acc.subarray(4 + len),
        });
      } catch {
        reject(new Error(`${what} is not valid JSON: not a clawray collective peer`));
      }
    };
    socket.on('data', onData);
    socket.on('close', onClose);
    socket.on('error', onError);
    socket.resume();
  });
}
