/**
 * The terminal track's environment. An episode: a fresh workspace prepared by the task's setup
 * script → a system prompt and the instruction → the agent's turns, whose tool calls
 * (`shell_exec`, `view`, `write_file`) run in the sandbox and are answered by `tool` messages →
 * the tests run on the workspace and the reward is 2·(passed/total) − 1.
 *
 * The episode ends when the agent answers without tool calls, after `maxSteps` turns or when the
 * task's agent time budget is spent (both `truncated`; the tests still score the work), or when
 * the agent makes more than `maxParseErrors` malformed tool calls (bad JSON, unknown tool,
 * arguments off the schema): then it ends at once with −1, since an agent that cannot call tools
 * should not be credited for whatever state it left. Until then a malformed call is answered with
 * an error message so the agent can correct itself.
 */

import { seededRandom } from '../../../common/random.js';
import type {
  Action,
  ChatMessage,
  Environment,
  Evaluation,
  Observation,
  StepResult,
  ToolMessage,
  ToolSchema,
} from '../environment.js';
import { TaskDeck } from '../task-deck.js';
import { toolReply } from '../tool-calls.js';
import { ToolTurn, turnCallId } from '../tool-turn.js';
import type { Split } from '../track.js';
import { buildTerminalSuite } from './suite.js';
import type { TerminalTask } from './task.js';
import { runTool, TOOL_ARGUMENTS, TOOL_SCHEMAS } from './tools.js';
import {
  DEFAULT_SANDBOX_LIMITS,
  SANDBOX_ROOT,
  type SandboxLimits,
  type TestRun,
  Workspace,
} from './workspace.js';

export const DEFAULT_SYSTEM_PROMPT =
  `You are an agent solving a task in a Linux shell sandbox. The working directory is ${SANDBOX_ROOT}; ` +
  'it holds the files of the task. Use the tools (shell_exec, view, write_file) to do the work; ' +
  'there is no network access. When the task is done, reply without tool calls: your work is then ' +
  'checked by tests you cannot see.';

export const DEFAULT_SETTINGS = {
  maxSteps: 30,
  maxParseErrors: 5,
  commandTimeoutMs: 30_000,
  setupTimeoutMs: 120_000,
  testTimeoutMs: 120_000,
  maxOutputChars: 10_000,
} as const;

export type EndReason = 'answered' | 'max_steps' | 'agent_timeout' | 'parse_errors';

export type TerminalTestsInfo = {
  passed: number;
  total: number;
  outcomes: Record<string, 'passed' | 'failed'>;
  exitCode: number | null;
  timedOut: boolean;
  durationMs: number;
  outputTail: string;
};

// A type alias, not an interface, so it is a Record<string, unknown> for the generic Track API.
export type TerminalInfo = {
  taskId: string;
  turns: number;
  toolCalls: number;
  /** Malformed tool calls: bad shape or JSON, unknown tool, arguments off the schema. */
  parseErrors: number;
  /** Well-formed calls that failed: exit ≠ 0, timeout, refused path, missing file. */
  toolErrors: number;
  /** Wall clock the agent's tool calls took. */
  agentTimeMs: number;
  /** The step limit or the agent time budget ended the episode before the agent said it was done. */
  truncated: boolean;
  endReason?: EndReason;
  /** The last test run (at the end, or of evaluate()). */
  tests?: TerminalTestsInfo;
};

export interface TerminalEnvOptions {
  /** The tasks episodes draw from (default: the built-in suite). */
  tasks?: TerminalTask[];
  /** Restrict the default draw to one split ('all' by default); reset(taskId) reaches any task. */
  split?: Split | 'all';
  /** Seed of the order in which reset() without an id walks the tasks. */
  seed?: number;
  /** Turns per episode. */
  maxSteps?: number;
  /** Malformed tool calls tolerated per episode; one more ends it with −1. */
  maxParseErrors?: number;
  /** Wall clock of one tool call. */
  commandTimeoutMs?: number;
  setupTimeoutMs?: number;
  /** Wall clock of the test run, unless the task sets its own. */
  testTimeoutMs?: number;
  /** Characters of a tool result shown to the agent. */
  maxOutputChars?: number;
  /** Resource limits of every sandboxed command. */
  limits?: Partial<SandboxLimits>;
  systemPrompt?: string;
  /** Where workspaces are created (default: the OS temp dir). */
  workDir?: string;
}

