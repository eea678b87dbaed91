/** Stream entry ids `<ms>-<seq>`, ordered like Redis orders them. */

export function parseEntryId(id: string): [number, number] {
  const dash = id.indexOf('-');
  return dash < 0 ? [Number(id), 0] : [Number(id.slice(0, dash)), Number(id.slice(dash + 1))];
}

export function compareEntryIds(a: string, b: string): number {
  const [am, as] = parseEntryId(a);
  const [bm, bs] = parseEntryId(b);
  return am !== bm ? am - bm : as - bs;
}
