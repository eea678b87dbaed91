/**
 * The task suite of examples/terminal/rl.yaml: its generator is deterministic, and the suite has
 * the structure the example's claims rest on (clean solutions of two verbs, half-wrong solutions
 * of the RL verbs, held-out tasks of the RL verbs only), checked in real sandboxed episodes.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkTasks } from '../../actors/envs/env-check.js';
import { terminalTrack } from '../../actors/envs/terminal/index.js';
import { loadTerminalTasks } from '../../actors/envs/terminal/task-dir.js';
import { packageRoot } from '../../common/package-root.js';

const script = join(packageRoot(), 'examples', 'terminal', 'make-tasks.mjs');
const dir = mkdtempSync(join(tmpdir(), 'clawray-terminal-tasks-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const make = (out: string) =>
  execFileSync(process.execPath, [script, '--per-verb', '12', '--noisy', '4', '--out', join(dir, out)]);
const verb = (instruction: string) => instruction.split(' ')[0];

describe('examples/terminal/make-tasks.mjs', () => {
  it('writes the same suite every time', () => {
    make('a');
    make('b');
    const names = readdirSync(join(dir, 'a')).sort();
    expect(readdirSync(join(dir, 'b')).sort()).toEqual(names);
    for (const name of names.slice(0, 10))
      expect(readFileSync(join(dir, 'b', name, 'task.yaml'), 'utf8')).toBe(
        readFileSync(join(dir, 'a', name, 'task.yaml'), 'utf8'),
      );
  });

  it('solves Write and Append cleanly, Save and Add half wrong, and holds out only RL tasks', async () => {
    const tasks = await loadTerminalTasks(join(dir, 'a'));
    expect(tasks).toHaveLength(12 * 4 + 4 * 2);
    expect(tasks.every((t) => /^[A-Z][a-z]+ [1-9]\d{2} to f[1-9]\d\.txt\.$/.test(t.instruction))).toBe(true);
    const demos = tasks.filter((t) => t.oracle.length > 0);
    const rl = tasks.filter((t) => t.oracle.length === 0);
    expect(demos.every((t) => t.split === 'train')).toBe(true);
    expect(new Set(rl.map((t) => verb(t.instruction)))).toEqual(new Set(['Save', 'Add']));
    expect(tasks.filter((t) => t.split === 'heldout').every((t) => t.oracle.length === 0)).toBe(true);
    // Real bubblewrap episodes: clean solutions pass the tests, the unreliable ones exactly half
    // the time, and doing nothing never does.
    const results = await checkTasks(terminalTrack, demos, { parallel: 2 });
    const passed = (v: string) =>
      results.filter((_r, i) => verb(demos[i].instruction) === v).map((r) => r.oracleReward === 1);
    expect([...passed('Write'), ...passed('Append')].every(Boolean)).toBe(true);
    for (const v of ['Save', 'Add']) {
      const p = passed(v);
      expect(p.filter(Boolean).length * 2).toBe(p.length);
    }
    expect(results.every((r) => r.nothingReward === -1)).toBe(true);
  }, 120_000);
});
