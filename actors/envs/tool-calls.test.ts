import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MalformedToolCall, parseToolCall, toolCallId, toolReply } from './tool-calls.js';

const tools = { add: z.strictObject({ a: z.number(), b: z.number() }), ping: z.strictObject({}) };
const call = (name: string, args: string, id = 'c1') => ({
  id,
  type: 'function',
  function: { name, arguments: args },
});

function malformed(raw: unknown): MalformedToolCall {
  try {
    parseToolCall(raw, tools);
  } catch (e) {
    if (e instanceof MalformedToolCall) return e;
    throw e;
  }
  throw new Error('expected a MalformedToolCall');
}

describe('parseToolCall', () => {
  it('returns the name and the parsed arguments; empty arguments mean {}', () => {
    expect(parseToolCall(call('add', '{"a":1,"b":2}'), tools)).toEqual({ name: 'add', args: { a: 1, b: 2 } });
    expect(parseToolCall(call('ping', ''), tools)).toEqual({ name: 'ping', args: {} });
  });

  it('says what is wrong, naming the tool once it is known', () => {
    expect(malformed({ function: { name: 'add' } }).message).toMatch(/needs an id and function/);
    expect(malformed(call('mul', '{}'))).toMatchObject({
      message: "unknown tool 'mul'; the tools are add, ping",
      toolName: undefined,
    });
    expect(malformed(call('toString', '{}')).message).toMatch(/unknown tool 'toString'/);
    expect(malformed(call('add', '{"a":1,'))).toMatchObject({
      message: 'the arguments of add are not valid JSON',
      toolName: 'add',
    });
    expect(malformed(call('add', '{"a":"1","b":2,"c":3}')).message).toMatch(
      /^bad arguments for add: a: .*; .*c/,
    );
  });

  it('answers with the call id, or a fallback for a call without a usable one', () => {
    expect(toolCallId(call('add', '{}', 'x9'), 'fallback')).toBe('x9');
    expect(toolCallId({ id: '' }, 'fallback')).toBe('fallback');
    expect(toolCallId(null, 'fallback')).toBe('fallback');
    expect(toolReply('x9', 'ok', 'add')).toEqual({
      role: 'tool',
      tool_call_id: 'x9',
      name: 'add',
      content: 'ok',
    });
    expect(toolReply('x9', 'bad')).toEqual({ role: 'tool', tool_call_id: 'x9', content: 'bad' });
  });
});
