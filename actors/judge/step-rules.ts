/**
 * Rule-based process rewards: a score for each turn of an episode, where the outcome rules
 * (rule-verifiers.ts) score only its end. OpenClaw-RL's PRM is a model judge; on a CPU with a
 * tiny policy a model judge has nothing to say, but a tool-call turn has checkable structure,
 * so a rule can give the per-step signal instead (the tool-call analogue of a unit test per step).
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
import { contentToText, type JudgeInput } from './prompts.js';
import { lastBoxedContent } from './votes.js';

export const STEP_RULES = ['toolcall-step'] as const;
export type StepRuleName = (typeof STEP_RULES)[number];

export interface StepRuleScore {
  score: 1 | 0 | -1;
  /** Why, in a few words (kept in the vote for the job log and tests). */
  reason: string;
}

const TOOL_CALL = /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g;
const NUMBER = /\d+(?:\.\d+)?/g;

/** The `<tool_call>` blocks of a response: parsed, or null for a block that is not a call. */
export function toolCallsIn(
  response: string,
): Array<{ name: string; arguments: Record<string, unknown> } | null> {
  return [...response.matchAll(TOOL_CALL)].map((m) => {
    try {
      const v = JSON.parse(m[1]) as { name?: unknown; arguments?: unknown };
      const args = typeof v.arguments === 'string' ? JSON.parse(v.arguments) : v.arguments;
      if (typeof v.name !== 'string' || v.name === '' || args === null || typeof args !== 'object')
        return null;
      return { name: v.name, arguments: args as Record<string, unknown> };
    } catch {
      return null;
    }
  });
}

const numbersIn = (text: string) => text.match(NUMBER) ?? [];

/** The task's question: the first user message of the conversation. */
function question(input: JudgeInput): string {
  const first = input.messages.find((m) => m.role === 'user');
  return first ? contentToText(first.content) : '';
}

/** The content of the last tool reply in the conversation (null when no tool was called). */
function lastToolResult(input: JudgeInput): string | null {
  for (let i = input.messages.length - 1; i >= 0; i--) {
    const m = input.messages[i];
    if (m.role === 'tool') return contentToText(m.content).trim();
  }
  return null;
}

function scoreCallTurn(input: JudgeInput, calls: ReturnType<typeof toolCallsIn>): StepRuleScore {
  if (calls.some((c) => c === null)) return { score: -1, reason: 'malformed tool call' };
  const allowed = new Set(numbersIn(question(input)));
  const used = calls.flatMap((c) => numbersIn(JSON.stringify(c!.arguments)));
  if (used.length === 0 || used.some((n) => !allowed.has(n))) {
    return { score: -1, reason: 'arguments use numbers the question does not hold' };
  }
  const reply = input.nextState?.role === 'tool' ? contentToText(input.nextState.content).trim() : null;
  if (reply !== null && /^error\b/i.test(reply))
    return { score: -1, reason: 'the tool replied with an error' };
  const answer = input.reference?.answer?.trim();
  if (answer !== undefined && reply !== null && reply === answer) {
    return { score: 1, reason: "the tool's result is the answer" };
  }
  return { score: 0, reason: "well-formed call on the question's numbers; its result is not the answer" };
}

function scoreAnswerTurn(input: JudgeInput): StepRuleScore {
  const result = lastToolResult(input);
  if (result === null) return { score: 0, reason: 'no tool result to report' };
  const boxed = lastBoxedContent(input.response);
  if (boxed === null) return { score: -1, reason: 'no boxed answer' };
  return boxed.trim() === result
    ? { score: 1, reason: "reports the tool's result" }
    : { score: -1, reason: "does not report the tool's result" };
}

/** Scores one turn by a step rule. */
export function applyStepRule(rule: StepRuleName, input: JudgeInput): StepRuleScore {
  switch (rule) {
    case 'toolcall-step': {
      const calls = toolCallsIn(input.response);
      return calls.length > 0 ? scoreCallTurn(input, calls) : scoreAnswerTurn(input);
    }
  }
}

/** `<tool_call>` text of an assistant message's tool calls (Qwen's format), for judge inputs. */
export function renderToolCalls(
  calls: ReadonlyArray<{ function: { name: string; arguments: string } }>,
): string {
  return calls
    .map(
      (c) =>
        `<tool_call>\n{"name": ${JSON.stringify(c.function.name)}, "arguments": ${c.function.arguments}}\n</tool_call>`,
    )
    .join('\n');
}
