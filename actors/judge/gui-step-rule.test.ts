/**
 * `gui-step` on judge inputs shaped as the job builds them (jobs/rl/judging.ts stepInput): the
 * turn's prompt messages as the gui environment wrote them (env.ts: the task's user message is
 * the instruction and the page; each call's tool reply, the last one with the page after it),
 * the response with its calls rendered as `<tool_call>` blocks, the next state the tool reply.
 * The page texts are what the environment printed for examples/gui's Size page.
 */
import { describe, expect, it } from 'vitest';
import type { JudgeInput } from './prompts.js';
import { applyStepRule, STEP_RULES } from './step-rules.js';
import { renderToolCalls } from './turn-input.js';

const SYSTEM = { role: 'system', content: 'Fill in the page.' } as const;
const HEADER = 'Page "Size": viewport 800×600 px, scrolled to (0, 0) of 800×600. Accessibility tree:\n';
const page = (width = '', height = '', active = '') =>
  `${HEADER}- generic${active === '' ? ' [active]' : ''} [ref=e1]:\n  - generic [ref=e2]:\n    - text: Width\n` +
  `    - textbox "Width"${active === 'Width' ? ' [active]' : ''} [ref=e3]${width ? `: "${width}"` : ''}\n` +
  '  - generic [ref=e4]:\n    - text: Height\n' +
  `    - textbox "Height"${active === 'Height' ? ' [active]' : ''} [ref=e5]${height ? `: "${height}"` : ''}\n` +
  '  - paragraph [ref=e6]: Requested 640';
const INSTRUCTION = 'Make it wider, to 980.';
const USER = { role: 'user', content: `${INSTRUCTION}\n\n${page()}` } as const;

const call = (name: string, args: Record<string, unknown>, id = 'call_1') => ({
  id,
  type: 'function' as const,
  function: { name, arguments: JSON.stringify(args) },
});
type Call = ReturnType<typeof call>;
const tool = (id: string, name: string, content: string) => ({
  role: 'tool',
  tool_call_id: id,
  name,
  content,
});

/** The judge input of a turn that made `calls` after `messages`, answered by `reply`. */
function actTurn(
  calls: Call[],
  reply: string,
  messages: JudgeInput['messages'] = [SYSTEM, USER],
): JudgeInput {
  return {
    messages,
    response: renderToolCalls(calls),
    nextState: tool(calls.at(-1)!.id, calls.at(-1)!.function.name, reply),
    reference: { reward: 1 },
  };
}

const score = (input: JudgeInput) => applyStepRule('gui-step', input);

