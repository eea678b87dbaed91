/**
 * Reading one turn of an episode from its judge input, as every step rule needs to: the tool
 * calls the response made (rendered as Qwen's `<tool_call>` blocks by the job's judging), the
 * task's question, and the tool replies around the turn.
 */
import { contentToText, type JudgeInput } from './prompts.js';

const TOOL_CALL = /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g;

export type ParsedToolCall = { name: string; arguments: Record<string, unknown> };

/** A tool call as the rules read it (name, parsed arguments), or null when it is not well formed. */
export function parsedCall(name: unknown, rawArgs: unknown): ParsedToolCall | null {
  try {
    const args = typeof rawArgs === 'string' ? JSON.parse(rawArgs) : rawArgs;
    if (typeof name !== 'string' || name === '' || args === null || typeof args !== 'object') return null;
    return { name, arguments: args as Record<string, unknown> };
  } catch {
    return null;
  }
}

/** The `<tool_call>` blocks of a response: parsed, or null for a block that is not a call. */
export function toolCallsIn(response: string): Array<ParsedToolCall | null> {
  return [...response.matchAll(TOOL_CALL)].map((m) => {
    try {
      const v = JSON.parse(m[1]) as { name?: unknown; arguments?: unknown };
      return parsedCall(v.name, v.arguments);
    } catch {
      return null;
    }
  });
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

/** The task's question: the first user message of the conversation. */
export function questionOf(input: JudgeInput): string {
  const first = input.messages.find((m) => m.role === 'user');
  return first ? contentToText(first.content) : '';
}

/** The content of the last tool reply before this turn (null when no tool was called). */
export function lastToolReply(input: JudgeInput): string | null {
  for (let i = input.messages.length - 1; i >= 0; i--) {
    const m = input.messages[i];
    if (m.role === 'tool') return contentToText(m.content).trim();
  }
  return null;
}

/** The tool reply that answered this turn's calls (null for the episode's last turn). */
export function nextToolReply(input: JudgeInput): string | null {
  return input.nextState?.role === 'tool' ? contentToText(input.nextState.content).trim() : null;
}

const EXIT_CODE = /\[exit code (-?\w+)\]\s*$/;

/**
 * Why a sandboxed command's reply reports a failure, or null when it reports success: an
 * `Error:` reply, a timeout, the output limit (terminal's "[output limit reached", swe's
 * "[output cut at N bytes"), or a non-zero exit code, read only at the end of the reply so the
 * command's own output cannot fake one.
 */
export function commandReplyFailure(reply: string): string | null {
  if (/^Error:/.test(reply)) return 'the tool replied with an error';
  if (/\[timed out after \d+ ms/.test(reply)) return 'the command timed out';
  if (/\[output limit reached|\[output cut at \d+ bytes/.test(reply))
    return 'the command hit the output limit';
  const exit = EXIT_CODE.exec(reply);
  if (exit && exit[1] !== '0') return `the command exited with ${exit[1]}`;
  return null;
}
