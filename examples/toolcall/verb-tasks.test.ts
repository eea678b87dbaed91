/**
 * The task file of examples/toolcall/rl.yaml: the shipped file is what its generator writes, and
 * it has the structure the example's claims rest on (clean demonstrations of two verbs, half-wrong
 * demonstrations of the RL verbs, held-out questions of the RL verbs only, three-digit answers).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkTasks } from '../../actors/envs/env-check.js';
import { loadToolcallTasks } from '../../actors/envs/toolcall/task-file.js';
import { toolcallTrack } from '../../actors/envs/toolcall/track.js';
import { packageRoot } from '../../common/package-root.js';

const here = join(packageRoot(), 'examples', 'toolcall');
const dir = mkdtempSync(join(tmpdir(), 'clawray-verb-tasks-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('make-verb-tasks.mjs', () => {
  it('writes the shipped verb-tasks.jsonl, deterministically', () => {
    const out = join(dir, 'tasks.jsonl');
    execFileSync(process.execPath, [join(here, 'make-verb-tasks.mjs'), '--out', out]);
    expect(readFileSync(out, 'utf8')).toBe(readFileSync(join(here, 'verb-tasks.jsonl'), 'utf8'));
  });

  it('demonstrates Add and Multiply cleanly, Sum and Product half wrong, and holds out only RL tasks', async () => {
    const tasks = await loadToolcallTasks(join(here, 'verb-tasks.jsonl'));
    const verb = (q: string) => q.replace(/ \d+ and \d+\.$/, '');
    const demos = tasks.filter((t) => t.oracle.length > 0);
    const rl = tasks.filter((t) => t.oracle.length === 0);
    expect(demos.every((t) => t.split === 'train')).toBe(true);
    expect(new Set(rl.map((t) => verb(t.question)))).toEqual(new Set(['Sum', 'Product of']));
    const heldout = tasks.filter((t) => t.split === 'heldout');
    expect(heldout.length).toBeGreaterThan(50);
    expect(heldout.every((t) => t.oracle.length === 0)).toBe(true);
    expect(
      tasks.every((t) => /^\d{3}$/.test(t.answer) && /^[A-Z][a-z ]+ \d\d and \d\d\.$/.test(t.question)),
    ).toBe(true);
    // The real environment: clean demonstrations reach +1, the unreliable ones exactly half the time.
    const results = await checkTasks(toolcallTrack, demos, { parallel: 4 });
    const solved = (v: string) =>
      results.filter((_r, i) => verb(demos[i].question) === v).map((r) => r.oracleReward === 1);
    expect(solved('Add').every(Boolean) && solved('Multiply').every(Boolean)).toBe(true);
    for (const v of ['Sum', 'Product of']) {
      const s = solved(v);
      expect(s.filter(Boolean).length * 2).toBe(s.length);
    }
  });
});
