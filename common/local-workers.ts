/**
 * The workers this machine started (`clawray worker start`, `start --local`'s children), one
 * record each in `$CLAWRAY_HOME/workers/<pid>.json`, so `clawray stop` can end them as it ends
 * the head. A worker removes its record when it exits; one killed outright leaves it behind,
 * and a record whose process no longer runs (or whose pid now names another command) is
 * dropped when the records are listed.
 */
import { mkdirSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { clawrayHome } from './home.js';
import { ownCommandLine, recordedProcessRuns } from './local-head.js';

export interface LocalWorkerRecord {
  pid: number;
  /** Its command line as `/proc` showed it, to tell it from a process that got its pid later. */
  argv?: string[];
  /** The head it registered with. */
  head: string;
  /** Its NodeService address. */
  address: string;
  /** The process that started it (`start --local`'s workers: that process, which stops them). */
  parentPid: number;
}

export const workersDir = (home = clawrayHome()): string => join(home, 'workers');

const recordPath = (pid: number, home?: string): string => join(workersDir(home), `${pid}.json`);

/** Records this process as a worker; removed again by `removeWorkerRecord` or on exit. */
export function writeWorkerRecord(info: { head: string; address: string }, home?: string): void {
  const record: LocalWorkerRecord = {
    pid: process.pid,
    argv: ownCommandLine(),
    parentPid: process.ppid,
    ...info,
  };
  mkdirSync(workersDir(home), { recursive: true, mode: 0o700 });
  writeFileSync(recordPath(process.pid, home), `${JSON.stringify(record)}\n`, { mode: 0o600 });
  process.once('exit', () => removeWorkerRecord(process.pid, home));
}

export function removeWorkerRecord(pid = process.pid, home?: string): void {
  try {
    unlinkSync(recordPath(pid, home));
  } catch {
    // Already gone.
  }
}

/** The recorded workers that still run; stale records are removed on the way. */
export function listWorkerRecords(home?: string): LocalWorkerRecord[] {
  let names: string[];
  try {
    names = readdirSync(workersDir(home));
  } catch {
    return [];
  }
  const live: LocalWorkerRecord[] = [];
  for (const name of names) {
    const path = join(workersDir(home), name);
    let record: LocalWorkerRecord | undefined;
    try {
      record = JSON.parse(readFileSync(path, 'utf8')) as LocalWorkerRecord;
    } catch {
      record = undefined;
    }
    if (record && Number.isInteger(record.pid) && recordedProcessRuns(record.pid, record.argv)) {
      live.push(record);
    } else {
      try {
        unlinkSync(path);
      } catch {
        // Another `stop` got there first.
      }
    }
  }
  return live;
}
