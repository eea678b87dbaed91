import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  findLocalHead,
  processAlive,
  readLocalHead,
  recordedProcessRuns,
  removeLocalHead,
  staleHeadMessage,
  writeLocalHead,
} from './local-head.js';
import { listWorkerRecords, removeWorkerRecord, workersDir, writeWorkerRecord } from './local-workers.js';

const root = mkdtempSync(join(tmpdir(), 'clawray-local-head-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The pid of a process that has already exited. */
const deadPid = (): number => spawnSync(process.execPath, ['-e', '0']).pid!;

describe('the head this machine started (head.json)', () => {
  it('is found while its process runs, with the command line it was started with', () => {
    const file = join(root, 'live.json');
    writeLocalHead({ address: '127.0.0.1:6390', metricsPort: 9000 }, file);
    const found = findLocalHead(file);
    expect(found.stale).toBeUndefined();
    expect(found.head).toMatchObject({ address: '127.0.0.1:6390', pid: process.pid, metricsPort: 9000 });
    expect(found.head!.argv!.length).toBeGreaterThan(0);
  });

  it('is stale when its pid is dead: removed, and the message names the file, pid and address', () => {
    const file = join(root, 'dead.json');
    const pid = deadPid();
    writeFileSync(file, JSON.stringify({ address: '127.0.0.1:1', pid }));
    const found = findLocalHead(file);
    expect(found.head).toBeUndefined();
    expect(found.stale).toEqual({ file, pid, address: '127.0.0.1:1' });
    expect(existsSync(file)).toBe(false);
    expect(staleHeadMessage(found.stale!)).toBe(
      `the head recorded in ${file} (pid ${pid}, 127.0.0.1:1) is not running; removed the record`,
    );
  });

  it('is stale when its pid now runs another command (a pid reused after a crash)', () => {
    const file = join(root, 'reused.json');
    writeFileSync(
      file,
      JSON.stringify({ address: 'a:1', pid: process.pid, argv: ['node', 'something-else'] }),
    );
    expect(recordedProcessRuns(process.pid, ['node', 'something-else'])).toBe(false);
    expect(findLocalHead(file).stale?.pid).toBe(process.pid);
  });

  it('is removed by its own head only, not by a head whose record was replaced', () => {
    const file = join(root, 'own.json');
    writeFileSync(file, JSON.stringify({ address: 'a:1', pid: process.pid + 1 }));
    removeLocalHead(process.pid, file);
    expect(readLocalHead(file)?.address).toBe('a:1');
    removeLocalHead(process.pid + 1, file);
    expect(existsSync(file)).toBe(false);
  });

  it('treats garbage and address-less records as none', () => {
    const file = join(root, 'bad.json');
    writeFileSync(file, '{not json');
    expect(findLocalHead(file)).toEqual({});
    writeFileSync(file, JSON.stringify({ pid: process.pid }));
    expect(findLocalHead(file)).toEqual({});
  });

  it('tells live pids from dead ones, zombies included', async () => {
    expect(processAlive(process.pid)).toBe(true);
    expect(processAlive(deadPid())).toBe(false);
    expect(processAlive(0)).toBe(false);
    // A child that exited while this process is busy stays a zombie until it is reaped.
    const child = spawn(process.execPath, ['-e', '0']);
    const zombie = child.pid!;
    const until = Date.now() + 10_000;
    while (!readFileSync(`/proc/${zombie}/stat`, 'utf8').includes(') Z') && Date.now() < until) {
      spawnSync('sleep', ['0.05']); // blocks the loop, so the exit is not reaped meanwhile
    }
    expect(processAlive(zombie)).toBe(false);
    await new Promise((r) => child.once('exit', r));
  });
});

describe('the workers this machine started (workers/<pid>.json)', () => {
  it('lists the live ones and drops the records of dead ones', () => {
    const home = join(root, 'home');
    writeWorkerRecord({ head: 'h:1', address: 'w:1' }, home);
    const pid = deadPid();
    writeFileSync(
      join(workersDir(home), `${pid}.json`),
      JSON.stringify({ pid, head: 'h:1', address: 'w:2' }),
    );
    const live = listWorkerRecords(home);
    expect(live.map((w) => [w.pid, w.address, w.parentPid])).toEqual([[process.pid, 'w:1', process.ppid]]);
    expect(existsSync(join(workersDir(home), `${pid}.json`))).toBe(false);
    removeWorkerRecord(process.pid, home);
    expect(listWorkerRecords(home)).toEqual([]);
  });
});
