import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import type { Action, ToolCall } from '../environment.js';
import { ToolcallEnvironment } from './env.js';
import { DocumentStore } from './lookup.js';
import { buildTaskSuite, taskSplit } from './tasks.js';
import { lastBoxed, verifyAnswer } from './verifier.js';

const hasBwrap = spawnSync('bwrap', ['--version']).status === 0;
const suite = buildTaskSuite();
const inProcess = suite.filter((t) => t.kind !== 'python' && t.kind !== 'js');
const codeTasks = suite.filter((t) => t.kind === 'python' || t.kind === 'js');

function call(name: string, args: unknown, id = 'c1'): ToolCall {
  return { id, type: 'function', function: { name, arguments: JSON.stringify(args) } };
}

async function runOracle(env: ToolcallEnvironment, taskId: string) {
  const task = suite.find((t) => t.id === taskId)!;
  const obs = await env.reset(taskId);
  expect(obs.messages.at(-1)).toEqual({ role: 'user', content: task.question });
  expect(obs.tools.map((t) => t.function.name).sort()).toEqual([
    'calculator',
    'lookup',
    'run_js',
    'run_python',
  ]);
  let last: Awaited<ReturnType<ToolcallEnvironment['step']>> | undefined;
  for (const [i, action] of task.oracle.entries()) {
    last = await env.step(action);
    if (i < task.oracle.length - 1) {
      expect(last.done).toBe(false);
      expect(last.reward).toBe(0);
      const toolMsg = last.observation.messages.at(-1)!;
      const toolText = toolMsg.content ?? '';
      expect(toolMsg.role).toBe('tool');
      // The tool really produced the answer (not only the scripted final message).
      if (i === task.oracle.length - 2) {
        if (task.kind === 'lookup') expect(toolText).toContain(task.answer);
        else expect(toolText.trim()).toBe(task.answer);
      }
    }
  }
  expect(last!.done).toBe(true);
  expect(last!.info).toMatchObject({ correct: true, malformedToolCalls: 0, toolErrors: 0, truncated: false });
  return last!.reward;
}

describe('toolcall task suite', () => {
  it('is deterministic, with unique ids and disjoint splits covering every kind', () => {
    expect(buildTaskSuite()).toEqual(suite);
    expect(new Set(suite.map((t) => t.id)).size).toBe(suite.length);
    const train = taskSplit('train');
    const heldout = taskSplit('heldout');
    expect(train.length + heldout.length).toBe(suite.length);
    const trainIds = new Set(train.map((t) => t.id));
    const trainQuestions = new Set(train.map((t) => t.question));
    expect(heldout.some((t) => trainIds.has(t.id) || trainQuestions.has(t.question))).toBe(false);
    const kinds = ['arithmetic', 'lookup', 'lookup_calc', 'python', 'js'];
    expect([...new Set(train.map((t) => t.kind))].sort()).toEqual([...kinds].sort());
    expect([...new Set(heldout.map((t) => t.kind))].sort()).toEqual([...kinds].sort());
    expect(taskSplit('heldout').map((t) => t.id)).toEqual(heldout.map((t) => t.id));
    // A task's split does not depend on how many others were generated.
    const bigger = new Map(buildTaskSuite({ perTemplate: 9 }).map((t) => [t.id, t.split]));
    for (const t of suite) if (bigger.has(t.id)) expect(bigger.get(t.id)).toBe(t.split);
    expect(buildTaskSuite({ seed: 7 }).map((t) => t.id)).not.toEqual(suite.map((t) => t.id));
  });
});

describe('toolcall environment: oracles', () => {
  const env = new ToolcallEnvironment();
  it.each(inProcess.map((t) => [t.id]))('oracle of %s gets +1', async (id) => {
    expect(await runOracle(env, id)).toBe(1);
  });
  it.skipIf(!hasBwrap).each(codeTasks.map((t) => [t.id]))(
    'oracle of %s gets +1 through the sandbox',
    async (id) => {
      expect(await runOracle(env, id)).toBe(1);
    },
  );
});

