import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../common/package-root.js';

function files(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) {
      const path = join(entry.parentPath, entry.name);
      out.set(relative(dir, path), readFileSync(path, 'utf8'));
    }
  }
  return out;
}

describe('proto/generated', () => {
  const fresh = mkdtempSync(join(tmpdir(), 'clawray-proto-'));
  afterAll(() => rmSync(fresh, { recursive: true, force: true }));

  it('matches proto/*.proto (run `npm run proto` after editing a .proto file)', () => {
    const root = packageRoot();
    execFileSync(process.execPath, [join(root, 'scripts', 'proto-gen.mjs'), fresh]);
    const committed = files(join(root, 'proto', 'generated'));
    const regenerated = files(fresh);
    expect([...committed.keys()].sort(), 'generated file list is stale: run npm run proto').toEqual(
      [...regenerated.keys()].sort(),
    );
    for (const [name, text] of regenerated) {
      expect(committed.get(name), `proto/generated/${name} is stale: run npm run proto`).toBe(text);
    }
  });
});
