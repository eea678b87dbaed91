/**
 * The ring's wire format after the handshake: a stream of frames, each a 16-byte header (u32 op
 * id, u32 step, u32 sub-chunk index, u32 payload bytes; little endian) and the payload.
 *
 * Both ends derive the same schedule from (rank, world size, buffer length) (ring-schedule.ts),
 * so every header is checked against the frame the receiver expects next; a mismatch (ranks
 * calling different collectives or passing buffers of different lengths) fails the group.
 *
 * A header with step 0xffffffff is an abort: its sub field is the blamed rank and its payload
 * the reason. A failing rank sends one to the next rank, which sends its own on, so the abort
 * travels once around the ring and every rank fails its pending operation instead of hanging.
 */

export const HEADER_BYTES = 16;
export const ABORT_STEP = 0xffffffff;
/** Longest abort reason a receiver reads. */
export const MAX_ABORT_REASON_BYTES = 4096;

export interface FrameHeader {
  opId: number;
  step: number;
  sub: number;
  /** Payload bytes. */
  bytes: number;
}

/** The frame a receiver expects next (its operation's id is checked apart). */
export interface ExpectedFrame {
  readonly step: number;
  readonly sub: number;
  readonly bytes: number;
}

/** A fresh header buffer: the socket holds on to it until written, so it cannot be reused. */
export function encodeHeader(opId: number, step: number, sub: number, bytes: number): Buffer {
  const header = Buffer.allocUnsafe(HEADER_BYTES);
  header.writeUInt32LE(opId, 0);
  header.writeUInt32LE(step, 4);
  header.writeUInt32LE(sub, 8);
  header.writeUInt32LE(bytes, 12);
  return header;
}

/** Reads the header at the start of `buf` into `into` (reused: no object per frame). */
export function decodeHeader(buf: Buffer, into: FrameHeader): FrameHeader {
  into.opId = buf.readUInt32LE(0);
  into.step = buf.readUInt32LE(4);
  into.sub = buf.readUInt32LE(8);
  into.bytes = buf.readUInt32LE(12);
  return into;
}

export const isAbort = (header: FrameHeader): boolean => header.step === ABORT_STEP;

/** An abort frame, header and payload: rank `blamed` failed for `reason`. */
export function encodeAbort(blamed: number, reason: string): Buffer {
  const payload = Buffer.from(reason);
  const header = Buffer.alloc(HEADER_BYTES);
  header.writeUInt32LE(0, 0);
  header.writeUInt32LE(ABORT_STEP, 4);
  header.writeUInt32LE(blamed, 8);
  header.writeUInt32LE(payload.length, 12);
  return Buffer.concat([header, payload]);
}

/** Why `got` is not the frame expected next (undefined: it is; no expected frame: nothing is). */
export function headerMismatch(got: FrameHeader, expected: ExpectedFrame | undefined): string | undefined {
  if (expected && expected.step === got.step && expected.sub === got.sub && expected.bytes === got.bytes)
    return undefined;
  return (
    `got step ${got.step} part ${got.sub} (${got.bytes} bytes), expected ` +
    (expected ? `step ${expected.step} part ${expected.sub} (${expected.bytes} bytes)` : 'nothing') +
    ': did every rank call the same collective with the same buffer length?'
  );
}
