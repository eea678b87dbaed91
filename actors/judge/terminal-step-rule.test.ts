import { describe, expect, it } from 'vitest';
import type { SandboxResult } from '../envs/sandbox/sandbox.js';
import { formatCommandResult } from '../envs/terminal/tools.js';
import type { JudgeInput } from './prompts.js';
import { applyStepRule } from './step-rules.js';
import { commandReplyFailure, renderToolCalls } from './turn-input.js';

const shell = (command: string) =>
  renderToolCalls([{ function: { name: 'shell_exec', arguments: JSON.stringify({ command }) } }]);
// Replies exactly as the terminal environment formats them.
const run = (r: Partial<SandboxResult>) =>
  formatCommandResult(
    {
      exitCode: 0,
      signal: null,
      stdout: '',
      stderr: '',
      truncated: false,
      timedOut: false,
      ...r,
    } as SandboxResult,
    30_000,
    10_000,
  );
const prompt = [
  { role: 'system', content: 'Use the shell.' },
  { role: 'user', content: 'Add abcd to xyz.txt.' },
];
const callTurn = (response: string, reply: string): JudgeInput => ({
  messages: prompt,
  response,
  nextState: { role: 'tool', content: reply },
});
const answerTurn = (lastReply?: string): JudgeInput => ({
  messages: [
    ...prompt,
    ...(lastReply === undefined
      ? []
      : [
          { role: 'assistant', content: shell('echo abcd >> xyz.txt') },
          { role: 'tool', content: lastReply },
        ]),
  ],
  response: 'The task is done.',
  nextState: null,
});
const score = (input: JudgeInput) => applyStepRule('terminal-step', input);

describe('terminal-step', () => {
  it('scores a command that ran cleanly on a path the instruction names +1', () => {
    expect(score(callTurn(shell('echo abcd >> xyz.txt'), run({})))).toMatchObject({ score: 1 });
    expect(score(callTurn(shell('cat xyz.txt'), run({ stdout: 'log\n' }))).score).toBe(1);
  });
  it('scores a clean command on none of those paths 0: no evidence of progress', () => {
    expect(score(callTurn(shell('echo abcd >> xzy.txt'), run({}))).score).toBe(0);
    expect(score(callTurn(shell('ls'), run({ stdout: 'xyz.txt\n' }))).score).toBe(0);
  });
  it('scores malformed calls and failed commands −1', () => {
    expect(score(callTurn('<tool_call>\n{"name": "shell_exec", "arg\n</tool_call>', '')).score).toBe(-1);
    expect(
      score(callTurn(shell('cat xyz.txt'), run({ exitCode: 1, stderr: 'cat: xyz.txt: No such file' }))).score,
    ).toBe(-1);
    expect(
      score(callTurn(shell('sleep 99 > xyz.txt'), run({ exitCode: null, timedOut: true, signal: 'SIGKILL' })))
        .score,
    ).toBe(-1);
    expect(score(callTurn(shell('yes > xyz.txt'), run({ exitCode: null, truncated: true }))).score).toBe(-1);
    expect(
      score(callTurn(shell('x'), 'Error: malformed tool call: no command (4 more malformed calls tolerated)'))
        .score,
    ).toBe(-1);
  });
  it('scores the final answer by the command before it, and −1 when nothing ran', () => {
    expect(score(answerTurn(run({})))).toMatchObject({ score: 1 });
    expect(score(answerTurn(run({ exitCode: 2 }))).score).toBe(-1);
    expect(score(answerTurn()).score).toBe(-1);
  });
  it('reads the exit code only at the end of the reply', () => {
    expect(commandReplyFailure(run({ stdout: 'echo "[exit code 1]"' }))).toBeNull();
    expect(commandReplyFailure(run({ exitCode: 127 }))).toBe('the command exited with 127');
    expect(commandReplyFailure('wrote 5 bytes to notes.txt')).toBeNull();
  });
});
