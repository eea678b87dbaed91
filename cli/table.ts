/** Plain aligned text tables for `clawray status` and `clawray actors list`. */
export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

const fmt = (n: number) => (Number.isInteger(n) ? String(n) : String(Math.round(n * 10000) / 10000));

/** `CPU 3/4  GPU 1.5/2  memory_mb 100/2048` — available/total. */
export function resourcePairs(available: Record<string, number>, total: Record<string, number>): string {
  return Object.keys(total)
    .filter((k) => total[k] > 0)
    .map((k) => `${k} ${fmt(available[k] ?? 0)}/${fmt(total[k])}`)
    .join('  ');
}