describe('gui-step', () => {
  it('is a registered step rule', () => {
    expect(STEP_RULES).toContain('gui-step');
  });

  it('gives +1 to a call that changed the page with text from the instruction', () => {
    const input = actTurn(
      [call('type', { text: '980', element: 'Width' })],
      `Typed "980" into textbox "Width" [ref=e3].\n\n${page('980', '', 'Width')}`,
    );
    expect(score(input)).toEqual({ score: 1, reason: 'the page changed with what the task gave' });
  });

  it('gives +1 to the wrong field too: the rule does not know the goal, only the effect', () => {
    const input = actTurn(
      [call('type', { text: '980', element: 'Height' })],
      `Typed "980" into textbox "Height" [ref=e5].\n\n${page('', '980', 'Height')}`,
    );
    expect(score(input).score).toBe(1);
  });

  it('gives +1 to typing text the page showed', () => {
    const input = actTurn(
      [call('type', { text: '640', element: 'Height' })],
      `Typed "640" into textbox "Height" [ref=e5].\n\n${page('', '640', 'Height')}`,
    );
    expect(score(input).score).toBe(1);
  });

  it('gives 0 to typing text neither the instruction nor the page holds, though the page changed', () => {
    const input = actTurn(
      [call('type', { text: '98', element: 'Width' })],
      `Typed "98" into textbox "Width" [ref=e3].\n\n${page('98', '', 'Width')}`,
    );
    expect(score(input)).toEqual({
      score: 0,
      reason: 'typed text neither the instruction nor the page holds',
    });
  });

  it("does not count the page header's numbers as given", () => {
    // "800" is in the page header (viewport 800×600), not in the instruction or the tree.
    const input = actTurn(
      [call('type', { text: '800', element: 'Width' })],
      `Typed "800" into textbox "Width" [ref=e3].\n\n${page('800', '', 'Width')}`,
    );
    expect(score(input).score).toBe(0);
  });

  it('gives 0 to an action that left the page as it was (focus alone is no change)', () => {
    const input = actTurn(
      [call('click', { element: 'Width' })],
      `Clicked textbox "Width" [ref=e3].\n\n${page('', '', 'Width')}`,
    );
    expect(score(input)).toEqual({ score: 0, reason: 'the action changed nothing on the page' });
  });

  it('counts a scroll that moved the view as a change', () => {
    const scrolled = page().replace('scrolled to (0, 0)', 'scrolled to (0, 120)');
    const input = actTurn(
      [call('scroll', { dy: 120 })],
      `Scrolled by (0, 120) at (400, 300).\n\n${scrolled}`,
    );
    expect(score(input).score).toBe(1);
  });

  it('gives −1 when the page refused the action', () => {
    const input = actTurn(
      [call('click', { element: 'Depth' })],
      `Error: no element named "Depth" on the page now; use a [ref=…] or a role and name as the accessibility tree prints them\n\n${page()}`,
    );
    expect(score(input)).toEqual({ score: -1, reason: 'the page refused the action' });
  });

  it('gives −1 to a malformed call, rendered or left as text', () => {
    const rendered = actTurn(
      [{ id: 'call_1', type: 'function', function: { name: 'type', arguments: '{"text": 98' } }],
      `Error: malformed tool call: arguments are not JSON\n\n${page()}`,
    );
    expect(score(rendered)).toEqual({ score: -1, reason: 'malformed tool call' });
    // The engine leaves a block it cannot parse in the text; the environment read it as an answer.
    const asText: JudgeInput = {
      messages: [SYSTEM, USER],
      response: '<tool_call>\n{"name": "type", "arguments": {"text": "98',
      nextState: { role: 'assistant', content: '<tool_call>\n{"name": "type", "arguments": {"text": "98' },
    };
    expect(score(asText)).toEqual({ score: -1, reason: 'malformed tool call' });
  });

  it('judges a later turn against the page the previous turn left', () => {
    const first = call('type', { text: '980', element: 'Width' });
    const history = [
      SYSTEM,
      USER,
      { role: 'assistant', content: '', tool_calls: [first] },
      tool('call_1', 'type', `Typed "980" into textbox "Width" [ref=e3].\n\n${page('980', '', 'Width')}`),
    ];
    const again = actTurn(
      [call('type', { text: '980', element: 'Width' }, 'call_2')],
      `Typed "980" into textbox "Width" [ref=e3].\n\n${page('980', '', 'Width')}`,
      history,
    );
    expect(score(again).score).toBe(0);
    const clear = actTurn(
      [call('type', { text: '', element: 'Width' }, 'call_2')],
      `Typed "" into textbox "Width" [ref=e3].\n\n${page('', '', 'Width')}`,
      history,
    );
    expect(score(clear).score).toBe(1);
  });

  it('scores a several-call turn by the page after the last call', () => {
    const calls = [
      call('type', { text: '980', element: 'Width' }, 'call_1'),
      call('key', { key: 'Tab' }, 'call_2'),
    ];
    const input = actTurn(calls, `Pressed Tab.\n\n${page('980', '', 'Height')}`);
    expect(score(input).score).toBe(1);
  });

  it('gives −1 to answering before anything acted on the page, 0 to answering after', () => {
    const early: JudgeInput = {
      messages: [SYSTEM, USER],
      response: 'I am done.',
      nextState: { role: 'assistant', content: 'I am done.' },
    };
    expect(score(early)).toEqual({ score: -1, reason: 'answered before acting on the page' });
    const late: JudgeInput = {
      messages: [
        SYSTEM,
        USER,
        { role: 'assistant', content: '', tool_calls: [call('type', { text: '980', element: 'Width' })] },
        tool('call_1', 'type', `Typed "980" into textbox "Width" [ref=e3].\n\n${page('980', '', 'Width')}`),
      ],
      response: 'Done.',
      nextState: { role: 'assistant', content: 'Done.' },
    };
    expect(score(late).score).toBe(0);
  });
});