describe('toolcall environment: episodes', () => {
  const task = suite.find((t) => t.kind === 'arithmetic')!;

  it('gives −1 to a do-nothing agent and to a wrong box', async () => {
    const env = new ToolcallEnvironment();
    await env.reset(task.id);
    const r = await env.step({ content: 'I do not know.' });
    expect(r).toMatchObject({ reward: -1, done: true, info: { correct: false, turns: 1 } });
    expect(r.info.answer).toBeUndefined();
    await expect(env.step({ content: 'again' })).rejects.toThrow(/reset/);
    await env.reset(task.id);
    expect((await env.step({ content: `\\boxed{${task.answer}0}` })).reward).toBe(-1);
    await env.reset(task.id);
    expect((await env.step({ content: `\\boxed{1} no, \\boxed{ ${task.answer} }` })).reward).toBe(1);
  });

  it('ends after 16 turns of tool calls with −1', async () => {
    const env = new ToolcallEnvironment();
    await env.reset(task.id);
    for (let turn = 1; turn <= 16; turn++) {
      const r = await env.step({
        content: null,
        tool_calls: [call('calculator', { expression: '1+1' }, `c${turn}`)],
      });
      expect(r.info.turns).toBe(turn);
      if (turn < 16) {
        expect(r.done).toBe(false);
      } else {
        expect(r).toMatchObject({ done: true, reward: -1, info: { truncated: true, toolCalls: 16 } });
      }
    }
    await expect(env.step({ content: `\\boxed{${task.answer}}` })).rejects.toThrow();
  });

  it('answers malformed tool calls with an error message and counts them', async () => {
    const env = new ToolcallEnvironment();
    await env.reset(task.id);
    const bad = [
      { id: 'a', type: 'function', function: { name: 'calculator', arguments: '{"expression": ' } },
      { id: 'b', type: 'function', function: { name: 'rm_rf', arguments: '{}' } },
      { id: 'c', type: 'function', function: { name: 'calculator', arguments: '{"expr": "1"}' } },
      { id: 'd', type: 'function', function: { name: 'lookup', arguments: '[1]' } },
      { type: 'function', function: { name: 'calculator' } },
      'not a call',
      call('calculator', { expression: '1/0' }, 'e'),
      call('calculator', { expression: '6*7' }, 'f'),
    ] as unknown as ToolCall[];
    const r = await env.step({ content: null, tool_calls: bad });
    expect(r.done).toBe(false);
    expect(r.info).toMatchObject({ toolCalls: 8, malformedToolCalls: 6, toolErrors: 1 });
    const tools = r.observation.messages.filter((m) => m.role === 'tool');
    expect(tools).toHaveLength(8);
    expect(tools.slice(0, 6).every((m) => m.content.startsWith('Error: malformed tool call'))).toBe(true);
    expect(tools.map((m) => m.tool_call_id).slice(0, 4)).toEqual(['a', 'b', 'c', 'd']);
    expect(tools[1].content).toContain("unknown tool 'rm_rf'");
    expect(tools[6].content).toBe('Error: division by zero');
    expect(tools[7]).toEqual({ role: 'tool', tool_call_id: 'f', name: 'calculator', content: '42' });
    const end = await env.step({ content: `\\boxed{${task.answer}}` });
    expect(end).toMatchObject({ reward: 1, done: true, info: { malformedToolCalls: 6 } });
  });

  it('refuses tool calls past the budget', async () => {
    const env = new ToolcallEnvironment({ maxToolCalls: 2 });
    await env.reset(task.id);
    const calls = [1, 2, 3].map((i) => call('calculator', { expression: `${i}` }, `c${i}`));
    const r = await env.step({ content: null, tool_calls: calls });
    expect(r.info).toMatchObject({ toolCalls: 3, overBudgetToolCalls: 1 });
    expect(r.observation.text).toContain('budget');
  });

  it('walks its split in a seeded order and rejects unknown ids', async () => {
    const a = new ToolcallEnvironment({ split: 'heldout', seed: 3 });
    const b = new ToolcallEnvironment({ split: 'heldout', seed: 3 });
    const heldout = new Set(taskSplit('heldout').map((t) => t.question));
    for (let i = 0; i < 5; i++) {
      const [oa, ob] = [await a.reset(), await b.reset()];
      expect(oa.text).toBe(ob.text);
      expect(heldout.has(oa.text)).toBe(true);
    }
    await expect(a.reset('nope')).rejects.toThrow(/no task/);
    await a.close();
    await expect(a.reset()).rejects.toThrow(/closed/);
  });

  it.skipIf(!hasBwrap)('reports a failing program as a tool error', async () => {
    const env = new ToolcallEnvironment();
    await env.reset(task.id);
    const r = await env.step({
      content: null,
      tool_calls: [call('run_python', { code: 'import sys\nprint("hi")\nsys.exit(3)' })],
    } satisfies Action);
    expect(r.info.toolErrors).toBe(1);
    expect(r.observation.text).toContain('hi');
    expect(r.observation.text).toContain('[exit code 3]');
  });
});

describe('verifier and lookup', () => {
  it('reads the last complete box with nested braces', () => {
    expect(lastBoxed('\\boxed{1} then \\boxed{\\frac{1}{2}}')).toBe('\\frac{1}{2}');
    expect(lastBoxed('\\boxed{2} \\boxed{unclosed')).toBe('2');
    expect(lastBoxed('none')).toBeUndefined();
    expect(verifyAnswer(null, '1')).toEqual({ reward: -1, correct: false, answer: undefined });
    expect(verifyAnswer('\\boxed{Velmora}', 'velmora').reward).toBe(-1);
  });

  it('ranks the passage holding the fact first', () => {
    const store = new DocumentStore();
    expect(store.search('Mount Taskel height')[0].passage.id).toBe('doc-003');
    expect(store.search('comet Serevin orbital period')[0].passage.id).toBe('doc-008');
    expect(store.lookup('zzzz qqqq')).toBe('No passages found.');
    expect(store.search('Quessia', 2)).toHaveLength(2);
  });
});

describe('offered tools', () => {
  it('offers only the tools named in settings and treats the others as unknown', async () => {
    const { toolcallTrack } = await import('./track.js');
    const tasks = buildTaskSuite().slice(0, 3);
    const env = toolcallTrack.createEnvironment(tasks, { settings: { tools: ['calculator'] } });
    const obs = await env.reset(tasks[0].id);
    expect(obs.tools.map((t) => t.function.name)).toEqual(['calculator']);
    const r = await env.step({
      content: null,
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'run_js', arguments: '{"code":"1"}' } }],
    });
    const reply = r.observation.messages.at(-1) as { content: string };
    expect(reply.content).toMatch(/unknown tool 'run_js'; the tools are calculator/);
    expect(() => toolcallTrack.createEnvironment(tasks, { settings: { tools: ['shell'] } })).toThrow(/tools/);
    await env.close();
  });
});
