/**
 * Logs on stderr: pretty lines (pino-pretty: time, level, message, then the bound fields) when
 * a person is watching a terminal, pino JSON lines otherwise (a file, a pipe, a log shipper)
 * or whenever `CLAWRAY_LOG_FORMAT=json` (the CLI's `--log-format json`). Components bind
 * `nodeId`, `actorId`, `jobId` with `logger.child(...)`.
 */
import { createRequire } from 'node:module';
import pino, { type DestinationStream, type Logger } from 'pino';
import type { PrettyOptions } from 'pino-pretty';

export type { Logger } from 'pino';

export const LOG_FORMATS = ['pretty', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/**
 * `CLAWRAY_LOG_FORMAT` when it names a format, else pretty exactly when stderr is a terminal.
 * An unknown value is treated as unset here; the CLI refuses it at its edge.
 */
export function logFormat(
  env: NodeJS.ProcessEnv = process.env,
  stderrIsTty = Boolean(process.stderr.isTTY),
): LogFormat {
  const chosen = env.CLAWRAY_LOG_FORMAT;
  if (chosen === 'json' || chosen === 'pretty') return chosen;
  return stderrIsTty ? 'pretty' : 'json';
}

/**
 * pino-pretty as an in-process stream (no transport worker thread per process), loaded only
 * when needed: a JSON logger never pays for it.
 */
function prettyStream(): DestinationStream {
  const pretty = createRequire(import.meta.url)('pino-pretty') as (o: PrettyOptions) => DestinationStream;
  return pretty({
    destination: 2,
    sync: true,
    colorize: Boolean(process.stderr.isTTY),
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
    singleLine: true,
  });
}

export function createLogger(bindings: Record<string, string> = {}): Logger {
  const level = process.env.CLAWRAY_LOG_LEVEL ?? 'info';
  const base = { pid: process.pid, ...bindings };
  const destination = logFormat() === 'pretty' ? prettyStream() : pino.destination({ fd: 2, sync: false });
  return pino({ level, base }, destination);
}

/** A logger that drops everything, for library code used without a cluster. */
export const silentLogger: Logger = pino({ level: 'silent' });
