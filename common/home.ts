import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * Where a head leaves its token and address for local clients: `$CLAWRAY_HOME`, else
 * `~/.clawray`.
 */
export function clawrayHome(): string {
  return process.env.CLAWRAY_HOME || join(homedir(), '.clawray');
}

export const tokenFilePath = (): string => join(clawrayHome(), 'token');
export const headFilePath = (): string => join(clawrayHome(), 'head.json');
/** The token `clawray serve` generates when given none (mode 0600; never printed). */
export const serveTokenFilePath = (): string => join(clawrayHome(), 'serve-token');
