import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../common/errors.js';
import type { Action, StepResult, ToolCall } from '../environment.js';
import { DO_NOTHING_ACTION } from '../track.js';
import { SweEnvironment, type SweInfo } from './env.js';
import { type GraderOptions, gradePatch } from './grader.js';
import { sweTrack } from './index.js';
import { DEFAULT_SANDBOX_LIMITS } from './shell.js';
import { createSnapshot } from './snapshot.js';
import { loadSweTasks, type SweTask } from './task-file.js';
import { builtinSweTasks, VISIBLE_TEST_CMD } from './tasks.js';

const hasBwrap = spawnSync('bwrap', ['--version']).status === 0;

let suite: SweTask[];
let scratch: string;

beforeAll(async () => {
  suite = await builtinSweTasks();
  scratch = mkdtempSync(join(tmpdir(), 'clawray-swe-env-test-'));
});

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

let callCount = 0;
function call(name: string, args: unknown, id = `c${++callCount}`): ToolCall {
  return { id, type: 'function', function: { name, arguments: JSON.stringify(args) } };
}

const bash = (command: string): Action => ({ content: null, tool_calls: [call('bash', { command })] });
const DONE: Action = { content: 'Done.' };

/** The built-in task of a template. */
function taskOf(template: string): SweTask {
  return suite.find((t) => t.id.startsWith(`${template}-`))!;
}

/** The package directory of a built-in task (its name is drawn by the PRNG). */
function packageOf(task: SweTask): string {
  return /^diff --git a\/(\w+)\//m.exec(task.patch!)![1];
}

async function play(env: SweEnvironment, taskId: string, actions: Action[]): Promise<StepResult<SweInfo>> {
  await env.reset(taskId);
  let last: StepResult<SweInfo> | undefined;
  for (const [i, action] of actions.entries()) {
    last = await env.step(action);
    expect(last.done).toBe(i === actions.length - 1);
    if (!last.done) expect(last.reward).toBe(0);
  }
  return last!;
}

describe.skipIf(!hasBwrap)('swe environment: built-in suite', () => {
  it('gives +1 to every oracle and −1 to doing nothing or an unrelated change', async () => {
    const envs = [0, 1, 2].map(() => new SweEnvironment(suite));
    try {
      await Promise.all(
        envs.map(async (env, worker) => {
          for (const task of suite.filter((_, i) => i % envs.length === worker)) {
            const idle = await play(env, task.id, [DO_NOTHING_ACTION]);
            expect(idle).toMatchObject({ reward: -1, done: true, info: { resolved: false } });
            expect(idle.info.reason).toMatch(/empty diff/);

            // The hidden tests really fail on the base commit, and the others pass there.
            const unrelated = await play(env, task.id, [bash('echo "notes" >> README.md'), DONE]);
            expect(unrelated.reward, task.id).toBe(-1);
            expect(unrelated.info.failToPass, task.id).toEqual({ passed: [], failed: task.failToPass });
            expect(unrelated.info.passToPass, task.id).toEqual({ passed: task.passToPass, failed: [] });

            const solved = await play(env, task.id, task.oracle);
            expect(solved.reward, `${task.id}: ${solved.info.reason}`).toBe(1);
            expect(solved.info).toMatchObject({
              resolved: true,
              commandErrors: 0,
              failToPass: { passed: task.failToPass, failed: [] },
              passToPass: { passed: task.passToPass, failed: [] },
            });
            expect(solved.info.reason).toBeUndefined();
          }
        }),
      );
    } finally {
      await Promise.all(envs.map((e) => e.close()));
    }
  }, 120_000);
});

