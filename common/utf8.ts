/**
 * Byte-offset reads of a UTF-8 log (a job's log, from its supervisor or from the head) must not
 * hand out half a character: the next read starts where this one's whole characters end.
 */

/** Drops a trailing partial UTF-8 character (unless nothing more will come to complete it). */
export function completeUtf8(buf: Buffer, moreMayCome: boolean): Buffer {
  if (!moreMayCome) return buf;
  let i = buf.length - 1;
  let back = 0;
  while (i >= 0 && back < 4 && (buf[i]! & 0xc0) === 0x80) {
    i--;
    back++;
  }
  if (i < 0) return buf;
  const lead = buf[i]!;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return buf.length - i < need ? buf.subarray(0, i) : buf;
}

/** The first character boundary at or after `at` (skips continuation bytes). */
export function utf8BoundaryAfter(buf: Buffer, at: number): number {
  let i = Math.max(0, at);
  while (i < buf.length && (buf[i]! & 0xc0) === 0x80) i++;
  return i;
}
