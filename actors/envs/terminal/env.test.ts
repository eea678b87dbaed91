import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import type { Action, ToolCall, ToolMessage } from '../environment.js';
import { DO_NOTHING_ACTION } from '../track.js';
import { TerminalEnvironment, type TerminalEnvOptions } from './env.js';
import { buildTerminalSuite } from './suite.js';
import { oracleFor, type TerminalTask } from './task.js';

const hasBwrap = spawnSync('bwrap', ['--version']).status === 0;
const suite = buildTerminalSuite();
const byTemplate = (name: string) => suite.find((t) => t.id.startsWith(`${name}-`))!;

function call(name: string, args: unknown, id = 'c1'): ToolCall {
  return { id, type: 'function', function: { name, arguments: JSON.stringify(args) } };
}

function act(...calls: ToolCall[]): Action {
  return { content: null, tool_calls: calls };
}

function toolReplies(messages: readonly { role: string }[]): ToolMessage[] {
  return messages.filter((m): m is ToolMessage => m.role === 'tool');
}

/** One shell command's tool reply. */
async function sh(env: TerminalEnvironment, command: string): Promise<string> {
  const r = await env.step(act(call('shell_exec', { command })));
  return r.observation.text;
}

/** A small task of our own: one test per file that must exist; `$TEST_DIR` carries a helper. */
function fileTask(extra: Partial<TerminalTask> = {}): TerminalTask {
  return {
    id: 'custom-files',
    split: 'train',
    instruction: 'Create the files a, b, c and d.',
    setup: 'echo seeded > seed.txt\n',
    solution: 'touch a b c d\n',
    oracle: oracleFor('touch a b c d\n'),
    runTests: '#!/bin/sh\n. "$TEST_DIR/lib/check.sh"\nfor f in a b c d; do check "$f"; done\n',
    testFiles: {
      'lib/check.sh':
        '# secret-marker-8c1f\ncheck() { if [ -f "/workspace/$1" ]; then echo "PASSED t::$1"; else echo "FAILED t::$1"; fi; }\n',
      'data.bin': new Uint8Array([0, 1, 2, 255]),
    },
    ...extra,
  };
}

function env(options: TerminalEnvOptions = {}): TerminalEnvironment {
  return new TerminalEnvironment(options);
}

