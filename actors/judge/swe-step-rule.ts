/**
 * `swe-step`: scores one turn of a swe episode from what the sandbox answered. The tests are
 * hidden until the end, so a turn cannot be checked against the goal itself; what a turn can be
 * checked for is whether the sandbox accepted it and whether it changed the repository with what
 * the issue is about (its numbers, `code spans`, paths and identifiers):
 * - a turn that calls tools: −1 when a call is malformed or any reply reports a failure (an
 *   `Error:` reply, a non-zero exit code, a timeout, cut output: a patch that does not apply is
 *   one); otherwise +1 when a call edits the repository (write_file, or a bash command that
 *   applies a patch or writes a file) and the text it adds holds a term of the issue, 0 for a
 *   clean call that does not (reading, searching, running tests, an edit of something else);
 * - the final answer (no tool call): −1 when nothing was run or the last reply reported a
 *   failure; +1 when an edit ran cleanly earlier in the episode (there is a diff to score);
 *   0 otherwise (clean commands, none of them a recognisable edit).
 * The reply formats are the swe environment's (actors/envs/swe/tools.ts and env.ts).
 */
import { contentToText, type JudgeInput } from './prompts.js';
import type { StepRuleScore } from './step-rule-score.js';
import {
  commandReplyFailure,
  lastToolReply,
  nextToolReply,
  type ParsedToolCall,
  parsedCall,
  questionOf,
  toolCallsIn,
} from './turn-input.js';

/** The issue itself: the text inside `<issue>…</issue>` of the first user message, else all of it. */
function issueText(input: JudgeInput): string {
  const question = questionOf(input);
  const inner = /<issue>([\s\S]*?)<\/issue>/.exec(question);
  return inner ? inner[1] : question;
}

/**
 * The issue's specific terms: numbers, `code spans`, and words that look like code or paths
 * (holding `_`, `.`, `/`, or an inner capital). Plain English words are left out: any command
 * would share some of them with any issue.
 */
export function issueTerms(issue: string): string[] {
  const terms = new Set<string>();
  for (const m of issue.matchAll(/`([^`\n]+)`/g)) terms.add(m[1].trim());
  for (const m of issue.matchAll(/\d+(?:\.\d+)?/g)) terms.add(m[0]);
  for (const m of issue.matchAll(/[A-Za-z_][\w./-]*/g)) {
    const word = m[0].replace(/[./-]+$/, '');
    if (/[_./]/.test(word) || /[a-z][A-Z]/.test(word)) terms.add(word);
  }
  return [...terms].filter((t) => t !== '');
}

/** The lines a unified diff adds (`+` lines, not the `+++` header). */
function addedLines(patch: string): string {
  return patch
    .split('\n')
    .filter((l) => l.startsWith('+') && !l.startsWith('+++'))
    .map((l) => l.slice(1))
    .join('\n');
}

/** A bash command line that changes files: applies a patch, edits in place, or redirects into a file. */
const PATCH_COMMAND = /\bgit\s+apply\b|(?:^|[;&|(]\s*)patch\b/m;
const WRITE_COMMAND = /\bsed\s+(?:-\w*\s+)*-i|\btee\b|(?:^|[^0-9&<>])>>?\s*[^\s&>|]/;

/** The text an edit call adds to the repository, or null when the call is not an edit. */
export function editedText(call: ParsedToolCall): string | null {
  const args = call.arguments;
  if (call.name === 'write_file') return typeof args.content === 'string' ? args.content : '';
  if (call.name !== 'bash' || typeof args.command !== 'string') return null;
  const command = args.command;
  if (PATCH_COMMAND.test(command)) return addedLines(command);
  // Redirections to /dev/null or stderr merges are not edits.
  if (WRITE_COMMAND.test(command.replace(/\d?>>?\s*\/dev\/null|\d?>&\d/g, ''))) return command;
  return null;
}

function scoreCallTurn(input: JudgeInput, calls: Array<ParsedToolCall | null>): StepRuleScore {
  if (calls.some((c) => c === null)) return { score: -1, reason: 'malformed tool call' };
  const reply = nextToolReply(input);
  const failure = reply === null ? null : commandReplyFailure(reply);
  if (failure) return { score: -1, reason: failure };
  const terms = issueTerms(issueText(input));
  const edits = calls.map((c) => editedText(c!)).filter((t): t is string => t !== null);
  if (edits.some((text) => terms.some((term) => text.includes(term)))) {
    return { score: 1, reason: "a clean edit that adds the issue's terms" };
  }
  return edits.length > 0
    ? { score: 0, reason: "a clean edit that adds none of the issue's terms" }
    : { score: 0, reason: 'a clean call that changes nothing' };
}

/** The tool calls of the conversation's assistant messages, each with the reply that followed it. */
function earlierCalls(input: JudgeInput): Array<{ call: ParsedToolCall | null; reply: string | null }> {
  const out: Array<{ call: ParsedToolCall | null; reply: string | null }> = [];
  const messages = input.messages;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m.role !== 'assistant' || !Array.isArray(m.tool_calls)) continue;
    // The replies follow their calls in order, as the environment answers them.
    const replies: string[] = [];
    for (let j = i + 1; j < messages.length && messages[j].role === 'tool'; j++) {
      replies.push(contentToText(messages[j].content).trim());
    }
    for (const [k, raw] of (m.tool_calls as unknown[]).entries()) {
      const fn = (raw as { function?: { name?: unknown; arguments?: unknown } } | null)?.function;
      const call = parsedCall(fn?.name, fn?.arguments);
      out.push({ call, reply: replies[k] ?? null });
    }
  }
  return out;
}

function scoreAnswerTurn(input: JudgeInput): StepRuleScore {
  const last = lastToolReply(input);
  if (last === null) return { score: -1, reason: 'ends without running anything' };
  const failure = commandReplyFailure(last);
  if (failure) return { score: -1, reason: `ends after a failure (${failure})` };
  const edited = earlierCalls(input).some(
    ({ call, reply }) =>
      call !== null && editedText(call) !== null && reply !== null && commandReplyFailure(reply) === null,
  );
  return edited
    ? { score: 1, reason: 'ends after a clean edit' }
    : { score: 0, reason: 'ends after clean commands, none of them an edit' };
}

export function scoreSweTurn(input: JudgeInput): StepRuleScore {
  const calls = toolCallsIn(input.response);
  return calls.length > 0 ? scoreCallTurn(input, calls) : scoreAnswerTurn(input);
}
