/**
 * The head this machine started (`clawray head start`, `clawray start --local`), as local
 * clients find it: `$CLAWRAY_HOME/head.json` holds its address and pid, written when it
 * listens and removed when it stops. A head killed outright cannot remove it, so a record
 * whose pid no longer runs is stale: it is removed and reported, and clients neither wait on
 * a dead address nor fail where an embedded cluster would do.
 */
import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { headFilePath } from './home.js';

export interface LocalHeadRecord {
  address: string;
  pid: number;
  metricsPort?: number;
  /** The head process's command line (`/proc`'s), to tell it from a process that got its pid later. */
  argv?: string[];
}

/** What `findLocalHead` saw: a live head, a stale record it removed, or nothing. */
export interface LocalHeadLookup {
  head?: LocalHeadRecord;
  /** Set when a record named a pid that is not running; the file is gone now. */
  stale?: { file: string; pid: number; address: string };
}

/**
 * True when a process with this pid runs (EPERM: it does, under another user). A zombie — it
 * exited and its parent has not reaped it yet — does not: it will never do anything again.
 */
export function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    // `pid (comm) S …`: the state follows the last `)` (comm may hold spaces and parentheses).
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // no /proc: the signal check is all there is
  }
}

/** This process's command line as `/proc` shows it (NUL-separated), or undefined without /proc. */
export function ownCommandLine(): string[] | undefined {
  return commandLineOf('self');
}

function commandLineOf(pid: number | 'self'): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
  } catch {
    return undefined;
  }
}

/**
 * True when `pid` runs and, where `/proc` tells, with the command line recorded for it (as
 * `/proc` showed it then, not `process.argv`, which Node rewrites): a pid reused by an
 * unrelated process after a crash must not pass for the recorded one, nor be signalled by
 * `clawray stop`.
 */
export function recordedProcessRuns(pid: number, argv?: string[]): boolean {
  if (!processAlive(pid)) return false;
  if (!argv || argv.length === 0) return true;
  const now = commandLineOf(pid);
  // No /proc (or not ours to read): the pid is all there is to go by.
  return now === undefined || now.join('\0') === argv.join('\0');
}

/** Writes the record of a head in this process (its pid and command line are added). */
export function writeLocalHead(record: Omit<LocalHeadRecord, 'pid' | 'argv'>, file = headFilePath()): void {
  const full: LocalHeadRecord = { ...record, pid: process.pid, argv: ownCommandLine() };
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, `${JSON.stringify(full)}\n`, { mode: 0o600 });
}

/** Reads the record as it is, without judging it; undefined when absent or unreadable. */
export function readLocalHead(file = headFilePath()): LocalHeadRecord | undefined {
  let parsed: Partial<LocalHeadRecord>;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<LocalHeadRecord>;
  } catch {
    return undefined;
  }
  if (typeof parsed.address !== 'string' || !parsed.address) return undefined;
  return {
    address: parsed.address,
    pid: typeof parsed.pid === 'number' ? parsed.pid : 0,
    metricsPort: parsed.metricsPort,
    argv: Array.isArray(parsed.argv) ? parsed.argv.map(String) : undefined,
  };
}

/**
 * Removes the record when it is this process's (or `pid`'s): a head stopping must not remove
 * the file of another head that replaced it meanwhile.
 */
export function removeLocalHead(pid = process.pid, file = headFilePath()): void {
  const record = readLocalHead(file);
  if (record && record.pid !== pid) return;
  try {
    unlinkSync(file);
  } catch {
    // Already gone.
  }
}

/** The head this machine started, if it still runs; a stale record is removed. */
export function findLocalHead(file = headFilePath()): LocalHeadLookup {
  const record = readLocalHead(file);
  if (!record) return {};
  // A record without a pid (an older head) cannot be judged: trust it as before.
  if (record.pid === 0 || recordedProcessRuns(record.pid, record.argv)) return { head: record };
  removeLocalHead(record.pid, file);
  return { stale: { file, pid: record.pid, address: record.address } };
}

/** One sentence for a stale record, e.g. for `clawray: …; starting an embedded cluster`. */
export function staleHeadMessage(stale: NonNullable<LocalHeadLookup['stale']>): string {
  return `the head recorded in ${stale.file} (pid ${stale.pid}, ${stale.address}) is not running; removed the record`;
}
