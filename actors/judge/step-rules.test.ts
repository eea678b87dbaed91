import { describe, expect, it } from 'vitest';
import { JudgeVoter } from './judge-voter.js';
import type { JudgeInput } from './prompts.js';
import { applyStepRule, renderToolCalls, toolCallsIn } from './step-rules.js';

const call = (expression: string) =>
  renderToolCalls([{ function: { name: 'calculator', arguments: JSON.stringify({ expression }) } }]);
const prompt = [
  { role: 'system', content: 'Use the calculator.' },
  { role: 'user', content: 'Sum 45 and 67.' },
];
const callTurn = (response: string, reply: string): JudgeInput => ({
  messages: prompt,
  response,
  nextState: { role: 'tool', content: reply },
  reference: { answer: '112' },
});
const answerTurn = (response: string, toolResult?: string): JudgeInput => ({
  messages: [
    ...prompt,
    ...(toolResult === undefined
      ? []
      : [
          { role: 'assistant', content: '' },
          { role: 'tool', content: toolResult },
        ]),
  ],
  response,
  nextState: null,
  reference: { answer: '112' },
});

describe('toolcall-step', () => {
  it('scores a call +1 when its result is the answer', () => {
    expect(applyStepRule('toolcall-step', callTurn(call('45+67'), '112'))).toMatchObject({ score: 1 });
  });
  it("scores a well-formed call on the question's numbers with a wrong result 0", () => {
    expect(applyStepRule('toolcall-step', callTurn(call('45*67'), '3015')).score).toBe(0);
    // Without a reference answer the rule cannot tell right from wrong: 0 for a sound call.
    const { reference: _, ...noReference } = callTurn(call('45+67'), '112');
    expect(applyStepRule('toolcall-step', noReference).score).toBe(0);
  });
  it('scores −1 for malformed calls, foreign numbers and tool errors', () => {
    expect(
      applyStepRule('toolcall-step', callTurn('<tool_call>\n{"name": "calc\n</tool_call>', '')).score,
    ).toBe(-1);
    expect(applyStepRule('toolcall-step', callTurn(call('45+76'), '121')).score).toBe(-1);
    expect(applyStepRule('toolcall-step', callTurn(call('45+'), 'Error: bad expression')).score).toBe(-1);
  });
  it("scores the answer by whether it reports the tool's result", () => {
    expect(applyStepRule('toolcall-step', answerTurn('\\boxed{3015}', '3015')).score).toBe(1);
    expect(applyStepRule('toolcall-step', answerTurn('\\boxed{3105}', '3015')).score).toBe(-1);
    expect(applyStepRule('toolcall-step', answerTurn('3015', '3015')).score).toBe(-1);
    expect(applyStepRule('toolcall-step', answerTurn('\\boxed{112}')).score).toBe(0);
  });
  it('reads calls with string or object arguments', () => {
    expect(
      toolCallsIn(
        '<tool_call>{"name": "calculator", "arguments": "{\\"expression\\": \\"1+2\\"}"}</tool_call>',
      ),
    ).toEqual([{ name: 'calculator', arguments: { expression: '1+2' } }]);
    expect(toolCallsIn(`${call('1+2')}\n<tool_call>[1]</tool_call>`)).toEqual([
      { name: 'calculator', arguments: { expression: '1+2' } },
      null,
    ]);
  });
  it('is a rule backend of JudgeVoter, and a bad rule name is refused', async () => {
    const voter = new JudgeVoter({ backend: 'rule', rule: 'toolcall-step' });
    expect(await voter.ready()).toEqual({ backend: 'rule', rule: 'toolcall-step' });
    const vote = await voter.vote(callTurn(call('45+67'), '112'));
    expect(vote).toMatchObject({ score: 1, backend: 'rule', text: "the tool's result is the answer" });
    expect(vote.reward).toBeUndefined();
    expect(() => new JudgeVoter({ backend: 'rule', rule: 'toolcall-steps' as never })).toThrow(/rule/);
  });
});
