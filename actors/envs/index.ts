/** `clawray/envs`: the environment interface, tracks, the `EnvPool` actor and the task checker. */

export { type CheckOptions, checkTasks, playEpisode, type TaskCheck } from './env-check.js';
export {
  EnvPool,
  type EnvPoolOptions,
  type EnvPoolStats,
  type Lease,
  LeaseBusyError,
  LeaseNotFoundError,
  PoolExhaustedError,
} from './env-pool.js';
export type {
  Action,
  AssistantMessage,
  ChatMessage,
  Environment,
  Evaluation,
  Observation,
  StepResult,
  ToolCall,
  ToolMessage,
  ToolSchema,
} from './environment.js';
export { runSandboxed, type SandboxOptions, type SandboxResult } from './sandbox/sandbox.js';
export {
  compileSandboxLimits,
  SANDBOX_DEFAULTS,
  type SandboxLimitOptions,
} from './sandbox/sandbox-limits.js';
export {
  DO_NOTHING_ACTION,
  type Split,
  TRACK_NAMES,
  type Track,
  type TrackEnvOptions,
  type TrackName,
  type TrackTask,
} from './track.js';
export { isTrackName, loadTasks, loadTrack, type TaskSource } from './tracks.js';
