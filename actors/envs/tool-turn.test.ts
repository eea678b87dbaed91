import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Action, ChatMessage } from './environment.js';
import { ToolTurn, turnCallId } from './tool-turn.js';

const TOOLS = { echo: z.object({ text: z.string() }) };

function echo(id: string, args: string) {
  return { id, type: 'function', function: { name: 'echo', arguments: args } };
}

function turn(maxParseErrors: number, malformedNote?: (left: number) => string) {
  return new ToolTurn({
    env: 'demo',
    tools: TOOLS,
    maxParseErrors,
    parseErrorCount: 'badCalls',
    malformedNote,
  });
}

describe('ToolTurn', () => {
  it('opens a turn: checks the action, adds it to the conversation, returns its raw calls', () => {
    const messages: ChatMessage[] = [];
    const t = turn(1);
    const calls = [echo('c1', '{"text":"hi"}')];
    expect(t.open({ content: null, tool_calls: calls } as Action, messages)).toBe(calls);
    expect(t.open({ content: 'done' }, messages)).toEqual([]);
    expect(messages).toEqual([
      { role: 'assistant', content: null, tool_calls: calls },
      { role: 'assistant', content: 'done' },
    ]);
    expect(() => t.open(null as unknown as Action, messages)).toThrow(
      new TypeError('demo env: action must be an object'),
    );
    expect(messages).toHaveLength(2);
  });

  it('reads a good call: counted, parsed, nothing charged', () => {
    const counts = { toolCalls: 0, badCalls: 0 };
    const read = turn(1).read(echo('c1', '{"text":"hi"}'), 'c1', counts);
    expect(read).toEqual({ ok: true, call: { name: 'echo', args: { text: 'hi' } } });
    expect(counts).toEqual({ toolCalls: 1, badCalls: 0 });
  });

  it('charges a bad call under the limit and answers it with the error and the note', () => {
    const counts = { toolCalls: 0, badCalls: 0 };
    const t = turn(2, (left) => ` (${left} left)`);
    const read = t.read(echo('c1', '{not json'), 'c1', counts);
    expect(read).toEqual({
      ok: false,
      reply: {
        role: 'tool',
        tool_call_id: 'c1',
        name: 'echo',
        content: 'Error: malformed tool call: the arguments of echo are not valid JSON (1 left)',
      },
    });
    expect(counts).toEqual({ toolCalls: 1, badCalls: 1 });
    expect(t.limitPassed(counts)).toBe(false);
  });

  it('ends the episode once more than maxParseErrors calls were bad', () => {
    const counts = { toolCalls: 0, badCalls: 0 };
    const t = turn(1, (left) => (left < 0 ? ' [ends]' : ''));
    const bad = { id: 'x', function: { name: 'nope', arguments: '{}' } };
    const first = t.read(bad, 'x', counts);
    expect(t.limitPassed(counts)).toBe(false);
    const second = t.read(bad, 'x', counts);
    expect(t.limitPassed(counts)).toBe(true);
    expect(first.ok || first.reply.content).toBe(
      "Error: malformed tool call: unknown tool 'nope'; the tools are echo",
    );
    expect(second.ok || second.reply.content).toBe(
      "Error: malformed tool call: unknown tool 'nope'; the tools are echo [ends]",
    );
    expect(counts).toEqual({ toolCalls: 2, badCalls: 2 });
  });

  it('never ends the episode with an infinite limit, and adds no note by default', () => {
    const counts = { toolCalls: 0, badCalls: 0 };
    const t = turn(Number.POSITIVE_INFINITY);
    for (let i = 0; i < 50; i++) t.read('junk', `call_${i}`, counts);
    expect(t.limitPassed(counts)).toBe(false);
    const read = t.read('junk', 'z', counts);
    expect(read.ok || read.reply).toEqual({
      role: 'tool',
      tool_call_id: 'z',
      content:
        'Error: malformed tool call: a tool call needs an id and function {name, arguments (a JSON string)}',
    });
  });

  it('answers a call without a usable id under one made from its place', () => {
    expect(turnCallId({ id: 'c7' }, 3, 1)).toBe('c7');
    expect(turnCallId('junk', 3, 1)).toBe('call_invalid_3_1');
  });
});
