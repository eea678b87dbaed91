/**
 * The terminal track: shell tasks in a sandboxed workspace, terminal-bench style (a task is an
 * instruction, a setup script and tests; tools `shell_exec`, `view`, `write_file`; reward
 * 2·(share of tests passed) − 1).
 */
import { z } from 'zod';
import { ConfigError } from '../../../common/errors.js';
import { describeIssues } from '../jsonl-records.js';
import { compileSandboxLimits } from '../sandbox/sandbox-limits.js';
import type { Track, TrackEnvOptions } from '../track.js';
import { TerminalEnvironment } from './env.js';
import { buildTerminalSuite } from './suite.js';
import type { TerminalTask } from './task.js';
import { loadTerminalTasks } from './task-dir.js';

const positiveInt = () => z.number().int().positive();

/** `settings` of `createEnvironment`: the environment's limits, each optional. */
export const terminalSettingsSchema = z.strictObject({
  maxSteps: positiveInt().optional(),
  maxParseErrors: z.number().int().nonnegative().optional(),
  commandTimeoutMs: positiveInt().optional(),
  setupTimeoutMs: positiveInt().optional(),
  testTimeoutMs: positiveInt().optional(),
  maxOutputChars: z.number().int().min(200).optional(),
  memoryMb: positiveInt().optional(),
  maxProcesses: positiveInt().optional(),
  maxFileMb: positiveInt().optional(),
  tmpSizeMb: positiveInt().optional(),
  tmpMaxFiles: positiveInt().optional(),
  workspaceMaxMb: positiveInt().optional(),
  workspaceMaxFiles: positiveInt().optional(),
  seccomp: z.boolean().optional(),
  systemPrompt: z.string().min(1).optional(),
  workDir: z.string().min(1).optional(),
});

export type TerminalSettings = z.output<typeof terminalSettingsSchema>;

/** The environment for `tasks` with validated track settings; a bad field is a ConfigError naming it. */
export function createTerminalEnvironment(
  tasks: TerminalTask[],
  options: TrackEnvOptions = {},
): TerminalEnvironment {
  const parsed = terminalSettingsSchema.safeParse(options.settings ?? {});
  if (!parsed.success) throw new ConfigError(`terminal env settings: ${describeIssues(parsed.error)}`);
  const {
    memoryMb,
    maxProcesses,
    maxFileMb,
    tmpSizeMb,
    tmpMaxFiles,
    workspaceMaxMb,
    workspaceMaxFiles,
    seccomp,
    ...rest
  } = parsed.data;
  const sandbox = {
    memoryMb,
    maxProcesses,
    maxFileMb,
    tmpSizeMb,
    tmpMaxFiles,
    workspaceMaxMb,
    workspaceMaxFiles,
    seccomp,
  };
  // The sandbox checks its own ranges (a ConfigError naming the field) before any episode runs.
  compileSandboxLimits(sandbox);
  const limits = Object.fromEntries(Object.entries(sandbox).filter(([, v]) => v !== undefined));
  return new TerminalEnvironment({ tasks, split: options.split, seed: options.seed, limits, ...rest });
}

export const terminalTrack: Track<TerminalTask> = {
  name: 'terminal',
  description:
    'shell tasks in a sandboxed workspace (setup script, hidden tests); reward 2·(tests passed share) − 1',
  async builtinTasks() {
    return buildTerminalSuite();
  },
  loadTasks: loadTerminalTasks,
  createEnvironment: createTerminalEnvironment,
};

export {
  DEFAULT_SETTINGS,
  DEFAULT_SYSTEM_PROMPT,
  type EndReason,
  TerminalEnvironment,
  type TerminalEnvOptions,
  type TerminalInfo,
  type TerminalTestsInfo,
} from './env.js';
export {
  BUILTIN_RUN_TESTS,
  BUILTIN_TEST_FILE,
  buildTerminalSuite,
  builtinSplit,
  SUITE_SEED,
  type SuiteOptions,
} from './suite.js';
export { fnv1a, HELDOUT_EVERY, oracleFor, splitOfHash, type TerminalTask } from './task.js';
export {
  loadTerminalTaskDir,
  loadTerminalTasks,
  RUN_TESTS_FILE,
  SETUP_FILE,
  SOLUTION_FILE,
  TASK_FILE,
  TESTS_DIR,
  writeTerminalTask,
  writeTerminalTasks,
} from './task-dir.js';
export { parseTestOutput, scoreTestOutput, type TestOutcome, type TestReport } from './test-results.js';
export {
  clip,
  isToolName,
  MAX_COMMAND_BYTES,
  TOOL_ARGUMENTS,
  TOOL_SCHEMAS,
  type ToolName,
  type ToolOutcome,
} from './tools.js';
export {
  DEFAULT_SANDBOX_LIMITS,
  type SandboxLimits,
  SHELL,
  sandboxPath,
  type TestRun,
  Workspace,
} from './workspace.js';
