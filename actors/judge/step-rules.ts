/**
 * Rule-based process rewards: a score for each turn of an episode, where the outcome rules
 * (rule-verifiers.ts) score only its end. OpenClaw-RL's PRM is a model judge; on a CPU with a
 * tiny policy a model judge has nothing to say, but a tool-call turn has checkable structure,
 * so a rule can give the per-step signal instead (the tool-call analogue of a unit test per step).
 * Each track has one, `<track>-step`, in its own file (terminal-step-rule.ts, …) but toolcall's.
 *
 * `toolcall-step` scores one turn of a toolcall episode from its judge input:
 * - a turn that calls tools (the response holds `<tool_call>{"name", "arguments"}</tool_call>`
 *   blocks, as judging.ts renders them): +1 when every call is well formed and the tool's reply
 *   (the next state) is the task's answer; 0 when the calls are well formed and use only numbers
 *   of the question (the right operands, a wrong operation); −1 when a call is malformed, or uses
 *   numbers the question does not hold, or the reply is an error;
 * - the final answer (no tool call): +1 when its last `\boxed{…}` reports the last tool result of
 *   the conversation, −1 when it reports something else or has no box; 0 when no tool was called
 *   (nothing to be faithful to).
 * Without a reference answer, a call turn scores 0 for well-formed calls on the question's numbers.
 */
import { scoreGuiTurn } from './gui-step-rule.js';
import type { JudgeInput } from './prompts.js';
import type { StepRuleScore } from './step-rule-score.js';
import { scoreSweTurn } from './swe-step-rule.js';
import { scoreTerminalTurn } from './terminal-step-rule.js';
import { lastToolReply, nextToolReply, questionOf, toolCallsIn } from './turn-input.js';
import { lastBoxedContent } from './votes.js';

export const STEP_RULES = ['toolcall-step', 'terminal-step', 'swe-step', 'gui-step'] as const;
export type StepRuleName = (typeof STEP_RULES)[number];

export type { StepRuleScore } from './step-rule-score.js';
export { renderToolCalls, toolCallsIn } from './turn-input.js';

const NUMBER = /\d+(?:\.\d+)?/g;
const numbersIn = (text: string) => text.match(NUMBER) ?? [];

function scoreCallTurn(input: JudgeInput, calls: ReturnType<typeof toolCallsIn>): StepRuleScore {
  if (calls.some((c) => c === null)) return { score: -1, reason: 'malformed tool call' };
  const allowed = new Set(numbersIn(questionOf(input)));
  const used = calls.flatMap((c) => numbersIn(JSON.stringify(c!.arguments)));
  if (used.length === 0 || used.some((n) => !allowed.has(n))) {
    return { score: -1, reason: 'arguments use numbers the question does not hold' };
  }
  const reply = nextToolReply(input);
  if (reply !== null && /^error\b/i.test(reply))
    return { score: -1, reason: 'the tool replied with an error' };
  const answer = input.reference?.answer?.trim();
  if (answer !== undefined && reply !== null && reply === answer) {
    return { score: 1, reason: "the tool's result is the answer" };
  }
  return { score: 0, reason: "well-formed call on the question's numbers; its result is not the answer" };
}

function scoreAnswerTurn(input: JudgeInput): StepRuleScore {
  const result = lastToolReply(input);
  if (result === null) return { score: 0, reason: 'no tool result to report' };
  const boxed = lastBoxedContent(input.response);
  if (boxed === null) return { score: -1, reason: 'no boxed answer' };
  return boxed.trim() === result
    ? { score: 1, reason: "reports the tool's result" }
    : { score: -1, reason: "does not report the tool's result" };
}

function scoreToolcallTurn(input: JudgeInput): StepRuleScore {
  const calls = toolCallsIn(input.response);
  return calls.length > 0 ? scoreCallTurn(input, calls) : scoreAnswerTurn(input);
}

// Each track's rule reads its own tools' replies, so it lives beside the others in its own file.
const SCORERS: Record<StepRuleName, (input: JudgeInput) => StepRuleScore> = {
  'toolcall-step': scoreToolcallTurn,
  'terminal-step': scoreTerminalTurn,
  'swe-step': scoreSweTurn,
  'gui-step': scoreGuiTurn,
};

/** Scores one turn by a step rule. */
export function applyStepRule(rule: StepRuleName, input: JudgeInput): StepRuleScore {
  return SCORERS[rule](input);
}
