/**
 * The task set of examples/swe/rl.yaml: the shipped files are what their generator writes, and
 * they have the structure the example's claims rest on (clean demonstrations of two issue types,
 * half-wrong demonstrations of the RL types, held-out issues of the RL types only, three-digit values at
 * the end of every issue), checked in the real sandboxed environment for a few tasks.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkTasks } from '../../actors/envs/env-check.js';
import { sweTrack } from '../../actors/envs/swe/index.js';
import { loadSweTasks } from '../../actors/envs/swe/task-file.js';
import { packageRoot } from '../../common/package-root.js';

const here = join(packageRoot(), 'examples', 'swe');
const dir = mkdtempSync(join(tmpdir(), 'clawray-swe-tasks-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const typeOf = (statement: string) => statement.replace(/ \d{3}\.$/, '');

describe('examples/swe/make-tasks.mjs', () => {
  it('writes the shipped tasks.jsonl and repo/, deterministically', () => {
    execFileSync(process.execPath, [join(here, 'make-tasks.mjs'), '--out', dir]);
    expect(readFileSync(join(dir, 'tasks.jsonl'), 'utf8')).toBe(
      readFileSync(join(here, 'tasks.jsonl'), 'utf8'),
    );
    for (const file of ['min', 'max']) {
      expect(readFileSync(join(dir, 'repo', file), 'utf8')).toBe(
        readFileSync(join(here, 'repo', file), 'utf8'),
      );
    }
  });

  it('demonstrates Set min/max cleanly, Floor/Limit half wrong, and holds out only RL issues', async () => {
    const tasks = await loadSweTasks(join(here, 'tasks.jsonl'));
    expect(tasks.every((t) => /^[A-Z][a-z ]+ \d{3}\.$/.test(t.problemStatement))).toBe(true);
    const demos = tasks.filter((t) => t.oracle.length > 0);
    const rl = tasks.filter((t) => t.oracle.length === 0);
    expect(demos.every((t) => t.split === 'train')).toBe(true);
    expect(new Set(demos.map((t) => typeOf(t.problemStatement)))).toEqual(
      new Set(['Set min to', 'Set max to', 'Floor is now', 'Limit is now']),
    );
    expect(new Set(rl.map((t) => typeOf(t.problemStatement)))).toEqual(
      new Set(['Floor is now', 'Limit is now']),
    );
    const heldout = tasks.filter((t) => t.split === 'heldout');
    expect(heldout.length).toBeGreaterThan(30);
    expect(heldout.every((t) => t.oracle.length === 0)).toBe(true);
    // Each demonstration writes one file (the one its gold patch edits); the unreliable
    // demonstrator writes the wrong one exactly half the time.
    const written = (t: (typeof tasks)[number]) =>
      JSON.parse(t.oracle[0].tool_calls![0].function.arguments) as { path: string; content: string };
    for (const t of demos) {
      expect(t.oracle[0].tool_calls![0].function.name).toBe('write_file');
      expect(t.patch!.startsWith(`--- a/${written(t).path}\n`)).toBe(true);
      expect(written(t).content).toBe(t.problemStatement.match(/(\d{3})\.$/)![1]);
    }
    const right = (t: (typeof tasks)[number]) => written(t).path === t.failToPass[0];
    const clean = demos.filter((t) => t.problemStatement.startsWith('Set'));
    expect(clean.every(right)).toBe(true);
    for (const type of ['Floor is now', 'Limit is now']) {
      const noisy = demos.filter((t) => typeOf(t.problemStatement) === type);
      expect(noisy.filter(right).length * 2).toBe(noisy.length);
    }
  });

  it('scores a clean demonstration +1, a wrong-file one and doing nothing −1, in the real sandbox', async () => {
    const tasks = await loadSweTasks(join(here, 'tasks.jsonl'));
    const noisy = tasks.filter((t) => t.oracle.length > 0 && !t.problemStatement.startsWith('Set'));
    const sample = [
      tasks.find((t) => t.problemStatement.startsWith('Set min'))!,
      tasks.find((t) => t.problemStatement.startsWith('Set max'))!,
      noisy[0],
      noisy[1],
    ];
    const results = await checkTasks(sweTrack, sample, { parallel: 2 });
    expect(results.map((r) => r.oracleReward)).toEqual([1, 1, 1, -1]);
    expect(results.every((r) => r.nothingReward === -1)).toBe(true);
  });
});
