/**
 * The few parts of POSIX tar (ustar + pax) that working-directory packages need: regular files,
 * directories and symlinks. A package is a plain `.tar.gz`, so `tar -tzf` can look inside one,
 * but the reader takes only those three kinds: anything else (hard links, devices, GNU
 * extensions) is refused rather than guessed at, because archives come from other machines.
 */
import { ClawrayError, registerErrorClass } from '../../common/errors.js';

export const BLOCK = 512;

export type TarEntryKind = 'file' | 'dir' | 'symlink';

export interface TarHeader {
  path: string;
  kind: TarEntryKind;
  /** Permission bits (0o7777 at most). */
  mode: number;
  /** Bytes of content; 0 for directories and symlinks. */
  size: number;
  linkTarget?: string;
}

export interface TarEntry extends TarHeader {
  /** The content; read it before asking for the next entry, or it is skipped. */
  body: AsyncIterable<Buffer>;
}

/** The archive is not one this reader takes: truncated, corrupt, or of a kind it refuses. */
export class TarFormatError extends ClawrayError {}
registerErrorClass(TarFormatError);

const NAME_LEN = 100;
const MAX_OCTAL_SIZE = 0o77777777777;
const MAX_PAX_BYTES = 1024 * 1024;
const TYPE_FLAGS: Record<TarEntryKind, string> = { file: '0', dir: '5', symlink: '2' };

/** Two zero blocks close an archive. */
export const END_OF_ARCHIVE: Buffer = Buffer.alloc(2 * BLOCK);

/** Zeros that round `size` bytes of content up to a whole block. */
export function padding(size: number): Buffer {
  const rest = size % BLOCK;
  return Buffer.alloc(rest === 0 ? 0 : BLOCK - rest);
}

/**
 * The header block(s) of one entry: a pax header first when the path, link target or size does
 * not fit the ustar fields. No owner, group or time is written: the same tree gives the same
 * archive on every machine.
 */
export function encodeHeader(h: TarHeader): Buffer {
  const pax: [string, string][] = [];
  if (Buffer.byteLength(h.path) > NAME_LEN) pax.push(['path', h.path]);
  if (h.linkTarget !== undefined && Buffer.byteLength(h.linkTarget) > NAME_LEN) {
    pax.push(['linkpath', h.linkTarget]);
  }
  if (h.size > MAX_OCTAL_SIZE) pax.push(['size', String(h.size)]);
  const main = ustarBlock(
    h.path,
    TYPE_FLAGS[h.kind],
    h.mode,
    h.size > MAX_OCTAL_SIZE ? 0 : h.size,
    h.linkTarget,
  );
  if (pax.length === 0) return main;
  const records = Buffer.from(pax.map(([k, v]) => paxRecord(k, v)).join(''));
  return Buffer.concat([
    ustarBlock('PaxHeader', 'x', 0o644, records.length),
    records,
    padding(records.length),
    main,
  ]);
}

function paxRecord(key: string, value: string): string {
  // The length prefix counts itself, so grow it until it is consistent.
  const rest = Buffer.byteLength(` ${key}=${value}\n`);
  let digits = String(rest).length;
  if (String(rest + digits).length > digits) digits++;
  return `${rest + digits} ${key}=${value}\n`;
}

function ustarBlock(path: string, type: string, mode: number, size: number, link?: string): Buffer {
  const b = Buffer.alloc(BLOCK);
  // Longer names travel in the pax header; the ustar field keeps what fits for old readers.
  Buffer.from(path).copy(b, 0, 0, NAME_LEN);
  writeOctal(b, 100, 8, mode);
  writeOctal(b, 108, 8, 0);
  writeOctal(b, 116, 8, 0);
  writeOctal(b, 124, 12, size);
  writeOctal(b, 136, 12, 0);
  b.write(type, 156, 'latin1');
  if (link !== undefined) Buffer.from(link).copy(b, 157, 0, NAME_LEN);
  b.write('ustar\u000000', 257, 'latin1');
  writeOctal(b, 329, 8, 0);
  writeOctal(b, 337, 8, 0);
  b.write(`${checksum(b).toString(8).padStart(6, '0')}\u0000 `, 148, 'latin1');
  return b;
}

function writeOctal(b: Buffer, offset: number, width: number, value: number): void {
  b.write(`${value.toString(8).padStart(width - 1, '0')}\u0000`, offset, 'latin1');
}

/** The sum of the header's bytes with the checksum field itself counted as spaces. */
function checksum(b: Buffer): number {
  let sum = 8 * 0x20;
  for (let i = 0; i < BLOCK; i++) if (i < 148 || i >= 156) sum += b[i];
  return sum;
}

/** Pulls exact byte counts out of a stream of chunks of any size. */
class ByteSource {
  private pending: Buffer = Buffer.alloc(0);
  private readonly it: AsyncIterator<Uint8Array>;

  constructor(chunks: AsyncIterable<Uint8Array>) {
    this.it = chunks[Symbol.asyncIterator]();
  }

  /** Exactly `n` bytes, or undefined if the stream ends first (with nothing left over when n > 0). */
  async read(n: number): Promise<Buffer | undefined> {
    while (this.pending.length < n) {
      const next = await this.it.next();
      if (next.done) return undefined;
      this.pending =
        this.pending.length === 0 ? Buffer.from(next.value) : Buffer.concat([this.pending, next.value]);
    }
    const out = this.pending.subarray(0, n);
    this.pending = this.pending.subarray(n);
    return out;
  }

