/**
 * The swe track's environment. An episode: `reset` copies the task's snapshot (the repository at
 * its base commit, without the hidden test patch) to a fresh workspace; the first observation is
 * the system prompt and the issue. The agent works through the tools of tools.ts, every one of
 * them in the sandbox. A turn without tool calls ends the episode and scores it (grader.ts): the
 * workspace's diff goes onto a fresh copy, the tests decide +1 (resolved) or −1.
 *
 * Limits: after `maxSteps` turns the episode is scored as it stands and ends (`info.truncated`);
 * malformed tool calls (bad shape, unknown tool, arguments that are not a JSON object fitting the
 * tool) are answered with an error message, and past `maxParseErrors` of them the episode ends
 * with −1; calls past `maxCallsPerStep` in one turn are answered with an error and not run.
 */

import { mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { ConfigError } from '../../../common/errors.js';
import { seededRandom } from '../../../common/random.js';
import type {
  Action,
  ChatMessage,
  Environment,
  Evaluation,
  Observation,
  StepResult,
  ToolMessage,
} from '../environment.js';
import { compileSandboxLimits } from '../sandbox/sandbox-limits.js';
import { TaskDeck } from '../task-deck.js';
import { toolReply } from '../tool-calls.js';
import { ToolTurn, turnCallId } from '../tool-turn.js';
import type { Split } from '../track.js';
import { type Grade, type GraderOptions, gradePatch, takeDiff } from './grader.js';
import { DEFAULT_SANDBOX_LIMITS } from './shell.js';
import { copySnapshot, createSnapshot, removeTree } from './snapshot.js';
import type { SweTask } from './task-file.js';
import type { TestGroupOutcome } from './test-results.js';
import { runTool, TOOL_ARGUMENTS, TOOL_SCHEMAS, type ToolLimits } from './tools.js';

export const REWARD_RESOLVED = 1;
export const REWARD_UNRESOLVED = -1;

export const DEFAULT_SYSTEM_PROMPT =
  'You are a software engineer fixing an issue in a git repository, checked out at /workspace. ' +
  'Use the tools to explore the code, reproduce the problem, edit files and run tests; every ' +
  'command runs in a sandbox without network. Change only what the fix needs. When you are done, ' +
  'reply without any tool call: your changes (the git diff of the repository, new files included) ' +
  'are then applied to a fresh copy and the project’s tests, including hidden ones, decide whether ' +
  'the issue is resolved.';

/** Settings of `createEnvironment(tasks, { settings })`; every field optional. */
export const SWE_SETTINGS = z.strictObject({
  /** Agent turns before the episode is scored as it stands. */
  maxSteps: z.number().int().min(1).default(30),
  /** Malformed tool calls tolerated per episode; one more ends it with −1. */
  maxParseErrors: z.number().int().min(0).default(3),
  /** Tool calls run per turn; the rest are answered with an error. */
  maxCallsPerStep: z.number().int().min(1).default(16),
  /** Wall clock of one tool call. */
  commandTimeoutMs: z.number().int().min(1).default(120_000),
  /** Wall clock of the test command when scoring. */
  testTimeoutMs: z.number().int().min(1).default(600_000),
  /** Wall clock of each git step when scoring (taking and applying the diff). */
  gitTimeoutMs: z.number().int().min(1).default(120_000),
  /** Characters of a tool's output the agent sees. */
  maxOutputChars: z.number().int().min(200).default(10_000),
  /** A larger diff scores −1. */
  maxPatchBytes: z
    .number()
    .int()
    .min(1)
    .default(1024 * 1024),
  /** Test output kept for reading the results. */
  maxTestOutputBytes: z
    .number()
    .int()
    .min(1024)
    .default(16 * 1024 * 1024),
  memoryMb: z.number().int().min(64).default(DEFAULT_SANDBOX_LIMITS.memoryMb),
  maxProcesses: z.number().int().min(8).default(DEFAULT_SANDBOX_LIMITS.maxProcesses),
  tmpSizeMb: z.number().int().min(1).default(DEFAULT_SANDBOX_LIMITS.tmpSizeMb),
  /** The sandbox's other limits (actors/envs/sandbox/sandbox-limits.ts); unset, its defaults hold. */
  maxFileMb: z.number().int().min(1).optional(),
  tmpMaxFiles: z.number().int().min(16).optional(),
  workspaceMaxMb: z.number().int().min(1).optional(),
  workspaceMaxFiles: z.number().int().min(1).optional(),
  seccomp: z.boolean().optional(),
  /** Where snapshots and workspaces live (default: the OS temp dir). */
  workDir: z.string().min(1).optional(),
  systemPrompt: z.string().min(1).default(DEFAULT_SYSTEM_PROMPT),
});

export type SweSettings = z.input<typeof SWE_SETTINGS>;
type ResolvedSettings = z.output<typeof SWE_SETTINGS>;

/** Validates settings; a ConfigError names the field. */
export function parseSweSettings(settings: unknown = {}): ResolvedSettings {
  const parsed = SWE_SETTINGS.safeParse(settings ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const unknown = issue.code === 'unrecognized_keys' ? issue.keys.join(', ') : undefined;
    const field = issue.path.map(String).join('.') || unknown || '(settings)';
    throw new ConfigError(`swe settings: ${field}: ${issue.message}`, { fields: { field } });
  }
  return parsed.data;
}

export interface SweInfo {
  taskId: string;
  /** The commit the workspace starts at and the diff is taken against. */
  baseCommit: string;
  /** Agent turns so far. */
  steps: number;
  toolCalls: number;
  malformedToolCalls: number;
  /** Well-formed calls whose command failed (exit ≠ 0, timeout, output cut). */
  commandErrors: number;
  /** Calls refused because the turn already had maxCallsPerStep. */
  refusedToolCalls: number;
  /** maxSteps ended the episode before the agent did. */
  truncated: boolean;
  /** Scored and every FAIL_TO_PASS and PASS_TO_PASS test passed. */
  resolved: boolean;
  /** Why the episode was not resolved (set once scored). */
  reason?: string;
  /** The agent's diff that was scored. */
  patch?: string;
  failToPass?: TestGroupOutcome;
  passToPass?: TestGroupOutcome;
  testExitCode?: number | null;
}

export interface SweEnvOptions {
  /** The split reset() without an id draws from (default 'all'); reset(id) reaches any task. */
  split?: Split | 'all';
  /** Seed of the order in which reset() without an id walks the tasks. */
  seed?: number;
  /** See SWE_SETTINGS. */
  settings?: SweSettings | Record<string, unknown>;
}

interface Snapshot {
  dir: string;
  baseCommit: string;
}

interface Episode {
  task: SweTask;
  snapshot: Snapshot;
  dir: string;
  workspace: string;
  messages: ChatMessage[];
  info: SweInfo;
  done: boolean;
  /** The score the episode ended with. */
  final?: Evaluation<SweInfo>;
}

export class SweEnvironment implements Environment<SweInfo> {
  readonly tasks: readonly SweTask[];
  readonly settings: ResolvedSettings;
  private readonly deck: TaskDeck<SweTask>;
  private readonly toolLimits: ToolLimits;
  private readonly graderOptions: GraderOptions;
  private readonly toolTurn: ToolTurn<typeof TOOL_ARGUMENTS, 'malformedToolCalls'>;
  private root: Promise<string> | undefined;
  private readonly snapshots = new Map<string, Promise<Snapshot>>();
  private episode: Episode | undefined;
  private closed = false;

  constructor(tasks: readonly SweTask[], options: SweEnvOptions = {}) {
    this.settings = parseSweSettings(options.settings);
    if (tasks.length === 0) throw new ConfigError('swe env: no tasks');
    this.tasks = tasks;
    this.deck = new TaskDeck('swe', tasks, options.split ?? 'all', seededRandom(options.seed ?? 0));
    const s = this.settings;
    this.toolTurn = new ToolTurn({
      env: 'swe',
      tools: TOOL_ARGUMENTS,
      maxParseErrors: s.maxParseErrors,
      parseErrorCount: 'malformedToolCalls',
    });
    const sandbox = {
      memoryMb: s.memoryMb,
      maxProcesses: s.maxProcesses,
      tmpSizeMb: s.tmpSizeMb,
      maxFileMb: s.maxFileMb,
      tmpMaxFiles: s.tmpMaxFiles,
      workspaceMaxMb: s.workspaceMaxMb,
      workspaceMaxFiles: s.workspaceMaxFiles,
      seccomp: s.seccomp,
    };
    // The sandbox checks its own ranges (a ConfigError naming the field) before any episode runs.
    compileSandboxLimits(sandbox);
    this.toolLimits = { sandbox, commandTimeoutMs: s.commandTimeoutMs, maxOutputChars: s.maxOutputChars };
    this.graderOptions = {
      limits: sandbox,
      testTimeoutMs: s.testTimeoutMs,
      gitTimeoutMs: s.gitTimeoutMs,
      maxPatchBytes: s.maxPatchBytes,
      maxTestOutputBytes: s.maxTestOutputBytes,
    };
  }

  /** The task of the current episode. */
  get currentTask(): SweTask | undefined {
    return this.episode?.task;
  }

  /** The host directory of the current episode's workspace (for inspection and tests). */
  get workspace(): string | undefined {
    return this.episode?.workspace;
  }

  async reset(taskId?: string): Promise<Observation> {
    this.assertOpen();
    const task = this.deck.draw(taskId);
    await this.discardEpisode();
    const snapshot = await this.snapshotOf(task);
    const dir = await mkdtemp(join(await this.workRoot(), 'episode-'));
    const workspace = join(dir, 'repo');
    await copySnapshot(snapshot.dir, workspace);
    this.assertOpen();
    const issue = `Resolve this issue in the repository at /workspace:\n\n<issue>\n${task.problemStatement.trim()}\n</issue>`;
    this.episode = {
      task,
      snapshot,
      dir,
      workspace,
      messages: [
        { role: 'system', content: this.settings.systemPrompt },
        { role: 'user', content: issue },
      ],
      info: {
        taskId: task.id,
        baseCommit: snapshot.baseCommit,
        steps: 0,
        toolCalls: 0,
        malformedToolCalls: 0,
        commandErrors: 0,
        refusedToolCalls: 0,
        truncated: false,
        resolved: false,
      },
      done: false,
    };
    return this.observation(issue);
  }

  async step(action: Action): Promise<StepResult<SweInfo>> {
    this.assertOpen();
    const ep = this.episode;
    if (!ep) throw new Error('swe env: step() before reset()');
    if (ep.done) throw new Error('swe env: step() after the episode ended; reset() first');
    const rawCalls = this.toolTurn.open(action, ep.messages);
    ep.info.steps++;
    if (rawCalls.length === 0) return this.finish(ep, '');

    const results: ToolMessage[] = [];
    for (const [n, raw] of rawCalls.entries()) results.push(await this.answerCall(ep, raw, n));
    ep.messages.push(...results);
    const text = results.map((r) => r.content).join('\n\n');
    // Every call of the turn is run; past the limit the episode then ends with −1.
    if (this.toolTurn.limitPassed(ep.info)) {
      ep.info.reason = `more than ${this.settings.maxParseErrors} malformed tool calls`;
      return this.end(ep, text, { reward: REWARD_UNRESOLVED, info: { ...ep.info } });
    }
    if (ep.info.steps >= this.settings.maxSteps) {
      ep.info.truncated = true;
      return this.finish(ep, text);
    }
    return { observation: this.observation(text), reward: 0, done: false, info: { ...ep.info } };
  }

  async evaluate(): Promise<Evaluation<SweInfo>> {
    this.assertOpen();
    const ep = this.episode;
    if (!ep) throw new Error('swe env: evaluate() before reset()');
    if (ep.final) return { reward: ep.final.reward, info: { ...ep.final.info } };
    return this.score(ep);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.episode = undefined;
    const root = this.root;
    this.root = undefined;
    this.snapshots.clear();
    const dir = await root?.catch(() => undefined);
    if (dir) await removeTree(dir);
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('swe env: closed');
  }

  private workRoot(): Promise<string> {
    this.root ??= (async () => {
      const parent = this.settings.workDir ?? tmpdir();
      await mkdir(parent, { recursive: true });
      return mkdtemp(join(parent, 'clawray-swe-'));
    })();
    return this.root;
  }

  private snapshotOf(task: SweTask): Promise<Snapshot> {
    let made = this.snapshots.get(task.id);
    if (!made) {
      made = (async () => {
        const dir = await mkdtemp(join(await this.workRoot(), 'snapshot-'));
        const baseCommit = await createSnapshot({ repo: task.repo, baseCommit: task.baseCommit }, dir);
        return { dir, baseCommit };
      })();
      this.snapshots.set(task.id, made);
      // A failure (a missing repository) is reported now and retried on the next reset.
      made.catch(() => this.snapshots.delete(task.id));
    }
    return made;
  }

  private async discardEpisode(): Promise<void> {
    const ep = this.episode;
    this.episode = undefined;
    if (ep) await removeTree(ep.dir);
  }

  private observation(text: string): Observation {
    return { messages: [...(this.episode?.messages ?? [])], text, tools: [...TOOL_SCHEMAS] };
  }

  /** Takes the workspace's diff and grades it on a fresh copy. */
  private async score(ep: Episode): Promise<Evaluation<SweInfo>> {
    const diff = await takeDiff(ep.workspace, ep.snapshot.baseCommit, this.graderOptions);
    let grade: Grade;
    if (diff.error !== undefined) {
      grade = { resolved: false, reason: diff.error };
    } else {
      grade = await gradePatch(
        ep.task,
        ep.snapshot.dir,
        ep.snapshot.baseCommit,
        diff.patch,
        ep.dir,
        this.graderOptions,
      );
    }
    const info: SweInfo = { ...ep.info, resolved: grade.resolved };
    if (diff.patch !== undefined) info.patch = diff.patch;
    if (grade.reason !== undefined) info.reason = grade.reason;
    if (grade.failToPass) info.failToPass = grade.failToPass;
    if (grade.passToPass) info.passToPass = grade.passToPass;
    if (grade.testExitCode !== undefined) info.testExitCode = grade.testExitCode;
    return { reward: grade.resolved ? REWARD_RESOLVED : REWARD_UNRESOLVED, info };
  }

  private async finish(ep: Episode, text: string): Promise<StepResult<SweInfo>> {
    const evaluation = await this.score(ep);
    ep.info = evaluation.info;
    return this.end(ep, text, evaluation);
  }

  private async end(
    ep: Episode,
    text: string,
    evaluation: Evaluation<SweInfo>,
  ): Promise<StepResult<SweInfo>> {
    ep.done = true;
    ep.final = evaluation;
    // The workspace is of no further use; long runs should not pile them up.
    await removeTree(ep.workspace);
    return {
      observation: this.observation(text),
      reward: evaluation.reward,
      done: true,
      info: { ...evaluation.info },
    };
  }

  private async answerCall(ep: Episode, raw: unknown, n: number): Promise<ToolMessage> {
    const info = ep.info;
    const id = turnCallId(raw, info.steps, n);
    const read = this.toolTurn.read(raw, id, info);
    if (!read.ok) return read.reply;
    const call = read.call;
    if (n >= this.settings.maxCallsPerStep) {
      info.refusedToolCalls++;
      return toolReply(
        id,
        `Error: at most ${this.settings.maxCallsPerStep} tool calls are run per turn; this one was not run.`,
        call.name,
      );
    }
    const outcome = await runTool(call.name, call.args, ep.workspace, this.toolLimits);
    if (outcome.error) info.commandErrors++;
    return toolReply(id, outcome.content, call.name);
  }
}