export class TerminalEnvironment implements Environment<TerminalInfo> {
  readonly tasks: TerminalTask[];
  private readonly deck: TaskDeck<TerminalTask>;
  private readonly settings: Required<
    Omit<TerminalEnvOptions, 'tasks' | 'split' | 'seed' | 'limits' | 'workDir'>
  >;
  private readonly limits: SandboxLimits;
  private readonly workDir: string | undefined;
  private readonly tools: ToolSchema[] = [...TOOL_SCHEMAS];
  private readonly toolTurn: ToolTurn<typeof TOOL_ARGUMENTS, 'parseErrors'>;
  private task: TerminalTask | undefined;
  private workspace: Workspace | undefined;
  private messages: ChatMessage[] = [];
  private info: TerminalInfo | undefined;
  private final: Evaluation<TerminalInfo> | undefined;
  private busy = false;
  private closed = false;

  constructor(options: TerminalEnvOptions = {}) {
    this.tasks = options.tasks ?? buildTerminalSuite();
    this.deck = new TaskDeck('terminal', this.tasks, options.split ?? 'all', seededRandom(options.seed ?? 0));
    this.settings = {
      maxSteps: options.maxSteps ?? DEFAULT_SETTINGS.maxSteps,
      maxParseErrors: options.maxParseErrors ?? DEFAULT_SETTINGS.maxParseErrors,
      commandTimeoutMs: options.commandTimeoutMs ?? DEFAULT_SETTINGS.commandTimeoutMs,
      setupTimeoutMs: options.setupTimeoutMs ?? DEFAULT_SETTINGS.setupTimeoutMs,
      testTimeoutMs: options.testTimeoutMs ?? DEFAULT_SETTINGS.testTimeoutMs,
      maxOutputChars: options.maxOutputChars ?? DEFAULT_SETTINGS.maxOutputChars,
      systemPrompt: options.systemPrompt ?? DEFAULT_SYSTEM_PROMPT,
    };
    this.toolTurn = new ToolTurn({
      env: 'terminal',
      tools: TOOL_ARGUMENTS,
      maxParseErrors: this.settings.maxParseErrors,
      parseErrorCount: 'parseErrors',
      // Every malformed call says how many more are tolerated, so the agent sees the end coming.
      malformedNote: (left) =>
        left < 0
          ? '. Too many malformed tool calls: the episode ends.'
          : ` (${left} more malformed calls tolerated)`,
    });
    this.limits = { ...DEFAULT_SANDBOX_LIMITS, ...options.limits };
    this.workDir = options.workDir;
  }

  /** The task of the current episode. */
  get currentTask(): TerminalTask | undefined {
    return this.task;
  }

  /** The host directory of the current episode's workspace (gone once the episode ends). */
  get workspaceDir(): string | undefined {
    return this.workspace?.dir;
  }

  async reset(taskId?: string): Promise<Observation> {
    return this.exclusive(async () => {
      const task = this.deck.draw(taskId);
      await this.dropWorkspace();
      this.task = undefined;
      this.info = undefined;
      this.final = undefined;
      const workspace = await Workspace.create(this.limits, this.workDir);
      this.workspace = workspace;
      if (task.setup !== undefined) {
        const r = await workspace.runScript(task.setup, this.settings.setupTimeoutMs);
        if (r.exitCode !== 0) {
          await this.dropWorkspace();
          const why = r.timedOut
            ? `timed out after ${this.settings.setupTimeoutMs} ms`
            : `exit ${r.exitCode ?? r.signal}`;
          throw new Error(
            `terminal env: the setup of task '${task.id}' failed (${why}): ${r.stderr.trim().slice(-2000)}`,
          );
        }
      }
      this.task = task;
      this.messages = [
        { role: 'system', content: this.settings.systemPrompt },
        { role: 'user', content: task.instruction },
      ];
      this.info = {
        taskId: task.id,
        turns: 0,
        toolCalls: 0,
        parseErrors: 0,
        toolErrors: 0,
        agentTimeMs: 0,
        truncated: false,
      };
      return this.observation(task.instruction);
    });
  }

