import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;

/**
 * The folder holding clawray's package.json. The same code runs from the sources (tests) and
 * from dist/ (installed), so paths to shipped files are found from here, not from this file.
 */
export function packageRoot(): string {
  if (cached) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).name === 'clawray') {
      cached = dir;
      return dir;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find the clawray package root');
    dir = parent;
  }
}

/** Path of a compiled entry point, e.g. `distEntry('runtime/host-main')`. */
export function distEntry(name: string): string {
  return join(packageRoot(), 'dist', `${name}.js`);
}
