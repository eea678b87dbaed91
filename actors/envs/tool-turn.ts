/**
 * An agent's tool-call turn, read the same way on every track (toolcall, terminal, swe, gui): the
 * step prologue checks the action and adds it to the conversation, each raw call is counted and
 * parsed against the track's tools, and a malformed one is charged to the episode and answered
 * with the error the agent reads back, until more than `maxParseErrors` of them end the episode.
 *
 * Why one place: the tracks had this code copied, and a copy that drifts makes the same bad reply
 * cost differently from one track to the next. What a track does on purpose its own way (the
 * field its info counts malformed calls in, what the error message adds, the limit itself) is a
 * rule passed in, not a branch in here; when the turn stops and what the episode's end scores
 * stay with the track.
 */
import type { z } from 'zod';
import { type Action, actionToMessage, type ChatMessage, type ToolMessage } from './environment.js';
import {
  MalformedToolCall,
  type ParsedToolCall,
  parseToolCall,
  toolCallId,
  toolReply,
} from './tool-calls.js';

export interface ToolTurnRules<Tools extends Record<string, z.ZodType>, Count extends string> {
  /** The track, as its errors name it: 'gui' → "gui env: …". */
  env: string;
  /** The track's tools: name → argument schema. */
  tools: Tools;
  /** Malformed calls tolerated per episode; one more ends it. Infinity: they never end it. */
  maxParseErrors: number;
  /** The field of the track's info that counts malformed calls. */
  parseErrorCount: Count;
  /**
   * What a malformed call's error message ends with, given how many more malformed calls are
   * tolerated (negative once the limit is passed). Default: nothing.
   */
  malformedNote?: (left: number) => string;
}

/** The counters of a track's episode info that reading a call moves. */
export type ToolCallCounts<Count extends string> = { toolCalls: number } & Record<Count, number>;

/** A call read: the parsed call to run, or the error message that answers a malformed one. */
export type ReadToolCall<Tools extends Record<string, z.ZodType>> =
  | { ok: true; call: ParsedToolCall<Tools> }
  | { ok: false; reply: ToolMessage };

/** The id that answers call `n` of turn `turn`: its own, else one made up from its place. */
export function turnCallId(raw: unknown, turn: number, n: number): string {
  return toolCallId(raw, `call_invalid_${turn}_${n}`);
}

export class ToolTurn<Tools extends Record<string, z.ZodType>, Count extends string> {
  constructor(readonly rules: ToolTurnRules<Tools, Count>) {}

  /**
   * The step prologue: checks that the action is an object, adds it to the conversation as the
   * assistant's message and returns its raw tool calls (none: the agent answered).
   */
  open(action: Action, messages: ChatMessage[]): unknown[] {
    if (action === null || typeof action !== 'object')
      throw new TypeError(`${this.rules.env} env: action must be an object`);
    const rawCalls: unknown[] = Array.isArray(action.tool_calls) ? action.tool_calls : [];
    messages.push(actionToMessage({ content: action.content, tool_calls: action.tool_calls }));
    return rawCalls;
  }

  /** Counts one raw call and parses it; a malformed one is charged and answered under `id`. */
  read(raw: unknown, id: string, counts: ToolCallCounts<Count>): ReadToolCall<Tools> {
    counts.toolCalls++;
    try {
      return { ok: true, call: parseToolCall(raw, this.rules.tools) };
    } catch (e) {
      if (!(e instanceof MalformedToolCall)) throw e;
      const errors = counts as Record<Count, number>;
      errors[this.rules.parseErrorCount]++;
      const note = this.rules.malformedNote?.(this.rules.maxParseErrors - errors[this.rules.parseErrorCount]);
      return {
        ok: false,
        reply: toolReply(id, `Error: malformed tool call: ${e.message}${note ?? ''}`, e.toolName),
      };
    }
  }

  /** More than `maxParseErrors` malformed calls so far: the episode ends. */
  limitPassed(counts: ToolCallCounts<Count>): boolean {
    return (counts as Record<Count, number>)[this.rules.parseErrorCount] > this.rules.maxParseErrors;
  }
}