/** At most `n` of the wrapped calls run at once. */
function gate(n: number) {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    while (active >= n) await new Promise<void>((resolve) => waiting.push(resolve));
    active++;
    try {
      return await fn();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}

describe.skipIf(!hasBwrap)('terminal environment: the built-in suite', () => {
  const four = gate(4);
  it.concurrent.for(suite.map((t) => t.id))(
    '%s: the oracle gets +1, doing nothing does not',
    async (id, { expect }) => {
      await four(async () => {
        const task = suite.find((t) => t.id === id)!;
        const e = env();
        try {
          const first = await e.reset(id);
          expect(first.messages.at(-1)).toEqual({ role: 'user', content: task.instruction });
          expect(first.tools.map((t) => t.function.name)).toEqual(['shell_exec', 'view', 'write_file']);
          const workspace = e.workspaceDir!;
          let last: Awaited<ReturnType<TerminalEnvironment['step']>> | undefined;
          for (const action of task.oracle) last = await e.step(action);
          expect(last!.done).toBe(true);
          expect(last!.info.tests?.outputTail).toBeDefined();
          expect(last!.reward, JSON.stringify(last!.info.tests)).toBe(1);
          expect(last!.info).toMatchObject({
            parseErrors: 0,
            toolErrors: 0,
            truncated: false,
            endReason: 'answered',
          });
          expect(last!.info.tests).toMatchObject({
            passed: task.testNames!.length,
            total: task.testNames!.length,
          });
          expect(existsSync(workspace)).toBe(false);

          await e.reset(id);
          const nothing = await e.step(DO_NOTHING_ACTION);
          expect(nothing.done).toBe(true);
          expect(nothing.reward).toBeLessThan(1);
          expect(nothing.info.tests!.total).toBe(task.testNames!.length);
        } finally {
          await e.close();
        }
      });
    },
  );
});

describe.skipIf(!hasBwrap)('terminal environment: episodes', () => {
  it('gives 2·(passed/total) − 1 for partial work, with the outcome of each test', async () => {
    const e = env({ tasks: [fileTask()] });
    await e.reset('custom-files');
    await sh(e, 'touch a');
    expect((await e.evaluate()).reward).toBeCloseTo(-0.5);
    await sh(e, 'touch c');
    const end = await e.step({ content: 'Done.' });
    expect(end.reward).toBeCloseTo(0);
    expect(end.info.tests).toMatchObject({
      passed: 2,
      total: 4,
      outcomes: { 't::a': 'passed', 't::b': 'failed', 't::c': 'passed', 't::d': 'failed' },
    });

    const count = byTemplate('count-log');
    const log = /`([^`]+\.log)`/.exec(count.instruction)![1];
    await e.close();
    const b = env();
    await b.reset(count.id);
    await sh(b, `mkdir -p counts && wc -l < ${log} > counts/lines.txt`);
    const partial = await b.step({ content: 'I counted the lines only.' });
    expect(partial.info.tests).toMatchObject({ passed: 1, total: 3 });
    expect(partial.reward).toBeCloseTo(2 / 3 - 1);
    await b.close();
  });

  it('keeps the tests out of the agent’s reach and scores a snapshot', async () => {
    const e = env({ tasks: [fileTask()] });
    await e.reset('custom-files');
    const workspace = e.workspaceDir!;
    const seen = [
      await sh(
        e,
        'grep -rl secret-marker-8c1f /workspace /tmp /etc /root /home 2>/dev/null; ls -la /workspace; env',
      ),
      await sh(
        e,
        'find / -maxdepth 4 -path /proc -prune -o -name check.sh -print 2>/dev/null; echo "[$TEST_DIR]"',
      ),
    ].join('\n');
    expect(seen).not.toContain('secret-marker-8c1f');
    expect(seen).not.toMatch(/check\.sh|clawray-tests|clawray-script/);
    expect(seen).toContain('seed.txt');
    expect(seen).toContain('[]');
    // Planted test scripts and forged results change nothing: the real tests run from a fresh hidden dir.
    await sh(
      e,
      'mkdir -p tests lib && printf "check() { echo PASSED t::\\$1; }\\n" > lib/check.sh && cp lib/check.sh tests/ && ' +
        'printf "echo PASSED t::a; echo PASSED t::b\\n" > run-tests.sh && touch b',
    );
    const before = (await readdir(workspace)).sort();
    const mid = await e.evaluate();
    expect(mid.info.tests).toMatchObject({ passed: 1, total: 4 });
    expect((await readdir(workspace)).sort()).toEqual(before);
    expect(await sh(e, 'ls -A')).not.toMatch(/clawray|__pycache__/);
    const end = await e.step({ content: 'done' });
    expect(end.reward).toBeCloseTo(-0.5);
    await e.close();
  });

  it('confines view and write_file to the workspace', async () => {
    const e = env({ tasks: [fileTask()] });
    await e.reset('custom-files');
    await sh(
      e,
      'ln -s /etc/passwd leak && ln -s / rootlink && ln -s /tmp tmplink && mkdir -p sub && printf "\\0\\1" > blob',
    );
    const replies = toolReplies(
      (
        await e.step(
          act(
            call('view', { path: '../../etc/passwd' }, 'v1'),
            call('view', { path: '/etc/passwd' }, 'v2'),
            call('view', { path: 'leak' }, 'v3'),
            call('view', { path: 'rootlink/etc/hostname' }, 'v4'),
            call('view', { path: 'sub/../seed.txt' }, 'v5'),
            call('view', { path: '/workspace/seed.txt' }, 'v6'),
            call('view', { path: 'missing.txt' }, 'v7'),
            call('view', { path: '.' }, 'v8'),
            call('view', { path: 'blob' }, 'v9'),
          ),
        )
      ).observation.messages,
    );
    const text = Object.fromEntries(replies.map((m) => [m.tool_call_id, m.content]));
    for (const id of ['v1', 'v2', 'v3', 'v4']) expect(text[id], id).toMatch(/^Error: refused: /);
    expect(text.v3).toContain('/etc/passwd');
    expect(text.v5).toBe('seeded\n');
    expect(text.v6).toBe('seeded\n');
    expect(text.v7).toMatch(/^Error: no such file/);
    expect(text.v8).toContain('seed.txt');
    expect(text.v9).toBe('(binary file, 2 bytes)');

    const writes = toolReplies(
      (
        await e.step(
          act(
            call('write_file', { path: '../escape.txt', content: 'x' }, 'w1'),
            call('write_file', { path: '/tmp/escape.txt', content: 'x' }, 'w2'),
            call('write_file', { path: 'tmplink/escape.txt', content: 'x' }, 'w3'),
            call('write_file', { path: 'leak', content: 'x' }, 'w4'),
            call('write_file', { path: 'rootlink/etc/x.txt', content: 'x' }, 'w5'),
            call('write_file', { path: 'sub', content: 'x' }, 'w6'),
            call('write_file', { path: 'deep/er/new.txt', content: 'héllo\n' }, 'w7'),
            call('view', { path: 'deep/er/new.txt' }, 'w8'),
          ),
        )
      ).observation.messages,
    );
    const w = Object.fromEntries(writes.map((m) => [m.tool_call_id, m.content]));
    for (const id of ['w1', 'w2', 'w3', 'w4', 'w5']) expect(w[id], id).toMatch(/^Error: refused: /);
    expect(w.w6).toMatch(/^Error: is a directory/);
    expect(w.w7).toBe('wrote 7 bytes to /workspace/deep/er/new.txt');
    expect(w.w8).toBe('héllo\n');
    const info = (await e.evaluate()).info;
    expect(info).toMatchObject({ toolErrors: 11, parseErrors: 0 });
    await e.close();
  });

  it('answers malformed calls with an error and ends the episode with −1 past the limit', async () => {
    const e = env({ tasks: [fileTask()], maxParseErrors: 2 });
    await e.reset('custom-files');
    const first = await e.step(
      act(
        { id: 'a', type: 'function', function: { name: 'shell_exec', arguments: '{"command": ' } },
        call('shell_exec', { command: 'touch a b c d' }, 'b'),
      ),
    );
    expect(first.done).toBe(false);
    expect(first.info).toMatchObject({ parseErrors: 1, toolCalls: 2 });
    const [bad, good] = toolReplies(first.observation.messages);
    expect(bad).toEqual({
      role: 'tool',
      tool_call_id: 'a',
      name: 'shell_exec',
      content:
        'Error: malformed tool call: the arguments of shell_exec are not valid JSON (1 more malformed calls tolerated)',
    });
    expect(good.content).toBe('[exit code 0]');

    const second = await e.step(
      act(
        call('rm_rf', {}, 'c'),
        call('view', { path: 'a', extra: 1 }, 'd'),
        call('shell_exec', { command: 'true' }, 'e'),
        { type: 'function', function: { name: 'view' } } as unknown as ToolCall,
      ),
    );
    // The work was done (all four files exist), but too many malformed calls forfeit it.
    expect(second).toMatchObject({
      done: true,
      reward: -1,
      info: { parseErrors: 3, endReason: 'parse_errors' },
    });
    expect(second.info.tests).toBeUndefined();
    const replies = toolReplies(second.observation.messages).slice(2);
    expect(replies.map((m) => m.tool_call_id)).toEqual(['c', 'd', 'e', 'call_invalid_2_3']);
    expect(replies[0].content).toContain("unknown tool 'rm_rf'");
    expect(replies[0].name).toBeUndefined();
    expect(replies[1].content).toMatch(/bad arguments for view: .*extra.*the episode ends/);
    expect(replies[2].content).toBe('Error: not run: the episode has ended.');
    expect((await e.evaluate()).reward).toBe(-1);
    await expect(e.step({ content: 'again' })).rejects.toThrow(/reset/);
    await e.close();
  });

  it('ends at the step limit and still scores the work', async () => {
    const task = byTemplate('make-tree');
    const e = env({ maxSteps: 2 });
    await e.reset(task.id);
    const one = await e.step(act(call('shell_exec', { command: 'pwd; echo oops >&2; exit 3' })));
    expect(one.done).toBe(false);
    expect(one.observation.text).toBe('/workspace\n[stderr]\noops\n[exit code 3]');
    expect(one.info.toolErrors).toBe(1);
    const two = await e.step(task.oracle[0]);
    expect(two).toMatchObject({
      done: true,
      reward: 1,
      info: { truncated: true, endReason: 'max_steps', turns: 2 },
    });
    await e.close();
  });

  it('evaluates mid-episode without ending it or touching the workspace', async () => {
    const task = byTemplate('edit-config');
    const e = env();
    await expect(e.evaluate()).rejects.toThrow(/before reset/);
    await e.reset(task.id);
    const start = await e.evaluate();
    expect(start.reward).toBeCloseTo(-0.5);
    expect(start.info.tests).toMatchObject({ passed: 1, total: 4, exitCode: 0, timedOut: false });
    await e.step(task.oracle[0]);
    const solved = await e.evaluate();
    expect(solved.reward).toBe(1);
    expect(solved.info.turns).toBe(1);
    expect(await sh(e, 'ls -A app')).toBe('config.ini\n[exit code 0]');
    const end = await e.step({ content: 'done' });
    expect(end.reward).toBe(1);
    expect((await e.evaluate()).reward).toBe(1);
    await e.close();
  });

  it('removes workspaces on reset, at the end and on close', async () => {
    const e = env({ tasks: [fileTask()] });
    await e.reset('custom-files');
    const first = e.workspaceDir!;
    expect(existsSync(`${first}/seed.txt`)).toBe(true);
    expect((await readdir(first)).filter((f) => f.includes('clawray'))).toEqual([]);
    await e.reset('custom-files');
    const second = e.workspaceDir!;
    expect(existsSync(first)).toBe(false);
    await e.close();
    expect(existsSync(second)).toBe(false);
    await expect(e.reset()).rejects.toThrow(/closed/);
  });

  it('limits commands: wall clock, output shown, the task’s time budget', async () => {
    // A task budget of 3 s: the first two commands (the output one took 0.55 s beside busy test
    // workers) leave the slow one its whole 1.5 s, and the third crosses the budget.
    const e = env({ tasks: [fileTask({ agentTimeoutSec: 3 })], commandTimeoutMs: 1500, maxOutputChars: 300 });
    await e.reset('custom-files');
    const long = await sh(e, 'seq 1 20000');
    expect(long.length).toBeLessThan(400);
    expect(long).toMatch(/^1\n2\n[\s\S]*characters omitted[\s\S]*19999\n20000\n\[exit code 0\]$/);
    const slow = await e.step(act(call('shell_exec', { command: 'touch a; sleep 5' })));
    expect(slow.observation.text).toContain('[timed out after 1500 ms');
    expect(slow.done).toBe(false);
    const out = await e.step(
      act(call('shell_exec', { command: 'touch b; sleep 5' }), call('view', { path: 'a' }, 'c2')),
    );
    expect(out).toMatchObject({ done: true, info: { truncated: true, endReason: 'agent_timeout' } });
    expect(out.observation.text).toContain('[timed out after');
    expect(out.observation.text).toContain('Error: not run: the episode has ended.');
    expect(out.info.agentTimeMs).toBeGreaterThanOrEqual(3000);
    expect(out.reward).toBeCloseTo(0);
    await e.close();
  });

  it('fails reset when the setup fails, and walks its split in a seeded order', async () => {
    const broken = env({ tasks: [fileTask({ setup: 'echo cannot >&2; exit 4\n' })] });
    await expect(broken.reset('custom-files')).rejects.toThrow(
      /setup of task 'custom-files' failed \(exit 4\): cannot/,
    );
    expect(broken.workspaceDir).toBeUndefined();
    await expect(broken.reset('nope')).rejects.toThrow(/no task 'nope'/);
    await broken.close();

    const heldout = new Set(suite.filter((t) => t.split === 'heldout').map((t) => t.instruction));
    const [a, b] = [env({ split: 'heldout', seed: 3 }), env({ split: 'heldout', seed: 3 })];
    const order: string[] = [];
    for (let i = 0; i < 3; i++) {
      const [oa, ob] = [await a.reset(), await b.reset()];
      expect(oa.text).toBe(ob.text);
      expect(heldout.has(oa.text)).toBe(true);
      order.push(oa.text);
    }
    expect(new Set(order).size).toBe(3);
    await Promise.all([a.close(), b.close()]);
  });
});
