/**
 * The gui track's built-in task suite, generated locally and deterministically (a seeded PRNG,
 * no downloads): forms, a to-do list, scrolled terms, a menu bar, settings tabs, dialogs, a
 * slider and a canvas of shapes. Every task carries an ORACLE — scripted clicks (by accessible
 * name, or by coordinates from the page's fixed layout), typing, keys and scrolls — that reaches
 * +1 through the environment, and its initial page state never meets its goal.
 *
 * Splits follow the toolcall track's rule: a task is held out when the FNV-1a hash of its
 * instruction is 0 mod 5, so a task's split never depends on what else was generated. Ids are
 * `gui-<kind>-<hash>`; tasks are ordered by kind, then id.
 */
import { seededRandom } from '../../../common/random.js';
import { fnv1a, type Split, splitOf, type TrackTask } from '../track.js';
import { dialogPage } from './dialogs.js';
import { GUI_TASK_KINDS, type GuiDraft, type GuiTaskKind, type Rand } from './drafts.js';
import { formPage } from './forms.js';
import type { GuiGoal } from './goal.js';
import { termsPage, todoPage } from './lists.js';
import { menuBarPage, settingsTabsPage } from './menus.js';
import { canvasPage, sliderPage } from './pointer.js';

export interface GuiTask extends TrackTask {
  /** A built-in kind, or any label a task file gives (default 'page'). */
  kind: string;
  /** What the agent is asked to do (the episode's user message). */
  instruction: string;
  /** The whole page, self-contained (inline style and script; nothing else is served). */
  html: string;
  goal: GuiGoal;
}

export const GUI_SUITE_SEED = 20240917;
export const DEFAULT_PER_KIND = 3;

const GENERATORS: Record<GuiTaskKind, (rand: Rand, index: number) => GuiDraft> = {
  form: formPage,
  todo: todoPage,
  terms: termsPage,
  menu: menuBarPage,
  tabs: settingsTabsPage,
  dialog: dialogPage,
  slider: sliderPage,
  canvas: canvasPage,
};

/** The split of a task with this instruction. */
export function guiSplitOf(instruction: string): Split {
  return splitOf(instruction);
}

export function guiTaskId(kind: string, instruction: string): string {
  return `gui-${kind}-${fnv1a(instruction)}`;
}

export interface GuiSuiteOptions {
  seed?: number;
  /** Tasks per kind (default 3; kinds with several page templates cycle through them). */
  perKind?: number;
}

/** The whole suite, both splits, in a stable order (kind, then id). */
export function buildGuiSuite(options: GuiSuiteOptions = {}): GuiTask[] {
  const seed = options.seed ?? GUI_SUITE_SEED;
  const perKind = options.perKind ?? DEFAULT_PER_KIND;
  const tasks: GuiTask[] = [];
  for (const [k, kind] of GUI_TASK_KINDS.entries()) {
    // A stream per kind, so adding a kind or a template elsewhere leaves these tasks as they were.
    const rand = seededRandom(seed + 7919 * (k + 1));
    const drafts = new Map<string, GuiDraft>();
    for (let i = 0; i < perKind; i++) {
      for (let attempt = 0; attempt < 20; attempt++) {
        const draft = GENERATORS[kind](rand, i);
        if (drafts.has(draft.instruction)) continue;
        drafts.set(draft.instruction, draft);
        break;
      }
    }
    const ofKind = [...drafts.values()].map(
      (d): GuiTask => ({
        id: guiTaskId(kind, d.instruction),
        split: guiSplitOf(d.instruction),
        kind,
        instruction: d.instruction,
        html: d.html,
        goal: d.goal,
        oracle: d.oracle,
      }),
    );
    ofKind.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    tasks.push(...ofKind);
  }
  return tasks;
}

export function guiTaskSplit(split: Split, options: GuiSuiteOptions = {}): GuiTask[] {
  return buildGuiSuite(options).filter((t) => t.split === split);
}
