/**
 * Reading one turn of an episode from its judge input, as every step rule needs to: the tool
 * calls the response made (rendered as Qwen's `<tool_call>` blocks by the job's judging), the
 * task's question, and the tool replies around the turn.
 */
import { contentToText, type JudgeInput } from './prompts.js';

const TOOL_CALL = /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g;

export type ParsedToolCall = { name: string; arguments: Record<string, unknown> };

/** The `<tool_call>` blocks of a response: parsed, or null for a block that is not a call. */
export function toolCallsIn(response: string): Array<ParsedToolCall | null> {
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
