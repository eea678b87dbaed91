/**
 * Checking the tool calls of an assistant turn, the same way on every track: a call needs an id
 * and `function {name, arguments}`, the name must be one of the track's tools, and the arguments
 * must be a JSON object that fits the tool's schema. A bad call is not an exception of the
 * environment: it becomes an error message the agent reads back (and a parse error it is
 * charged with), so MalformedToolCall carries that message.
 */
import { z } from 'zod';
import type { ToolMessage } from './environment.js';

export class MalformedToolCall extends Error {
  constructor(
    message: string,
    /** The tool the call named, when it named a known one. */
    readonly toolName?: string,
  ) {
    super(message);
  }
}

const toolCallShape = z.object({
  id: z.string().min(1),
  type: z.literal('function').optional(),
  function: z.object({ name: z.string(), arguments: z.string() }),
});

/**
 * A demonstrated assistant turn as a task file spells it (the `oracle` of a toolcall or swe task):
 * text, tool calls in the OpenAI shape, or both. Strict: a misspelt key is an error, not a turn
 * that silently calls nothing.
 */
export const demonstrationSchema = z.strictObject({
  content: z.string().nullable().optional(),
  tool_calls: z
    .array(
      z.strictObject({
        id: z.string().min(1),
        type: z.literal('function'),
        function: z.strictObject({ name: z.string().min(1), arguments: z.string() }),
      }),
    )
    .optional(),
});

export interface ParsedToolCall<Tools extends Record<string, z.ZodType>> {
  name: keyof Tools & string;
  /** The arguments as the tool's schema parsed them (the name/arguments pair was checked together). */
  args: never;
}

export function parseToolCall<Tools extends Record<string, z.ZodType>>(
  raw: unknown,
  tools: Tools,
): ParsedToolCall<Tools> {
  const shape = toolCallShape.safeParse(raw);
  if (!shape.success) {
    throw new MalformedToolCall('a tool call needs an id and function {name, arguments (a JSON string)}');
  }
  const name = shape.data.function.name;
  if (!Object.hasOwn(tools, name)) {
    throw new MalformedToolCall(`unknown tool '${name}'; the tools are ${Object.keys(tools).join(', ')}`);
  }
  let parsed: unknown;
  try {
    // Models often send "" for a tool without arguments.
    parsed = JSON.parse(shape.data.function.arguments.trim() === '' ? '{}' : shape.data.function.arguments);
  } catch {
    throw new MalformedToolCall(`the arguments of ${name} are not valid JSON`, name);
  }
  const args = tools[name].safeParse(parsed);
  if (!args.success) {
    const issues = args.error.issues.map((i) => `${i.path.join('.') || '(arguments)'}: ${i.message}`);
    throw new MalformedToolCall(`bad arguments for ${name}: ${issues.join('; ')}`, name);
  }
  return { name, args: args.data as never };
}

/** The id to answer a raw call with: its own when it has a usable one. */
export function toolCallId(raw: unknown, fallback: string): string {
  const id = (raw as { id?: unknown } | null)?.id;
  return typeof id === 'string' && id.length > 0 ? id : fallback;
}

/** The tool message answering call `id` (named when the call named a known tool). */
export function toolReply(id: string, content: string, name?: string): ToolMessage {
  return name === undefined
    ? { role: 'tool', tool_call_id: id, content }
    : { role: 'tool', tool_call_id: id, name, content };
}
