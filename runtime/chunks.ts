/**
 * Payloads bigger than one chunk travel as several messages with the same call id, so a
 * typed array of hundreds of MiB never needs one giant gRPC message.
 */

export const CHUNK_BYTES = 4 * 1024 * 1024;

/** Zero-copy views of at most CHUNK_BYTES each (at least one, possibly empty). */
export function splitPayload(payload: Buffer): Buffer[] {
  if (payload.length <= CHUNK_BYTES) return [payload];
  const chunks: Buffer[] = [];
  for (let offset = 0; offset < payload.length; offset += CHUNK_BYTES) {
    chunks.push(payload.subarray(offset, Math.min(payload.length, offset + CHUNK_BYTES)));
  }
  return chunks;
}

/** Collects the chunks of each call id until the last one arrives. */
export class ChunkAssembler {
  private readonly partial = new Map<number, Buffer[]>();

  /** Returns the whole payload once `more` is false, else undefined. */
  add(id: number, bytes: Buffer, more: boolean): Buffer | undefined {
    const parts = this.partial.get(id);
    if (!more) {
      if (!parts) return bytes;
      this.partial.delete(id);
      parts.push(bytes);
      return Buffer.concat(parts);
    }
    if (parts) parts.push(bytes);
    else this.partial.set(id, [bytes]);
    return undefined;
  }

  drop(id: number): void {
    this.partial.delete(id);
  }

  clear(): void {
    this.partial.clear();
  }
}
