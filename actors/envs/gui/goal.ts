/**
 * The evaluator. A task's goal names the values some keys of the page's `window.__taskState`
 * must hold; the episode earns +1 when every named key deep-equals its goal value (JSON
 * equality: object key order does not matter, array order does), else −1. Keys the goal does
 * not name are free, so a page may keep bookkeeping beside what is scored.
 */
import type { Page } from 'playwright-core';
import { z } from 'zod';

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

export interface GuiGoal {
  state: Record<string, JsonValue>;
}

export const REWARD_SUCCESS = 1;
export const REWARD_FAILURE = -1;

export const goalSchema = z.strictObject({
  state: z
    .record(z.string(), z.json())
    .refine((s) => Object.keys(s).length > 0, 'a goal must name at least one state key'),
});

export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]));
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  const bo = b as Record<string, unknown>;
  return ka.every((k) => Object.hasOwn(bo, k) && jsonEqual((a as Record<string, unknown>)[k], bo[k]));
}

export interface GoalCheck {
  met: boolean;
  /** The goal's keys whose page value differs. */
  unmet: string[];
}

export function checkGoal(state: unknown, goal: GuiGoal): GoalCheck {
  const record = state !== null && typeof state === 'object' && !Array.isArray(state) ? state : {};
  const unmet = Object.keys(goal.state).filter(
    (k) => !jsonEqual((record as Record<string, unknown>)[k], goal.state[k]),
  );
  return { met: unmet.length === 0, unmet };
}

/** The page's `window.__taskState` as JSON (null when the page defines none). */
export async function readPageState(page: Page): Promise<unknown> {
  const text = await page.evaluate(
    'JSON.stringify(window.__taskState === undefined ? null : window.__taskState)',
  );
  return typeof text === 'string' ? JSON.parse(text) : null;
}
