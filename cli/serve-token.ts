/**
 * The bearer token of `clawray serve` when none is given: kept in a mode-0600 file under the
 * clawray home, reused across restarts (clients keep working), and never printed — a token on
 * stdout ends up in terminal scrollback, CI logs and `ps`-visible pipes.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { serveTokenFilePath } from '../common/home.js';

export function ensureServeToken(file = serveTokenFilePath()): { token: string; file: string } {
  try {
    const token = readFileSync(file, 'utf8').trim();
    if (token) {
      chmodSync(file, 0o600);
      return { token, file };
    }
  } catch {
    // None yet.
  }
  const token = randomBytes(24).toString('base64url');
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  chmodSync(file, 0o600); // the umask may have left more bits
  return { token, file };
}
