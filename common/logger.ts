/**
 * pino JSON lines, pretty only when a person is watching a TTY and pino-pretty is installed.
 * Components bind `nodeId`, `actorId`, `jobId` with `logger.child(...)`.
 */
import { createRequire } from 'node:module';
import pino, { type Logger } from 'pino';

export type { Logger } from 'pino';

function prettyTransport(): pino.TransportSingleOptions | undefined {
  if (!process.stderr.isTTY || process.env.CLAWRAY_LOG_FORMAT === 'json') return undefined;
  try {
    createRequire(import.meta.url).resolve('pino-pretty');
    return { target: 'pino-pretty', options: { destination: 2, colorize: true } };
  } catch {
    return undefined;
  }
}

export function createLogger(bindings: Record<string, string> = {}): Logger {
  const transport = prettyTransport();
  const level = process.env.CLAWRAY_LOG_LEVEL ?? 'info';
  const base = { pid: process.pid, ...bindings };
  return transport
    ? pino({ level, base, transport })
    : pino({ level, base }, pino.destination({ fd: 2, sync: false }));
}

/** A logger that drops everything, for library code used without a cluster. */
export const silentLogger: Logger = pino({ level: 'silent' });
