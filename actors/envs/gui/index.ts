import type { Track } from '../track.js';
import { GuiEnvironment, parseGuiSettings } from './env.js';
import { loadGuiTasks } from './task-file.js';
import { buildGuiSuite, type GuiTask } from './tasks.js';

export {
  accessibilityTree,
  ElementLookupError,
  type ElementSpec,
  parseElementSpec,
  RefNumbering,
  type ResolvedElement,
  resolveElement,
} from './accessibility.js';
export {
  ActionError,
  GUI_TOOL_ARGUMENTS,
  GUI_TOOL_SCHEMAS,
  type GuiToolArguments,
  type GuiToolName,
  performAction,
} from './actions.js';
export {
  CHROMIUM_ARGS,
  CHROMIUM_PATH_ENV,
  DEFAULT_CHROMIUM_PATH,
  DEFAULT_VIEWPORT,
  type LaunchOptions,
  launchChromium,
  resolveChromiumPath,
  type Viewport,
} from './browser.js';
export { GUI_TASK_KINDS, type GuiTaskKind } from './drafts.js';
export {
  DEFAULT_ACTION_TIMEOUT_MS,
  DEFAULT_MAX_ACTIONS_PER_TURN,
  DEFAULT_MAX_PARSE_ERRORS,
  DEFAULT_MAX_STEPS,
  DEFAULT_READ_TIMEOUT_MS,
  DEFAULT_SYSTEM_PROMPT,
  defaultSystemPrompt,
  type GuiEndReason,
  GuiEnvironment,
  type GuiEnvOptions,
  type GuiInfo,
  type GuiSettings,
  guiSettingsSchema,
  parseGuiSettings,
} from './env.js';
export {
  checkGoal,
  type GoalCheck,
  type GuiGoal,
  type JsonValue,
  jsonEqual,
  REWARD_FAILURE,
  REWARD_SUCCESS,
  readPageState,
} from './goal.js';
export { PAGE_CSP, PageServer } from './page-server.js';
export { loadGuiTasks, TASKS_FILE, writeGuiSuite } from './task-file.js';
export {
  buildGuiSuite,
  GUI_SUITE_SEED,
  type GuiSuiteOptions,
  type GuiTask,
  guiSplitOf,
  guiTaskId,
  guiTaskSplit,
} from './tasks.js';

export const guiTrack: Track<GuiTask> = {
  name: 'gui',
  description:
    'Web pages in headless Chromium (forms, menus, dialogs, tabs, a slider, a canvas): screenshot and ' +
    'accessibility tree in, click/type/key/scroll out; the page state decides ±1',
  builtinTasks: async () => buildGuiSuite(),
  loadTasks: (path) => loadGuiTasks(path),
  createEnvironment: (tasks, options = {}) =>
    new GuiEnvironment({
      ...parseGuiSettings(options.settings),
      tasks,
      split: options.split,
      seed: options.seed,
    }),
};
