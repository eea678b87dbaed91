/**
 * The swe track: SWE-bench-like tasks (a repository snapshot, a test command, FAIL_TO_PASS /
 * PASS_TO_PASS lists); the agent works with bash in the sandbox, and its final `git diff`, applied
 * to a fresh copy, is scored ±1 by the tests.
 */
import type { Track, TrackEnvOptions } from '../track.js';
import { SweEnvironment } from './env.js';
import { loadSweTasks, type SweTask } from './task-file.js';
import { builtinSweTasks } from './tasks.js';

export const sweTrack: Track<SweTask> = {
  name: 'swe',
  description:
    'repository snapshots with an issue; the agent edits with bash in a sandbox and its git diff is scored ±1 by FAIL_TO_PASS/PASS_TO_PASS tests',
  builtinTasks: () => builtinSweTasks(),
  loadTasks: (path) => loadSweTasks(path),
  createEnvironment: (tasks, options: TrackEnvOptions = {}) => new SweEnvironment(tasks, options),
};

export {
  DEFAULT_SYSTEM_PROMPT,
  parseSweSettings,
  REWARD_RESOLVED,
  REWARD_UNRESOLVED,
  SWE_SETTINGS,
  SweEnvironment,
  type SweEnvOptions,
  type SweInfo,
  type SweSettings,
} from './env.js';
export {
  type DiffOutcome,
  type Grade,
  type GradedTask,
  type GraderOptions,
  gradePatch,
  patchPaths,
  takeDiff,
} from './grader.js';
export { type BugSpec, TEMPLATES, type Template, type TestCase } from './repos.js';
export { DEFAULT_SANDBOX_LIMITS, type SandboxLimits } from './shell.js';
export { copySnapshot, createSnapshot, type SnapshotSource } from './snapshot.js';
export {
  fnv1a,
  goldPatchOracle,
  HELDOUT_EVERY,
  loadSweTasks,
  type SweTask,
  splitOf,
  taskToJsonLine,
  writeSweTaskFile,
} from './task-file.js';
export {
  builtinSweTasks,
  draftSuite,
  HIDDEN_RUNNER,
  type RepoDraft,
  type RunnerStyle,
  SUITE_SEED,
  type SuiteOptions,
  suiteCacheDir,
  TEST_CMD,
  VISIBLE_TEST_CMD,
  writeSweSuite,
} from './tasks.js';
export {
  isPassing,
  judgeTests,
  parseTestOutput,
  type TestGroupOutcome,
  type TestStatus,
  type TestVerdict,
} from './test-results.js';
export {
  clip,
  runTool,
  TOOL_ARGUMENTS,
  TOOL_SCHEMAS,
  type ToolLimits,
  type ToolName,
  type ToolOutcome,
} from './tools.js';
