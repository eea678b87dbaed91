import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryTrajectoryBuffer } from '../buffer/memory-buffer.js';
import { judgedGroup } from './fakes.test-support.js';
import { type DriverState, JobStateStore } from './job-state.js';
import { emptyLedgerState, TRAIN_GROUP, TrajectoryLedger } from './trajectory-ledger.js';

const dirs: string[] = [];
const buffers: MemoryTrajectoryBuffer[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  await Promise.all(buffers.splice(0).map((b) => b.close()));
});

function root(): string {
  const d = mkdtempSync(join(tmpdir(), 'clawray-state-'));
  dirs.push(d);
  return d;
}

function state(submissionId: string, trainerStep: number, savedAtMs: number): DriverState {
  return {
    format: 'clawray-driver-state',
    submissionId,
    jobName: 'toolcall',
    step: trainerStep,
    warmupDone: 0,
    trainerStep,
    evals: [],
    history: [],
    ledger: emptyLedgerState(),
    savedAtMs,
  };
}

/** A trainer checkpoint dir as CheckpointManager writes it. */
function checkpoint(dir: string, step: number): void {
  mkdirSync(join(dir, `step-${step}`), { recursive: true });
  writeFileSync(join(dir, `step-${step}`, 'model.safetensors'), `weights ${step}`);
}

describe('JobStateStore', () => {
  it('keeps each submission apart and resumes the newest run of a job name into a new one', () => {
    const r = root();
    const a = new JobStateStore(r, 'sub-a', 2);
    checkpoint(a.dir, 4);
    a.save(state('sub-a', 4, 1000));
    const b = new JobStateStore(r, 'sub-b', 2);
    checkpoint(b.dir, 9);
    b.save(state('sub-b', 9, 2000));
    const c = new JobStateStore(r, 'sub-c', 2);
    expect(c.latest()).toBeNull();
    const adopted = c.adopt('toolcall', '');
    expect(adopted).toMatchObject({ submissionId: 'sub-c', trainerStep: 9, resumedFrom: 'sub-b/step-9' });
    expect(readdirSync(c.dir)).toContain('step-9');
    expect(c.latest()?.submissionId).toBe('sub-c');
    // Told a submission and a step: that one.
    const d = new JobStateStore(r, 'sub-d', 2);
    expect(d.adopt('toolcall', 'sub-a/step-4')).toMatchObject({ trainerStep: 4 });
    expect(() => d.adopt('toolcall', 'sub-a/step-5')).toThrow(/no driver state for step-5/);
    expect(() => d.adopt('toolcall', 'sub-a/five')).toThrow(/SUBMISSION_ID\/step-N/);
    // A checkpoint path is refused by name, not read as "the latest run".
    expect(() => d.adopt('toolcall', '/ckpt/toolcall/sub-a/step-4')).toThrow(/not a path/);
    expect(() => d.adopt('toolcall', 'ckpt/sub-a/step-4')).toThrow(/not a path/);
  });

  it('keeps the last `keep` driver states and writes no partial file', () => {
    const r = root();
    const s = new JobStateStore(r, 'sub', 2);
    for (const step of [1, 2, 3]) s.save(state('sub', step, step));
    expect(readdirSync(join(s.dir, 'driver')).sort()).toEqual(['step-2.json', 'step-3.json']);
    expect(readdirSync(s.dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });
});

describe('TrajectoryLedger across a crash', () => {
  it('re-applies a commit cut short between the driver state and the acks: trained once, acked', async () => {
    const rollouts = new MemoryTrajectoryBuffer({ name: 'r' });
    const judged = new MemoryTrajectoryBuffer({ name: 'j' });
    buffers.push(rollouts, judged);
    const records = judgedGroup(0, [1, -1]);
    await rollouts.append(records);
    const entries = await rollouts.read({ group: 'judge', consumer: 'driver', count: 10 });
    await judged.append(records);
    await rollouts.ack(
      'judge',
      entries.map((e) => e.entryId),
    );
    const read = await judged.read({ group: TRAIN_GROUP, consumer: 'driver', count: 10 });
    const ledger = new TrajectoryLedger(rollouts, judged);
    ledger.recordStep({
      entryIds: read.map((e) => e.entryId),
      trained: records.map((r) => r.trajectoryId),
      dropped: {},
    });
    // The driver state is saved with what it commits, then the process dies.
    const saved = ledger.prepareCommit();
    const resumed = new TrajectoryLedger(rollouts, judged);
    await resumed.restore(saved);
    expect(await judged.pending(TRAIN_GROUP)).toEqual([]);
    const counts = await resumed.counts();
    expect(counts).toMatchObject({ produced: 2, judged: 2, trained: 2, lost: 0, duplicated: 0 });
    // Restoring again (a second crash right after) changes nothing.
    await new TrajectoryLedger(rollouts, judged).restore(saved);
    expect((await resumed.counts()).trained).toBe(2);
  });

  it('reports as lost what was acked without being trained or dropped', async () => {
    const rollouts = new MemoryTrajectoryBuffer({ name: 'r2' });
    const judged = new MemoryTrajectoryBuffer({ name: 'j2' });
    buffers.push(rollouts, judged);
    await judged.append(judgedGroup(0, [1, -1]));
    const read = await judged.read({ group: TRAIN_GROUP, consumer: 'driver', count: 10 });
    // What the old driver did: ack on read.
    await judged.ack(
      TRAIN_GROUP,
      read.map((e) => e.entryId),
    );
    expect((await new TrajectoryLedger(rollouts, judged).counts()).lost).toBe(2);
  });
});
