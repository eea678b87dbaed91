/**
 * `gui-step`: scores one turn of a gui episode from its judge input, by what the page said back.
 * The gui environment answers every turn's calls with one tool message per call, the last of
 * which carries the page as it is after them (`Page "…": viewport …, scrolled to (x, y) of ….
 * Accessibility tree: …`), and the turn's prompt ends with the page as it was before (the task's
 * user message, or the previous turn's last tool reply). The goal itself is not in the judge
 * input (the page state is scored only at the end), so the rule judges the step by its effect:
 *
 * - a turn that acts (its response holds `<tool_call>` blocks, as judging.ts renders them):
 *   −1 when a call is malformed or the page refused it (the reply is an `Error: …`); 0 when it
 *   left the page as it was (the same tree and scroll position), or typed text that neither the
 *   task's instruction nor the page it saw holds as a whole word or number (it changed the page,
 *   but with something it made up); +1 when the page changed and every text it typed was given;
 * - a turn that answers (no tool call) ends the episode: −1 when nothing acted on the page
 *   before it (giving up; no task's page starts at its goal), else 0 (the outcome judges it).
 *
 * Only the last call's reply carries the page, and only it is the turn's next state, so an
 * error in an earlier call of a several-call turn is not seen here (the outcome still is).
 */
import { contentToText, type JudgeInput } from './prompts.js';
import type { StepRuleScore } from './step-rule-score.js';
import { nextToolReply, questionOf, toolCallsIn } from './turn-input.js';

/** Where the environment's page description starts in a message (env.ts describePage). */
const PAGE_VIEW = '\n\nPage "';
const TREE_MARK = 'Accessibility tree:\n';
/** Focus moves with every click and keypress; it is not a change of the page's content. */
const FOCUS_MARK = / \[active\]/g;

/** The page description a message ends with, or null when it holds none. */
function pageView(text: string): string | null {
  const at = text.lastIndexOf(PAGE_VIEW);
  return at >= 0 ? text.slice(at + 2).replace(FOCUS_MARK, '') : null;
}

/** The accessibility tree of a page description. */
function treeOf(view: string): string {
  const at = view.indexOf(TREE_MARK);
  return at >= 0 ? view.slice(at + TREE_MARK.length) : '';
}

/** The task's instruction: the first user message, before the page description. */
function instructionOf(input: JudgeInput): string {
  const question = questionOf(input);
  const at = question.indexOf(PAGE_VIEW);
  return at >= 0 ? question.slice(0, at) : question;
}

/** The page as the turn saw it: the end of its prompt's last message. */
function pageBefore(input: JudgeInput): string | null {
  const last = input.messages.at(-1);
  return last ? pageView(contentToText(last.content)) : null;
}

/** Whether `text` occurs in `source` as a whole (not as part of a longer word or number). */
function holdsWhole(source: string, text: string): boolean {
  const escaped = text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(?<![\\p{L}\\p{N}])${escaped}(?![\\p{L}\\p{N}])`, 'u').test(source);
}

function scoreActTurn(input: JudgeInput, calls: ReturnType<typeof toolCallsIn>): StepRuleScore {
  if (calls.some((c) => c === null)) return { score: -1, reason: 'malformed tool call' };
  const reply = nextToolReply(input);
  if (reply === null) return { score: 0, reason: 'no reply from the page to judge the action by' };
  if (/^error\b/i.test(reply)) return { score: -1, reason: 'the page refused the action' };
  const before = pageBefore(input);
  const after = pageView(`\n\n${reply}`);
  if (after === null) return { score: 0, reason: 'the page could not be read after the action' };
  if (before !== null && before === after)
    return { score: 0, reason: 'the action changed nothing on the page' };
  // What the agent was given: the instruction and the page's content as it saw it (the tree, not
  // the header's viewport and scroll numbers).
  const given = `${instructionOf(input)}\n${treeOf(before ?? '')}`;
  const typed = calls
    .filter((c) => c!.name === 'type')
    .map((c) => c!.arguments.text)
    .filter((t): t is string => typeof t === 'string' && t !== '');
  if (typed.some((t) => !holdsWhole(given, t))) {
    return { score: 0, reason: 'typed text neither the instruction nor the page holds' };
  }
  return { score: 1, reason: 'the page changed with what the task gave' };
}

function scoreAnswerTurn(input: JudgeInput): StepRuleScore {
  // A `<tool_call>` that did not parse reached the page as plain text: the turn meant to act.
  if (input.response.includes('<tool_call>')) return { score: -1, reason: 'malformed tool call' };
  const acted = input.messages.some((m) => m.role === 'tool');
  return acted
    ? { score: 0, reason: "the answer ends the episode; the page's state decides" }
    : { score: -1, reason: 'answered before acting on the page' };
}

export function scoreGuiTurn(input: JudgeInput): StepRuleScore {
  const calls = toolCallsIn(input.response);
  return calls.length > 0 ? scoreActTurn(input, calls) : scoreAnswerTurn(input);
}
