import { describe, expect, it } from 'vitest';
import { actionToMessage } from './environment.js';

describe('environment', () => {
  it('turns an action into an assistant message', () => {
    expect(actionToMessage({ content: 'hi' })).toEqual({ role: 'assistant', content: 'hi' });
    expect(actionToMessage({ tool_calls: [] })).toEqual({ role: 'assistant', content: null });
    const call = { id: 'c1', type: 'function' as const, function: { name: 'f', arguments: '{}' } };
    expect(actionToMessage({ content: null, tool_calls: [call] })).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [call],
    });
  });
});