  async step(action: Action): Promise<StepResult<TerminalInfo>> {
    return this.exclusive(async () => {
      const info = this.info;
      const task = this.task;
      if (!info || !task) throw new Error('terminal env: step() before reset()');
      if (this.final) throw new Error('terminal env: step() after the episode ended; reset() first');
      const rawCalls = this.toolTurn.open(action, this.messages);
      info.turns++;
      if (rawCalls.length === 0) return this.finish('answered', '');

      const budgetMs =
        task.agentTimeoutSec === undefined ? Number.POSITIVE_INFINITY : task.agentTimeoutSec * 1000;
      let end: EndReason | undefined;
      const results: ToolMessage[] = [];
      for (const [n, raw] of rawCalls.entries()) {
        const id = turnCallId(raw, info.turns, n);
        if (end) {
          results.push({ role: 'tool', tool_call_id: id, content: 'Error: not run: the episode has ended.' });
          continue;
        }
        // The budget is checked after every call, so some of it is always left here.
        const timeoutMs = Math.ceil(Math.min(this.settings.commandTimeoutMs, budgetMs - info.agentTimeMs));
        results.push(await this.answerCall(raw, id, info, timeoutMs));
        if (this.toolTurn.limitPassed(info)) end = 'parse_errors';
        else if (info.agentTimeMs >= budgetMs) end = 'agent_timeout';
      }
      this.messages.push(...results);
      const text = results.map((r) => r.content).join('\n\n');
      if (end === undefined && info.turns >= this.settings.maxSteps) end = 'max_steps';
      if (end === undefined)
        return { observation: this.observation(text), reward: 0, done: false, info: { ...info } };
      return this.finish(end, text);
    });
  }

  async evaluate(): Promise<Evaluation<TerminalInfo>> {
    return this.exclusive(async () => {
      if (this.final) return { reward: this.final.reward, info: { ...this.final.info } };
      const info = this.info;
      if (!info || !this.task) throw new Error('terminal env: evaluate() before reset()');
      const run = await this.runTests();
      info.tests = testsInfo(run);
      return { reward: run.report.reward, info: { ...info } };
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.dropWorkspace();
    this.task = undefined;
    this.info = undefined;
    this.messages = [];
  }

  private async finish(reason: EndReason, text: string): Promise<StepResult<TerminalInfo>> {
    const info = this.info!;
    info.endReason = reason;
    info.truncated = reason === 'max_steps' || reason === 'agent_timeout';
    let reward = -1;
    if (reason !== 'parse_errors') {
      const run = await this.runTests();
      info.tests = testsInfo(run);
      reward = run.report.reward;
    }
    this.final = { reward, info: { ...info } };
    await this.dropWorkspace();
    return { observation: this.observation(text), reward, done: true, info: { ...info } };
  }

  private runTests(): Promise<TestRun> {
    const task = this.task!;
    const timeoutMs =
      task.testTimeoutSec === undefined ? this.settings.testTimeoutMs : Math.ceil(task.testTimeoutSec * 1000);
    return this.workspace!.runTests(task, timeoutMs);
  }

  private async answerCall(
    raw: unknown,
    id: string,
    info: TerminalInfo,
    timeoutMs: number,
  ): Promise<ToolMessage> {
    const read = this.toolTurn.read(raw, id, info);
    if (!read.ok) return read.reply;
    const call = read.call;
    const started = performance.now();
    try {
      // The name/arguments pair was validated together above.
      const outcome = await runTool(this.workspace!, call.name, call.args, {
        timeoutMs,
        maxOutputChars: this.settings.maxOutputChars,
      });
      if (outcome.error) info.toolErrors++;
      return toolReply(id, outcome.content, call.name);
    } finally {
      info.agentTimeMs += Math.round(performance.now() - started);
    }
  }

  private observation(text: string): Observation {
    return { messages: [...this.messages], text, tools: this.tools };
  }

  private async dropWorkspace(): Promise<void> {
    const workspace = this.workspace;
    this.workspace = undefined;
    await workspace?.remove();
  }

  /** One call at a time: an episode's state is not meant to be shared by concurrent callers. */
  private async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    if (this.closed) throw new Error('terminal env: closed');
    if (this.busy) throw new Error('terminal env: another call is in progress');
    this.busy = true;
    try {
      return await fn();
    } finally {
      this.busy = false;
    }
  }
}

function testsInfo(run: TestRun): TerminalTestsInfo {
  return {
    passed: run.report.passed,
    total: run.report.total,
    outcomes: run.report.outcomes,
    exitCode: run.exitCode,
    timedOut: run.timedOut,
    durationMs: run.durationMs,
    outputTail: run.outputTail,
  };
}
