import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureServeToken } from './serve-token.js';

describe("clawray serve's generated token", () => {
  const home = mkdtempSync(join(tmpdir(), 'clawray-serve-token-'));
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it('lives in a 0600 file under the clawray home and is reused across restarts', () => {
    const file = join(home, 'nested', 'serve-token');
    const first = ensureServeToken(file);
    expect(first.file).toBe(file);
    expect(first.token.length).toBeGreaterThanOrEqual(32);
    expect(readFileSync(file, 'utf8')).toBe(`${first.token}\n`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(ensureServeToken(file).token).toBe(first.token);
  });
});
