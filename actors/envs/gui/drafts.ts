/**
 * What a page generator produces — a draft task: its page, instruction, goal and oracle — and
 * the helpers the generators share to draw parameters and script oracles.
 */
import type { Action, ToolCall } from '../environment.js';
import type { GuiGoal } from './goal.js';

export const GUI_TASK_KINDS = [
  'form',
  'todo',
  'terms',
  'menu',
  'tabs',
  'dialog',
  'slider',
  'canvas',
] as const;
export type GuiTaskKind = (typeof GUI_TASK_KINDS)[number];

export interface GuiDraft {
  kind: GuiTaskKind;
  instruction: string;
  html: string;
  goal: GuiGoal;
  oracle: Action[];
}

export type Rand = () => number;

export function int(rand: Rand, lo: number, hi: number): number {
  return lo + Math.floor(rand() * (hi - lo + 1));
}

export function pick<T>(rand: Rand, items: readonly T[]): T {
  return items[Math.floor(rand() * items.length)];
}

/** `n` distinct items in random order. */
export function sample<T>(rand: Rand, items: readonly T[], n: number): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy.slice(0, n);
}

/** One tool call of an oracle turn, before it gets its id. */
export interface OracleCall {
  name: 'click' | 'type' | 'key' | 'scroll';
  args: Record<string, unknown>;
}

export const click = (element: string): OracleCall => ({ name: 'click', args: { element } });
export const clickAt = (x: number, y: number): OracleCall => ({ name: 'click', args: { x, y } });
export const typeInto = (element: string, text: string): OracleCall => ({
  name: 'type',
  args: { element, text },
});
export const press = (key: string): OracleCall => ({ name: 'key', args: { key } });
export const scrollAt = (x: number, y: number, dy: number): OracleCall => ({
  name: 'scroll',
  args: { x, y, dy },
});

/** The oracle's turns (each a list of calls made together), then an answer that ends the episode. */
export function oracle(...turns: OracleCall[][]): Action[] {
  const actions: Action[] = turns
    .filter((calls) => calls.length > 0)
    .map((calls, t) => ({
      content: null,
      tool_calls: calls.map(
        (c, n): ToolCall => ({
          id: `call_${t + 1}_${n + 1}`,
          type: 'function',
          function: { name: c.name, arguments: JSON.stringify(c.args) },
        }),
      ),
    }));
  actions.push({ content: 'The task is done.' });
  return actions;
}
