import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkTasks } from './env-check.js';
import type { Environment } from './environment.js';
import { loadToolcallTasks, writeToolcallTasks } from './toolcall/task-file.js';
import { buildTaskSuite, type ToolcallTask } from './toolcall/tasks.js';
import { toolcallTrack } from './toolcall/track.js';
import type { Track } from './track.js';
import { loadTrack } from './tracks.js';

const dir = mkdtempSync(join(tmpdir(), 'clawray-env-check-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const inProcess = buildTaskSuite().filter((t) => t.kind === 'arithmetic' || t.kind === 'lookup_calc');

describe('checkTasks', () => {
  it('passes every built-in task whose tools run in-process, in order, reporting each', async () => {
    const seen: number[] = [];
    const results = await checkTasks(toolcallTrack, inProcess, {
      parallel: 3,
      onResult: (_, done, total) => {
        expect(total).toBe(inProcess.length);
        seen.push(done);
      },
    });
    expect(results.map((r) => r.taskId)).toEqual(inProcess.map((t) => t.id));
    expect(results.every((r) => r.ok && r.oracleReward === 1 && r.nothingReward === -1)).toBe(true);
    expect(seen.sort((a, b) => a - b)).toEqual(inProcess.map((_, i) => i + 1));
  });

  it('flags a task whose oracle does not reach +1 and a task without an oracle', async () => {
    const good = inProcess[0];
    const wrong: ToolcallTask = { ...good, id: 'wrong', answer: `${good.answer}1` };
    const bare: ToolcallTask = { ...good, id: 'bare', oracle: [] };
    const [a, b, c] = await checkTasks(toolcallTrack, [good, wrong, bare]);
    expect(a.ok).toBe(true);
    expect(b).toMatchObject({ ok: false, oracleReward: -1, problem: 'oracle reward -1, expected 1' });
    expect(c).toMatchObject({ ok: false, oracleReward: null, problem: 'no oracle' });
  });

  it('flags a task that rewards doing nothing, and an environment that throws', async () => {
    // The real toolcall environment, except that every ending is scored +1.
    const lenient: Track<ToolcallTask> = {
      ...toolcallTrack,
      createEnvironment(tasks, options) {
        const env = toolcallTrack.createEnvironment(tasks, options) as Environment<object>;
        return {
          reset: (id) => env.reset(id),
          step: async (action) => ({ ...(await env.step(action)), reward: 1 }),
          evaluate: async () => ({ ...(await env.evaluate()), reward: 1 }),
          close: () => env.close(),
        };
      },
    };
    const [lax] = await checkTasks(lenient as unknown as Track, [inProcess[0]]);
    expect(lax).toMatchObject({ ok: false, nothingReward: 1, problem: 'doing nothing is rewarded +1' });
    const missing: ToolcallTask = { ...inProcess[0], id: 'not-in-env' };
    const [broken] = await checkTasks(
      {
        ...toolcallTrack,
        createEnvironment: (_t, o) => toolcallTrack.createEnvironment(inProcess, o),
      } as Track,
      [missing],
    );
    expect(broken.ok).toBe(false);
    expect(broken.problem).toMatch(/error: .*no task 'not-in-env'/);
  });
});

describe('toolcall task files', () => {
  it('round-trips the built-in suite through the JSONL format', async () => {
    const file = join(dir, 'suite.jsonl');
    const suite = buildTaskSuite();
    await writeToolcallTasks(suite, file);
    const loaded = await loadToolcallTasks(file);
    expect(loaded).toEqual(suite.map((t) => ({ ...t, kind: 'custom' })));
  });

  it('fills in ids and splits, and loads a directory by its tasks.jsonl', async () => {
    const sub = mkdtempSync(join(dir, 'd-'));
    writeFileSync(join(sub, 'tasks.jsonl'), '{"question":"What is 6*7?","answer":42}\n\n');
    const [task] = await loadToolcallTasks(sub);
    expect(task).toMatchObject({ kind: 'custom', answer: '42', oracle: [] });
    expect(task.id).toMatch(/^custom-[0-9a-f]{8}$/);
    expect(['train', 'heldout']).toContain(task.split);
  });

  it.each([
    ['{"question": "q"', /bad.jsonl:1: not valid JSON/],
    ['{"question":"q","answer":"1"}\n{"question":"r"}', /bad.jsonl:2: answer: /],
    ['{"question":"q","answer":"1","colour":"red"}', /bad.jsonl:1: .*colour/],
    ['{"question":"q","answer":"1","split":"test"}', /bad.jsonl:1: split: /],
    [
      '{"question":"q","answer":"1","oracle":[{"tool_calls":[{"id":"c","type":"function"}]}]}',
      /oracle\[0\]\.tool_calls\[0\]\.function/,
    ],
    [
      '{"id":"a","question":"q","answer":"1"}\n{"id":"a","question":"r","answer":"2"}',
      /bad.jsonl:2: id 'a' is already used on line 1/,
    ],
    ['\n\n', /bad.jsonl: no tasks/],
  ])('names the line and field of a bad record: %s', async (content, message) => {
    const file = join(dir, 'bad.jsonl');
    writeFileSync(file, content);
    await expect(loadToolcallTasks(file)).rejects.toThrow(message);
  });

  it('rejects an unknown track and bad environment settings, naming them', async () => {
    await expect(loadTrack('chess')).rejects.toThrow(
      /unknown track 'chess'; the tracks are toolcall, terminal, swe, gui/,
    );
    expect(() => toolcallTrack.createEnvironment(inProcess, { settings: { maxTurns: 0 } })).toThrow(
      /maxTurns/,
    );
    expect(() => toolcallTrack.createEnvironment(inProcess, { settings: { turns: 3 } })).toThrow(/turns/);
  });
});
