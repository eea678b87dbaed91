/**
 * gRPC's message framing over HTTP/2 (a flag byte, a 4-byte big-endian length, the
 * protobuf bytes). The actor call stream speaks it directly on node:http2 because grpc-js
 * spends several times more per message than HTTP/2 itself on this path (measured: a bare
 * grpc-js bidi ping-pong ~4k/s, a node:http2 one ~15k/s on 2 cores); the wire stays plain
 * gRPC, so any gRPC client can call an actor (see actor.proto).
 */
import type { IncomingHttpHeaders } from 'node:http2';

export const GRPC_CONTENT_TYPE = 'application/grpc+proto';
export const CONNECT_PATH = '/clawray.v1.ActorService/Connect';
/** Largest message accepted; payloads travel in chunks far below it. */
export const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

/** Writes one framed message: small ones as one buffer, big ones as prefix + body (no copy). */
export function framed(message: Buffer): Buffer[] {
  const prefix = Buffer.allocUnsafe(5);
  prefix[0] = 0;
  prefix.writeUInt32BE(message.length, 1);
  return message.length < 64 * 1024 ? [Buffer.concat([prefix, message])] : [prefix, message];
}

/** Splits a byte stream back into messages, copying each message at most once. */
export class Deframer {
  private parts: Buffer[] = [];
  private buffered = 0;
  /** Length of the message being read, or -1 while waiting for its prefix. */
  private expected = -1;

  /** Adds bytes; returns every message completed by them. Throws on a bad frame. */
  push(chunk: Buffer): Buffer[] {
    this.parts.push(chunk);
    this.buffered += chunk.length;
    const messages: Buffer[] = [];
    for (;;) {
      if (this.expected < 0) {
        if (this.buffered < 5) break;
        const prefix = this.take(5);
        if (prefix[0] !== 0) throw new Error('compressed gRPC messages are not supported');
        this.expected = prefix.readUInt32BE(1);
        if (this.expected > MAX_MESSAGE_BYTES) {
          throw new Error(`gRPC message of ${this.expected} bytes exceeds ${MAX_MESSAGE_BYTES}`);
        }
      }
      if (this.buffered < this.expected) break;
      messages.push(this.take(this.expected));
      this.expected = -1;
    }
    return messages;
  }

  private take(n: number): Buffer {
    this.buffered -= n;
    const first = this.parts[0];
    if (first && first.length >= n) {
      if (first.length === n) this.parts.shift();
      else this.parts[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const part = this.parts[0];
      const use = Math.min(part.length, n - filled);
      part.copy(out, filled, 0, use);
      filled += use;
      if (use === part.length) this.parts.shift();
      else this.parts[0] = part.subarray(use);
    }
    return out;
  }
}

/** A gRPC metadata value from HTTP/2 headers (`-bin` values are base64). */
export function headerValue(headers: IncomingHttpHeaders, name: string): string {
  const v = headers[name];
  return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
}

export function binHeader(headers: IncomingHttpHeaders, name: string): Buffer | undefined {
  const v = headerValue(headers, name);
  return v ? Buffer.from(v, 'base64') : undefined;
}
