export { CalculatorError, calculate, evaluateExpression, formatNumber } from './calculator.js';
export { CORPUS, type Passage, parseJsonlCorpus } from './corpus.js';
export {
  DEFAULT_MAX_TOOL_CALLS,
  DEFAULT_MAX_TURNS,
  DEFAULT_SYSTEM_PROMPT,
  ToolcallEnvironment,
  type ToolcallEnvOptions,
  type ToolcallInfo,
} from './env.js';
export { DocumentStore, type SearchHit } from './lookup.js';
export { loadToolcallTasks, TASK_FILE_NAME, writeToolcallTasks } from './task-file.js';
export {
  buildTaskSuite,
  type Split,
  type SuiteOptions,
  type TaskKind,
  type ToolcallTask,
  taskSplit,
} from './tasks.js';
export {
  type CodeRunnerLimits,
  DEFAULT_CODE_LIMITS,
  TOOL_ARGUMENTS,
  TOOL_SCHEMAS,
  type ToolName,
  type ToolOutcome,
  ToolRunner,
} from './tools.js';
export { toolcallTrack } from './track.js';
export { lastBoxed, REWARD_CORRECT, REWARD_WRONG, type Verdict, verifyAnswer } from './verifier.js';
