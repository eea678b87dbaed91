/**
 * `swe-step` on judge inputs shaped as the job's judging builds them (jobs/rl/judging.ts
 * stepInput): the turn's prompt messages, its text plus its tool calls as `<tool_call>` blocks,
 * and the message that followed (the tool reply). The calls are the swe track's own oracle and
 * replies in the swe environment's formats.
 */
import { describe, expect, it } from 'vitest';
import type { Action } from '../envs/environment.js';
import { goldPatchOracle } from '../envs/swe/task-file.js';
import { JudgeVoter } from './judge-voter.js';
import type { ConversationMessage, JudgeInput } from './prompts.js';
import { applyStepRule, renderToolCalls } from './step-rules.js';
import { editedText, issueTerms } from './swe-step-rule.js';
import { commandReplyFailure, toolCallsIn } from './turn-input.js';

const prompt: ConversationMessage[] = [
  { role: 'system', content: 'Fix the issue.' },
  {
    role: 'user',
    content: 'Resolve this issue in the repository at /workspace:\n\n<issue>\nFloor is now 417.\n</issue>',
  },
];
const patch = (file: string, value: string) => `--- a/${file}\n+++ b/${file}\n@@ -1 +1 @@\n-0\n+${value}\n`;

const callsOf = (action: Action) =>
  (action.tool_calls ?? []) as Array<{ function: { name: string; arguments: string } }>;
const bash = (command: string): Action => ({
  content: null,
  tool_calls: [
    { id: 'c1', type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command }) } },
  ],
});
const call = (name: string, args: Record<string, unknown>): Action => ({
  content: null,
  tool_calls: [{ id: 'c1', type: 'function', function: { name, arguments: JSON.stringify(args) } }],
});

/** The judge input of a turn that made `action`'s calls and was answered by `reply`. */
const callTurn = (action: Action, reply: string, messages = prompt): JudgeInput => ({
  messages,
  response: [action.content ?? '', renderToolCalls(callsOf(action))].filter((t) => t !== '').join('\n'),
  nextState: { role: 'tool', content: reply },
  reference: { reward: -1 },
});

/** The final turn's input after `history` (pairs of an action and its reply). */
const answerTurn = (history: Array<[Action, string]>): JudgeInput => ({
  messages: [
    ...prompt,
    ...history.flatMap(([action, reply]) => [
      { role: 'assistant', content: action.content, tool_calls: action.tool_calls },
      { role: 'tool', content: reply },
    ]),
  ],
  response: 'The fix is applied.',
  // records.ts: the last turn's next state is the episode's last message, its own answer.
  nextState: { role: 'assistant', content: 'The fix is applied.' },
  reference: { reward: 1 },
});

const score = (input: JudgeInput) => applyStepRule('swe-step', input).score;

describe('swe-step', () => {
  it("scores +1 for the oracle's patch that applies and adds the issue's value", () => {
    const [apply] = goldPatchOracle(patch('min', '417'));
    expect(applyStepRule('swe-step', callTurn(apply, '[exit code 0]'))).toMatchObject({ score: 1 });
    // The wrong file with the right value is still a clean edit with the issue's value: the
    // rule cannot see the hidden tests, only that the step did what the issue talks about.
    expect(score(callTurn(goldPatchOracle(patch('max', '417'))[0], '[exit code 0]'))).toBe(1);
    expect(
      score(
        callTurn(
          call('write_file', { path: 'min', content: '417\n' }),
          'wrote 4 bytes to min\n[exit code 0]',
        ),
      ),
    ).toBe(1);
    expect(score(callTurn(bash("sed -i 's/0/417/' min"), '[exit code 0]'))).toBe(1);
    expect(score(callTurn(bash('echo 417 > min'), '[exit code 0]'))).toBe(1);
  });

  it("scores 0 for clean calls that change nothing or add none of the issue's terms", () => {
    expect(score(callTurn(call('view_file', { path: 'min' }), '     1\t0\n[exit code 0]'))).toBe(0);
    expect(score(callTurn(bash('cat min max 2>/dev/null'), '0\n0\n[exit code 0]'))).toBe(0);
    expect(score(callTurn(bash('grep -rn 417 . 2>&1'), '[exit code 0]'))).toBe(0);
    expect(score(callTurn(goldPatchOracle(patch('min', '471'))[0], '[exit code 0]'))).toBe(0);
  });

  it('scores −1 for malformed calls and replies that report a failure', () => {
    expect(score(callTurn({ content: '<tool_call>\n{"name": "bash", "argu\n</tool_call>' }, ''))).toBe(-1);
    const broken = bash(
      "git apply --whitespace=nowarn <<'CLAWRAY_GOLD_PATCH'\n--- a/min\n+417\nCLAWRAY_GOLD_PATCH\n",
    );
    expect(
      applyStepRule('swe-step', callTurn(broken, 'error: corrupt patch at line 3\n[exit code 128]')),
    ).toMatchObject({ score: -1, reason: 'the command exited with 128' });
    expect(
      score(
        callTurn(call('bash', { cmd: 'ls' }), 'Error: malformed tool call: bash: unrecognized key "cmd"'),
      ),
    ).toBe(-1);
    expect(score(callTurn(bash('sleep 999'), '[timed out after 120000 ms; the command was stopped]'))).toBe(
      -1,
    );
  });

  it('scores the final answer by whether a clean edit came before it', () => {
    const [apply] = goldPatchOracle(patch('min', '417'));
    expect(applyStepRule('swe-step', answerTurn([[apply, '[exit code 0]']]))).toMatchObject({ score: 1 });
    expect(score(answerTurn([]))).toBe(-1);
    expect(score(answerTurn([[apply, 'error: patch failed: min:1\n[exit code 1]']]))).toBe(-1);
    expect(score(answerTurn([[call('view_file', { path: 'min' }), '     1\t0\n[exit code 0]']]))).toBe(0);
    // A failed edit followed by a clean look does not count as an edit.
    expect(
      score(
        answerTurn([
          [apply, 'error: patch failed: min:1\n[exit code 1]'],
          [bash('cat min'), '0\n[exit code 0]'],
        ]),
      ),
    ).toBe(0);
  });

  it('reads failures, issue terms and edits in the environment formats', () => {
    expect(commandReplyFailure('wrote 4 bytes to min\n[exit code 0]')).toBeNull();
    expect(commandReplyFailure('x\n[output cut at 1048576 bytes; the command was stopped]')).toMatch(
      /output limit/,
    );
    expect(issueTerms('`parse_date` fails on 2024-01-05 in src/dates.py; see makeDate. The fix')).toEqual(
      expect.arrayContaining(['parse_date', '2024', 'src/dates.py', 'makeDate']),
    );
    expect(issueTerms('The fix is simple.')).toEqual([]);
    const [apply] = goldPatchOracle(patch('min', '417'));
    const [parsed] = toolCallsIn(renderToolCalls(callsOf(apply)));
    expect(editedText(parsed!)).toBe('417');
    expect(editedText({ name: 'bash', arguments: { command: 'ls -la > /dev/null 2>&1' } })).toBeNull();
  });

  it('is reachable as a judge voter (judge.stepRule: swe-step)', async () => {
    const voter = new JudgeVoter({ backend: 'rule', rule: 'swe-step' });
    const [apply] = goldPatchOracle(patch('min', '417'));
    const vote = await voter.vote(callTurn(apply, '[exit code 0]'));
    expect(vote.score).toBe(1);
  });
});
