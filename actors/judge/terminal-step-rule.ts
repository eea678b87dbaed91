/**
 * `terminal-step`: scores one turn of a terminal episode from what the sandbox answered. The
 * tests are hidden until the end, so a turn cannot be checked against the goal; what a turn can
 * be checked for is whether the shell accepted it and whether it worked on what the task is
 * about (the paths the instruction names):
 * - a turn that calls tools: −1 when a call is malformed or any reply reports a failure (an
 *   `Error:` reply, a non-zero exit code, a timeout, the output limit); otherwise +1 when the
 *   calls name a path the instruction names, 0 when they name none of them (a clean command on
 *   something else: no evidence of progress);
 * - the final answer (no tool call): +1 when the last command before it succeeded, −1 when it
 *   failed, and −1 when the episode ends without running anything (the workspace is what the
 *   tests score, and it cannot have changed).
 * The reply formats are the terminal environment's (actors/envs/terminal/tools.ts).
 */
import type { JudgeInput } from './prompts.js';
import type { StepRuleScore } from './step-rule-score.js';
import { commandReplyFailure, lastToolReply, nextToolReply, questionOf, toolCallsIn } from './turn-input.js';

/** A file or directory name as instructions write them: `notes.txt`, `src/app.py`, `/workspace/out`. */
const PATH = /(?:[\w.-]*\/)*[\w-]+\.[A-Za-z0-9]+|(?:[\w.-]+\/)+[\w.-]*/g;
/** The paths the instruction names, trailing sentence punctuation dropped. */
function instructionPaths(instruction: string): string[] {
  return (instruction.match(PATH) ?? []).map((p) => p.replace(/[.,;:]+$/, '')).filter((p) => p !== '');
}

function scoreCallTurn(input: JudgeInput, calls: ReturnType<typeof toolCallsIn>): StepRuleScore {
  if (calls.some((c) => c === null)) return { score: -1, reason: 'malformed tool call' };
  const reply = nextToolReply(input);
  const failure = reply === null ? null : commandReplyFailure(reply);
  if (failure) return { score: -1, reason: failure };
  const paths = instructionPaths(questionOf(input));
  const args = calls.map((c) => JSON.stringify(c!.arguments)).join('\n');
  if (paths.some((p) => args.includes(p)))
    return { score: 1, reason: 'ran cleanly on a path the task names' };
  return { score: 0, reason: 'ran cleanly on none of the paths the task names' };
}

function scoreAnswerTurn(input: JudgeInput): StepRuleScore {
  const last = lastToolReply(input);
  if (last === null) return { score: -1, reason: 'ends without running anything' };
  const failure = commandReplyFailure(last);
  return failure
    ? { score: -1, reason: `ends after a failure (${failure})` }
    : { score: 1, reason: 'ends after a command that succeeded' };
}

export function scoreTerminalTurn(input: JudgeInput): StepRuleScore {
  const calls = toolCallsIn(input.response);
  return calls.length > 0 ? scoreCallTurn(input, calls) : scoreAnswerTurn(input);
}
