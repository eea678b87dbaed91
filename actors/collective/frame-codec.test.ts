import { describe, expect, it } from 'vitest';
import {
  ABORT_STEP,
  decodeHeader,
  encodeAbort,
  encodeHeader,
  type FrameHeader,
  HEADER_BYTES,
  headerMismatch,
  isAbort,
} from './frame-codec.js';
import { type FrameEvents, FrameReader } from './frame-reader.js';

const blank = (): FrameHeader => ({ opId: 0, step: 0, sub: 0, bytes: 0 });

describe('frame codec', () => {
  it('round-trips a header, little endian, up to u32 max', () => {
    for (const [opId, step, sub, bytes] of [
      [1, 0, 0, 4096],
      [0xfffffffe, 7, 3, 0],
      [0xffffffff, 0xfffffffe, 0xffffffff, 0xffffffff],
    ] as const) {
      const buf = encodeHeader(opId, step, sub, bytes);
      expect(buf.length).toBe(HEADER_BYTES);
      expect(buf.readUInt32LE(0)).toBe(opId);
      expect(decodeHeader(buf, blank())).toEqual({ opId, step, sub, bytes });
    }
    // The decoder refills the object it is given: no object per frame.
    const into = blank();
    expect(decodeHeader(encodeHeader(5, 6, 7, 8), into)).toBe(into);
  });

  it('accepts only the frame expected next, and says what differs', () => {
    const got = decodeHeader(encodeHeader(3, 2, 1, 400), blank());
    expect(headerMismatch(got, { step: 2, sub: 1, bytes: 400 })).toBeUndefined();
    expect(headerMismatch(got, { step: 2, sub: 1, bytes: 404 })).toBe(
      'got step 2 part 1 (400 bytes), expected step 2 part 1 (404 bytes): ' +
        'did every rank call the same collective with the same buffer length?',
    );
    expect(headerMismatch(got, { step: 3, sub: 1, bytes: 400 })).toMatch(/expected step 3 part 1/);
    expect(headerMismatch(got, { step: 2, sub: 0, bytes: 400 })).toMatch(/expected step 2 part 0/);
    expect(headerMismatch(got, undefined)).toMatch(/^got step 2 part 1 \(400 bytes\), expected nothing: /);
  });

  it('encodes an abort: step 0xffffffff, the blamed rank in the sub field, the reason as payload', () => {
    const frame = encodeAbort(2, 'rank 2 closed its connection (reported by rank 0)');
    const header = decodeHeader(frame, blank());
    expect(isAbort(header)).toBe(true);
    expect(header).toEqual({ opId: 0, step: ABORT_STEP, sub: 2, bytes: frame.length - HEADER_BYTES });
    expect(frame.subarray(HEADER_BYTES).toString('utf8')).toBe(
      'rank 2 closed its connection (reported by rank 0)',
    );
    expect(isAbort(decodeHeader(encodeHeader(1, 0, 2, 0), blank()))).toBe(false);
  });
});

/** Drives a reader the way node:net's `onread` does: each read fills at most the buffer handed out. */
function feed(reader: FrameReader, bytes: Uint8Array, readSize: number): boolean[] {
  const results: boolean[] = [];
  for (let at = 0; at < bytes.length; ) {
    const target = reader.nextReadBuffer();
    const n = Math.min(target.length, readSize, bytes.length - at);
    target.set(bytes.subarray(at, at + n));
    at += n;
    results.push(reader.onRead(n));
  }
  return results;
}

describe('frame reader', () => {
  function reader(dest: Uint8Array) {
    const seen: string[] = [];
    // As the group does: an abort fails it, and the reader with it.
    let r: FrameReader | undefined;
    const events: FrameEvents = {
      activity: () => {},
      place: (h) => {
        seen.push(`place ${h.opId}/${h.step}/${h.sub}/${h.bytes}`);
        if (h.bytes !== dest.length) {
          seen.push('mismatch');
          return undefined;
        }
        return dest;
      },
      received: () => seen.push('received'),
      aborted: (blamed, reason) => {
        seen.push(`aborted by ${blamed}: ${reason}`);
        r?.fail();
      },
      protocolError: (detail) => seen.push(`protocol: ${detail}`),
    };
    r = new FrameReader(events);
    const reply = r.expectReply();
    const ok = Buffer.from(JSON.stringify({ ok: true }));
    const message = Buffer.concat([Buffer.alloc(4), ok]);
    message.writeUInt32LE(ok.length, 0);
    feed(r, message, 3);
    return { r, seen, reply };
  }

  it('reads the reply, then each payload straight into its destination, across reads', async () => {
    const dest = new Uint8Array(10);
    const { r, seen, reply } = reader(dest);
    expect(await reply).toEqual({ ok: true });
    const payload = Uint8Array.from({ length: 10 }, (_, i) => i + 1);
    // Every read buffer handed out during the payload is a view of `dest`: no copy.
    const target = (() => {
      feed(r, encodeHeader(1, 0, 0, 10), 16);
      return r.nextReadBuffer();
    })();
    expect(target.buffer).toBe(dest.buffer);
    target.set(payload.subarray(0, 4));
    expect(r.onRead(4)).toBe(true);
    expect(feed(r, payload.subarray(4), 4)).toEqual([true, true]);
    expect(dest).toEqual(payload);
    expect(seen).toEqual(['place 1/0/0/10', 'received']);
  });

  it('stops at a header nobody expects, and reports an abort with its reason', async () => {
    const dest = new Uint8Array(8);
    const wrong = reader(dest);
    expect(feed(wrong.r, encodeHeader(1, 0, 0, 12), 16)).toEqual([false]);
    expect(wrong.seen).toEqual(['place 1/0/0/12', 'mismatch']);

    const aborted = reader(dest);
    const results = feed(aborted.r, encodeAbort(2, 'boom'), 5);
    expect(results.at(-1)).toBe(false);
    expect(aborted.seen).toEqual(['aborted by 2: boom']);
  });
});