  /** The next `n` bytes in the pieces they arrive in. */
  async *pieces(n: number): AsyncGenerator<Buffer> {
    let left = n;
    while (left > 0) {
      if (this.pending.length === 0) {
        const next = await this.it.next();
        if (next.done) throw new TarFormatError('the archive ends in the middle of a file');
        this.pending = Buffer.from(next.value);
      }
      const take = Math.min(left, this.pending.length);
      const piece = this.pending.subarray(0, take);
      this.pending = this.pending.subarray(take);
      left -= take;
      yield piece;
    }
  }

  async skip(n: number): Promise<void> {
    for await (const _ of this.pieces(n)) {
      // Only moving past the bytes.
    }
  }
}

/** The entries of an (uncompressed) tar stream, in archive order. */
export async function* readTar(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<TarEntry> {
  const src = new ByteSource(chunks);
  let pax: Map<string, string> | undefined;
  for (;;) {
    const block = await src.read(BLOCK);
    if (block === undefined) throw new TarFormatError('the archive ends without its end marker');
    if (block.every((x) => x === 0)) return;
    const h = parseBlock(block);
    if (h.type === 'x' || h.type === 'g') {
      if (h.size > MAX_PAX_BYTES) throw new TarFormatError(`a pax header of ${h.size} bytes is too large`);
      const data = await src.read(h.size);
      if (data === undefined) throw new TarFormatError('the archive ends in a pax header');
      await src.skip(padding(h.size).length);
      // Global headers set defaults this reader has no use for; per-entry ones apply to the next.
      if (h.type === 'x') pax = parsePax(data);
      continue;
    }
    const path = pax?.get('path') ?? h.path;
    const linkTarget = pax?.get('linkpath') ?? h.linkTarget;
    const size = pax?.has('size') ? parseDecimal(pax.get('size')!) : h.size;
    pax = undefined;
    const kind = kindOf(h.type);
    if (kind === undefined) {
      throw new TarFormatError(
        `entry ${JSON.stringify(path)} has type ${JSON.stringify(h.type)}, not a file, directory or symlink`,
      );
    }
    if (kind !== 'file' && size !== 0) {
      throw new TarFormatError(`entry ${JSON.stringify(path)} is a ${kind} with ${size} bytes of content`);
    }
    let left = size;
    async function* body(): AsyncGenerator<Buffer> {
      for await (const piece of src.pieces(left)) {
        left -= piece.length;
        yield piece;
      }
    }
    yield {
      path,
      kind,
      mode: h.mode,
      size,
      linkTarget: kind === 'symlink' ? linkTarget : undefined,
      body: body(),
    };
    await src.skip(left + padding(size).length);
  }
}

function kindOf(type: string): TarEntryKind | undefined {
  if (type === '0' || type === '\u0000' || type === '7') return 'file';
  if (type === '5') return 'dir';
  if (type === '2') return 'symlink';
  return undefined;
}

interface RawHeader {
  path: string;
  type: string;
  mode: number;
  size: number;
  linkTarget: string;
}

function parseBlock(b: Buffer): RawHeader {
  const stored = parseOctal(b, 148, 8, 'checksum');
  if (stored !== checksum(b)) throw new TarFormatError('a header block has a bad checksum');
  const magic = b.toString('latin1', 257, 263);
  if (magic !== 'ustar\u0000' && magic !== 'ustar ') throw new TarFormatError('a header block is not ustar');
  let path = cString(b, 0, NAME_LEN);
  // Only POSIX ustar keeps a path prefix there; GNU's "ustar " header uses the bytes otherwise.
  const prefix = magic === 'ustar\u0000' ? cString(b, 345, 155) : '';
  if (prefix !== '') path = `${prefix}/${path}`;
  return {
    path,
    type: b.toString('latin1', 156, 157),
    mode: parseOctal(b, 100, 8, 'mode') & 0o7777,
    size: parseOctal(b, 124, 12, 'size'),
    linkTarget: cString(b, 157, NAME_LEN),
  };
}

function cString(b: Buffer, offset: number, len: number): string {
  const field = b.subarray(offset, offset + len);
  const end = field.indexOf(0);
  return field.toString('utf8', 0, end === -1 ? len : end);
}

function parseOctal(b: Buffer, offset: number, len: number, what: string): number {
  const field = b.subarray(offset, offset + len);
  const end = field.indexOf(0);
  const text = field.toString('latin1', 0, end === -1 ? len : end).trim();
  if (!/^[0-7]*$/.test(text)) throw new TarFormatError(`a header block has a bad ${what} field`);
  return text === '' ? 0 : Number.parseInt(text, 8);
}

function parseDecimal(text: string): number {
  if (!/^\d{1,15}$/.test(text))
    throw new TarFormatError(`a pax header has a bad size ${JSON.stringify(text)}`);
  return Number(text);
}

function parsePax(data: Buffer): Map<string, string> {
  const out = new Map<string, string>();
  let at = 0;
  while (at < data.length) {
    const space = data.indexOf(0x20, at);
    const len = space === -1 ? Number.NaN : Number(data.toString('latin1', at, space));
    if (!Number.isInteger(len) || len <= 0 || at + len > data.length || data[at + len - 1] !== 0x0a) {
      throw new TarFormatError('a pax header is malformed');
    }
    const record = data.toString('utf8', space + 1, at + len - 1);
    const eq = record.indexOf('=');
    if (eq <= 0) throw new TarFormatError('a pax header is malformed');
    out.set(record.slice(0, eq), record.slice(eq + 1));
    at += len;
  }
  return out;
}
