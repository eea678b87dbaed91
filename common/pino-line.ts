/**
 * A line another clawray process logged (pino JSON), read back. A process that re-logs a
 * child's output (a worker logging an actor process's stderr) gives such a line its own level,
 * message and fields, instead of nesting the whole JSON line as the message of a WARN.
 */
import pino, { type Level } from 'pino';

export interface PinoLine {
  level: Level;
  msg: string;
  /** Its fields, without pino's own (`level`, `time`, `pid`, `hostname`, `msg`). */
  fields: Record<string, unknown>;
}

/** The pino record `line` holds, or undefined when it is anything else (a plain line). */
export function parsePinoLine(line: string): PinoLine | undefined {
  if (!line.startsWith('{"level":')) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
  const {
    level,
    msg,
    time: _time,
    pid: _pid,
    hostname: _hostname,
    ...fields
  } = parsed as Record<string, unknown>;
  const label = typeof level === 'number' ? pino.levels.labels[level] : undefined;
  if (label === undefined || label === 'silent') return undefined;
  return { level: label as Level, msg: typeof msg === 'string' ? msg : '', fields };
}