describe.skipIf(!hasBwrap)('swe environment: episodes', () => {
  const fahrenheit = () => taskOf('fahrenheit-sign');

  it('scores −1 for a fix that breaks a PASS_TO_PASS test', async () => {
    const env = new SweEnvironment(suite);
    const task = fahrenheit();
    const r = await play(env, task.id, [
      task.oracle[0],
      bash(`sed -i 's/fahrenheit - 32/fahrenheit - 31/' ${packageOf(task)}/units.py`),
      DONE,
    ]);
    expect(r.reward).toBe(-1);
    expect(r.info.failToPass).toEqual({ passed: task.failToPass, failed: [] });
    expect(r.info.passToPass).toEqual({ passed: [], failed: task.passToPass });
    expect(r.info.reason).toMatch(/1 of \d+ listed tests did not pass: .*test_to_celsius/);
    await env.close();
  });

  it('scores new files of the diff', async () => {
    const env = new SweEnvironment(suite);
    const task = fahrenheit();
    const pkg = packageOf(task);
    const r = await play(env, task.id, [
      {
        content: null,
        tool_calls: [call('write_file', { path: `${pkg}/offsets.py`, content: 'OFFSET = 32\n' })],
      },
      bash(
        `sed -i -e 's|celsius \\* 9 / 5 - 32|celsius * 9 / 5 + OFFSET|' -e '1a from .offsets import OFFSET' ${pkg}/units.py`,
      ),
      DONE,
    ]);
    expect(r.info.patch).toContain(`+++ b/${pkg}/offsets.py`);
    expect(r.info.patch).toContain('new file mode');
    expect(r).toMatchObject({ reward: 1, info: { resolved: true, commandErrors: 0 } });
    await env.close();
  });

  it('scores on a fresh copy: edits of the hidden tests and of the runner do not count', async () => {
    const env = new SweEnvironment(suite);
    const task = fahrenheit();
    const fake = task.failToPass.map((n) => `print(${JSON.stringify(`PASSED ${n}`)})`).join('\n');
    const write = (path: string, content: string) => call('write_file', { path, content });
    const r = await play(env, task.id, [
      {
        content: null,
        tool_calls: [
          write('tests/test_units.py', 'def test_boiling():\n    pass\n'),
          write('run_tests.py', `${fake}\n`),
          write('tests/_clawray_runner.py', `${fake}\n`),
        ],
      },
      DONE,
    ]);
    expect(r.reward).toBe(-1);
    expect(r.info.failToPass!.failed).toEqual(task.failToPass);
    await env.close();
  });

  it('evaluates mid-episode without ending it or touching the agent’s index', async () => {
    const env = new SweEnvironment(suite);
    const task = fahrenheit();
    await env.reset(task.id);
    const before = await env.evaluate();
    expect(before).toMatchObject({ reward: -1, info: { resolved: false, steps: 0 } });
    expect((await env.step(task.oracle[0])).done).toBe(false);
    const mid = await env.evaluate();
    expect(mid).toMatchObject({ reward: 1, info: { resolved: true, steps: 1 } });
    const status = await env.step(bash('git status --porcelain'));
    expect(status.done).toBe(false);
    expect(status.observation.text).toMatch(/^ M \w+\/units\.py$/m);
    const end = await env.step(DONE);
    expect(end).toMatchObject({ reward: 1, done: true, info: { steps: 3 } });
    expect(await env.evaluate()).toEqual({ reward: 1, info: end.info });
    await expect(env.step(DONE)).rejects.toThrow(/reset/);
    await env.close();
  });

  it('scores −1 when the diff cannot be taken or does not apply', async () => {
    const env = new SweEnvironment(suite);
    const task = fahrenheit();
    const r = await play(env, task.id, [task.oracle[0], bash('rm -rf .git'), DONE]);
    expect(r.reward).toBe(-1);
    expect(r.info.reason).toMatch(/could not take the diff/);
    await env.close();

    const snapshot = join(scratch, 'snapshot');
    const base = await createSnapshot({ repo: task.repo, baseCommit: task.baseCommit }, snapshot);
    const options: GraderOptions = {
      limits: DEFAULT_SANDBOX_LIMITS,
      testTimeoutMs: 60_000,
      gitTimeoutMs: 60_000,
      maxPatchBytes: 1 << 20,
      maxTestOutputBytes: 1 << 20,
    };
    const stale =
      'diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-no such line\n+x\n';
    const grade = await gradePatch(task, snapshot, base, stale, scratch, options);
    expect(grade.resolved).toBe(false);
    expect(grade.reason).toMatch(/the diff does not apply/);
    expect((await gradePatch(task, snapshot, base, task.patch!, scratch, options)).resolved).toBe(true);
    expect(readdirSync(scratch).filter((f) => f.startsWith('grade-'))).toEqual([]);
  });

  it('ends after maxSteps with the state scored, and after too many malformed calls with −1', async () => {
    const task = fahrenheit();
    const env = new SweEnvironment(suite, { settings: { maxSteps: 2, maxParseErrors: 1 } });
    const r = await play(env, task.id, [bash('true'), task.oracle[0]]);
    expect(r).toMatchObject({ reward: 1, done: true, info: { truncated: true, resolved: true, steps: 2 } });

    await env.reset(task.id);
    const bad = [
      { id: 'a', type: 'function', function: { name: 'bash', arguments: '{"command": ' } },
      { id: 'b', type: 'function', function: { name: 'rm_rf', arguments: '{}' } },
    ] as ToolCall[];
    const m = await env.step({ content: null, tool_calls: bad });
    expect(m).toMatchObject({ reward: -1, done: true, info: { malformedToolCalls: 2, resolved: false } });
    expect(m.info.reason).toMatch(/malformed/);
    const tools = m.observation.messages.filter((x) => x.role === 'tool');
    expect(tools.map((t) => t.tool_call_id)).toEqual(['a', 'b']);
    expect(tools[1].content).toContain("unknown tool 'rm_rf'");
    await env.close();
  });

  it('answers malformed calls with an error and runs the tools in the sandbox', async () => {
    const task = fahrenheit();
    const env = new SweEnvironment(suite, { settings: { maxOutputChars: 300, maxCallsPerStep: 6 } });
    await env.reset(task.id);
    const outside = mkdtempSync(join(tmpdir(), 'clawray-swe-outside-'));
    const r = await env.step({
      content: null,
      tool_calls: [
        call('view_file', { path: 'README.md' }),
        call('bash', { command: 'seq 1 2000; exit 3' }),
        call('bash', { command: 'id -u; cat /etc/hostname; echo "$HOME"; ls /root 2>&1 | head -1' }),
        call('bash', { command: `ln -s ${outside} escape && ls escape/` }),
        call('write_file', { path: 'escape/pwned', content: 'x' }),
        call('view_file', { path: 'README.md', start_line: 3, end_line: 3, extra: 1 }),
        call('bash', { command: 'echo over the limit' }),
      ],
    });
    const out = r.observation.messages.filter((m) => m.role === 'tool').map((m) => m.content);
    expect(out[0]).toMatch(/^\s+1\t# \w+\n/);
    expect(out[0]).toContain(VISIBLE_TEST_CMD);
    expect(out[1]).toContain('characters cut');
    expect(out[1]).toMatch(/^1\n2\n/);
    expect(out[1]).toMatch(/2000\n\[exit code 3\]$/);
    expect(out[2]).toMatch(/^\d+\nsandbox\n\/tmp\n.*\n\[exit code 0\]$/);
    expect(out[2]).not.toMatch(/^0$/m);
    expect(out[3]).toMatch(/exit code [^0]/);
    expect(out[4]).toMatch(/exit code [^0]/);
    expect(existsSync(join(outside, 'pwned'))).toBe(false);
    expect(out[5]).toMatch(/^Error: malformed tool call: bad arguments for view_file/);
    expect(out[6]).toMatch(/at most 6 tool calls/);
    expect(r.info).toMatchObject({
      toolCalls: 7,
      malformedToolCalls: 1,
      commandErrors: 3,
      refusedToolCalls: 1,
    });
    expect(r.done).toBe(false);
    rmSync(outside, { recursive: true, force: true });
    await env.close();
  });

  it('walks its split in a seeded order, validates settings and cleans up on close', async () => {
    const heldout = new Set(suite.filter((t) => t.split === 'heldout').map((t) => t.id));
    const workDir = join(scratch, 'work');
    const a = sweTrack.createEnvironment(suite, { split: 'heldout', seed: 3, settings: { workDir } });
    const b = new SweEnvironment(suite, { split: 'heldout', seed: 3 });
    const order: string[] = [];
    for (let i = 0; i < heldout.size + 1; i++) {
      await a.reset();
      await b.reset();
      const id = (a as SweEnvironment).currentTask!.id;
      expect(b.currentTask!.id).toBe(id);
      expect(heldout.has(id)).toBe(true);
      order.push(id);
    }
    expect(new Set(order).size).toBe(heldout.size);
    const first = await a.reset(suite[0].id);
    expect(first.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(first.text).toContain(suite[0].problemStatement);
    expect(first.tools.map((t) => t.function.name)).toEqual(['bash', 'view_file', 'write_file']);
    const workspace = (a as SweEnvironment).workspace!;
    expect(existsSync(join(workspace, '.git'))).toBe(true);
    // The hidden tests are not in the agent's workspace.
    expect(existsSync(join(workspace, 'tests', '_clawray_runner.py'))).toBe(false);
    await expect(a.reset('nope')).rejects.toThrow(/no task/);
    // What the agent locks up does not stop the cleanup.
    expect(
      (await a.step(bash('mkdir -p locked/deep && touch locked/deep/f && chmod 0 locked/deep locked'))).done,
    ).toBe(false);
    await a.close();
    await b.close();
    expect(readdirSync(workDir)).toEqual([]);
    await expect(a.reset()).rejects.toThrow(/closed/);

    expect(() => sweTrack.createEnvironment(suite, { settings: { maxSteps: 0 } })).toThrow(ConfigError);
    expect(() => sweTrack.createEnvironment(suite, { settings: { maxSteps: 0 } })).toThrow(/maxSteps/);
    expect(() => sweTrack.createEnvironment(suite, { settings: { maxStep: 3 } })).toThrow(/maxStep/);
    expect(() => sweTrack.createEnvironment(suite, { settings: { workDir: 5 } })).toThrow(/workDir/);
    expect(() => sweTrack.createEnvironment([], {})).toThrow(/no tasks/);
  });

  it('runs tasks loaded from a plain directory snapshot (no base_commit)', async () => {
    const task = taskOf('median-even');
    const dir = join(scratch, 'plain');
    cpSync(task.repo, join(dir, 'repo'), { recursive: true, filter: (src) => !/\/\.git(\/|$)/.test(src) });
    const line = {
      instance_id: 'plain-median',
      repo: 'repo',
      problem_statement: task.problemStatement,
      patch: task.patch,
      test_patch: task.testPatch,
      test_cmd: task.testCmd,
      FAIL_TO_PASS: JSON.stringify(task.failToPass),
      PASS_TO_PASS: JSON.stringify(task.passToPass),
    };
    writeFileSync(join(dir, 'tasks.jsonl'), `${JSON.stringify(line)}\n`);
    const [loaded] = await sweTrack.loadTasks(dir);
    const env = new SweEnvironment([loaded]);
    const solved = await play(env, loaded.id, loaded.oracle);
    expect(solved.reward, solved.info.reason).toBe(1);
    expect(solved.info.baseCommit).toMatch(/^[0-9a-f]{40}$/);
    expect((await play(env, loaded.id, [DO_NOTHING_ACTION])).reward).toBe(-1);
    // The same directory gives the same base commit.
    const again = new SweEnvironment(await loadSweTasks(dir));
    await again.reset();
    expect((await again.evaluate()).info.baseCommit).toBe(solved.info.baseCommit);
    await Promise.all([env.close(), again.close()]);
  });
});
