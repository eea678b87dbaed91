/**
 * A growing output buffer that msgpack values are written straight into, for the record
 * encoding (record-codec.ts): one buffer per batch of records, no intermediate buffer per
 * record. Values are written byte for byte as msgpackr (`useRecords: false`) writes them, so
 * entries stay plain msgpack that any reader decodes; a value of a kind this writer does not
 * handle itself (a Date, a Map, a typed array, a bigint...) is packed by msgpackr and copied in.
 */
import { Packr } from 'msgpackr';

// Plain msgpack (no record extension), so any msgpack reader can decode an entry.
export const packr = new Packr({ useRecords: false });

export class MsgpackWriter {
  buf: Buffer;
  pos = 0;
  /** Over `buf`, for the number arrays: typed writes at any offset, little-endian on any host. */
  private view: DataView;

  /** Writes into `buffer` (from its start) when given one, else into a new one of `bytes`. */
  constructor(bytes: number, buffer?: Buffer) {
    this.buf = buffer ?? Buffer.allocUnsafe(bytes);
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
  }

  reserve(bytes: number): void {
    if (this.pos + bytes <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + bytes));
    this.buf.copy(bigger, 0, 0, this.pos);
    this.buf = bigger;
    this.view = new DataView(bigger.buffer, bigger.byteOffset, bigger.byteLength);
  }

  /** A map header for `size` entries, always map16 as msgpackr writes it. */
  mapHeader(size: number): void {
    this.reserve(3);
    this.buf[this.pos] = 0xde;
    this.buf.writeUInt16BE(size, this.pos + 1);
    this.pos += 3;
  }

  /** Already encoded msgpack bytes. */
  raw(bytes: Uint8Array): void {
    this.reserve(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  /**
   * `key` (encoded bytes) then `values` as a msgpack bin of little-endian uint32s. Returns false,
   * having written part of it, if a value is not an integer in [0, 2^32).
   */
  uint32Bin(key: Uint8Array, values: readonly unknown[]): boolean {
    const n = values.length;
    const p = this.binHeader(key, 4 * n);
    const view = this.view;
    for (let i = 0; i < n; i++) {
      const x = values[i];
      // True exactly for the integers in [0, 2^32)
      if ((x as number) >>> 0 !== x) return false;
      view.setUint32(p + 4 * i, x as number, true);
    }
    this.pos = p + 4 * n;
    return true;
  }

  /** As `uint32Bin`, for float64s; false if a value is not a finite number. */
  float64Bin(key: Uint8Array, values: readonly unknown[]): boolean {
    const n = values.length;
    const p = this.binHeader(key, 8 * n);
    const view = this.view;
    for (let i = 0; i < n; i++) {
      const x = values[i];
      if (typeof x !== 'number' || x - x !== 0) return false; // NaN and ±Infinity give NaN
      view.setFloat64(p + 8 * i, x, true);
    }
    this.pos = p + 8 * n;
    return true;
  }

  /** Writes `key` and a bin header for `bytes` bytes, reserving them; returns where they go. */
  private binHeader(key: Uint8Array, bytes: number): number {
    this.reserve(key.length + 5 + bytes);
    const b = this.buf;
    b.set(key, this.pos);
    let p = this.pos + key.length;
    if (bytes < 0x100) {
      b[p++] = 0xc4;
      b[p++] = bytes;
    } else if (bytes < 0x10000) {
      b[p++] = 0xc5;
      b.writeUInt16BE(bytes, p);
      p += 2;
    } else {
      b[p++] = 0xc6;
      b.writeUInt32BE(bytes, p);
      p += 4;
    }
    return p;
  }

  value(x: unknown): void {
    if (typeof x === 'string') this.string(x);
    else if (typeof x === 'number') this.number(x);
    else if (typeof x === 'boolean') this.byte(x ? 0xc3 : 0xc2);
    else if (x === null) this.byte(0xc0);
    else if (x === undefined) {
      // fixext1 type 0, as msgpackr writes undefined (and reads it back as undefined)
      this.reserve(3);
      this.buf[this.pos++] = 0xd4;
      this.buf[this.pos++] = 0;
      this.buf[this.pos++] = 0;
    } else if (Array.isArray(x)) this.array(x);
    else if (typeof x === 'object' && Object.getPrototypeOf(x) === Object.prototype) {
      this.object(x as Record<string, unknown>);
    } else this.raw(packr.pack(x));
  }

  private byte(b: number): void {
    this.reserve(1);
    this.buf[this.pos++] = b;
  }

  private array(a: readonly unknown[]): void {
    const n = a.length;
    this.reserve(5);
    const b = this.buf;
    if (n < 0x10) b[this.pos++] = 0x90 | n;
    else if (n < 0x10000) {
      b[this.pos] = 0xdc;
      b.writeUInt16BE(n, this.pos + 1);
      this.pos += 3;
    } else {
      b[this.pos] = 0xdd;
      b.writeUInt32BE(n, this.pos + 1);
      this.pos += 5;
    }
    for (let i = 0; i < n; i++) this.value(a[i]);
  }

  private object(o: Record<string, unknown>): void {
    const keys = Object.keys(o);
    if (keys.length > 0xffff) {
      this.raw(packr.pack(o)); // msgpackr refuses it, with its own message
      return;
    }
    this.mapHeader(keys.length);
    for (const key of keys) {
      this.string(key);
      this.value(o[key]);
    }
  }

  private number(x: number): void {
    this.reserve(9);
    const b = this.buf;
    if (x >>> 0 === x) {
      if (x < 0x80) b[this.pos++] = x;
      else if (x < 0x100) {
        b[this.pos++] = 0xcc;
        b[this.pos++] = x;
      } else if (x < 0x10000) {
        b[this.pos] = 0xcd;
        b.writeUInt16BE(x, this.pos + 1);
        this.pos += 3;
      } else {
        b[this.pos] = 0xce;
        b.writeUInt32BE(x, this.pos + 1);
        this.pos += 5;
      }
    } else if (x >> 0 === x) {
      if (x >= -0x20) b[this.pos++] = 0x100 + x;
      else if (x >= -0x80) {
        b[this.pos++] = 0xd0;
        b[this.pos++] = x + 0x100;
      } else if (x >= -0x8000) {
        b[this.pos] = 0xd1;
        b.writeInt16BE(x, this.pos + 1);
        this.pos += 3;
      } else {
        b[this.pos] = 0xd2;
        b.writeInt32BE(x, this.pos + 1);
        this.pos += 5;
      }
    } else {
      b[this.pos] = 0xcb;
      b.writeDoubleBE(x, this.pos + 1);
      this.pos += 9;
    }
  }

  /** UTF-8 as msgpackr writes it (a lone surrogate as three bytes for short strings). */
  private string(s: string): void {
    const n = s.length;
    const header = n < 0x20 ? 1 : n < 0x100 ? 2 : n < 0x10000 ? 3 : 5;
    // 3 bytes a UTF-16 unit at most, and a header up to 2 bytes longer than estimated
    this.reserve(header + 3 * n + 2);
    const b = this.buf;
    const start = this.pos + header;
    let length: number;
    if (n < 0x40) {
      let p = start;
      for (let i = 0; i < n; i++) {
        let c1 = s.charCodeAt(i);
        if (c1 < 0x80) b[p++] = c1;
        else if (c1 < 0x800) {
          b[p++] = (c1 >> 6) | 0xc0;
          b[p++] = (c1 & 0x3f) | 0x80;
        } else if ((c1 & 0xfc00) === 0xd800 && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
          const c2 = s.charCodeAt(i + 1);
          c1 = 0x10000 + ((c1 & 0x03ff) << 10) + (c2 & 0x03ff);
          i++;
          b[p++] = (c1 >> 18) | 0xf0;
          b[p++] = ((c1 >> 12) & 0x3f) | 0x80;
          b[p++] = ((c1 >> 6) & 0x3f) | 0x80;
          b[p++] = (c1 & 0x3f) | 0x80;
        } else {
          b[p++] = (c1 >> 12) | 0xe0;
          b[p++] = ((c1 >> 6) & 0x3f) | 0x80;
          b[p++] = (c1 & 0x3f) | 0x80;
        }
      }
      length = p - start;
    } else {
      length = b.write(s, start, b.length - start, 'utf8');
    }
    // The header is as short as the byte length allows; move the bytes if it was over-estimated.
    const need = length < 0x20 ? 1 : length < 0x100 ? 2 : length < 0x10000 ? 3 : 5;
    if (need !== header) b.copyWithin(this.pos + need, start, start + length);
    let p = this.pos;
    if (need === 1) b[p++] = 0xa0 | length;
    else if (need === 2) {
      b[p++] = 0xd9;
      b[p++] = length;
    } else if (need === 3) {
      b[p++] = 0xda;
      b.writeUInt16BE(length, p);
      p += 2;
    } else {
      b[p++] = 0xdb;
      b.writeUInt32BE(length, p);
      p += 4;
    }
    this.pos = p + length;
  }
}
