/**
 * The toolcall track's environment. An episode: a system prompt and the task question → the
 * agent's turns, each an assistant message whose tool calls are answered by `tool` messages →
 * the episode ends when the agent answers without tool calls (reward from the verifier: the last
 * `\boxed{…}` equal to the expected answer → +1, else −1) or after `maxTurns` (16) turns (−1,
 * `info.truncated`). Malformed tool calls (bad shape, unknown tool, arguments that are not a JSON
 * object or do not fit the tool's schema) are answered with an error tool message and counted in
 * `info.malformedToolCalls`; calls past `maxToolCalls` (16 per episode) are answered with an
 * error and not run.
 */

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
import { buildTaskSuite, type Split, type ToolcallTask } from './tasks.js';
import { TOOL_ARGUMENTS, TOOL_SCHEMAS, ToolRunner } from './tools.js';
import { REWARD_WRONG, verifyAnswer } from './verifier.js';

export const DEFAULT_MAX_TURNS = 16;
export const DEFAULT_MAX_TOOL_CALLS = 16;

export const DEFAULT_SYSTEM_PROMPT =
  'You solve the task using the tools when they help. Call tools with function calls; you will get ' +
  'their results back. When you are done, reply without tool calls and put the final answer, and ' +
  'nothing else, in \\boxed{...}.';

export interface ToolcallInfo {
  taskId: string;
  turns: number;
  /** Tool calls the agent made (well-formed or not). */
  toolCalls: number;
  malformedToolCalls: number;
  /** Well-formed calls whose tool failed (calculator error, program exit ≠ 0, timeout). */
  toolErrors: number;
  /** Calls refused because the episode's tool-call budget was spent. */
  overBudgetToolCalls: number;
  /** The turn limit ended the episode before a final answer. */
  truncated: boolean;
  expected: string;
  /** The boxed answer of the final message, when the episode ended with one. */
  answer?: string;
  correct: boolean;
}

export interface ToolcallEnvOptions {
  /** The tasks episodes draw from (default: the built-in suite). */
  tasks?: ToolcallTask[];
  /** Restrict the default draw to one split ('all' by default); reset(taskId) reaches any task. */
  split?: Split | 'all';
  /** Seed of the order in which reset() without an id walks the tasks. */
  seed?: number;
  maxTurns?: number;
  maxToolCalls?: number;
  systemPrompt?: string;
  runner?: ToolRunner;
  tools?: readonly ToolSchema[];
}

export class ToolcallEnvironment implements Environment<ToolcallInfo> {
  readonly tasks: ToolcallTask[];
  private readonly deck: TaskDeck<ToolcallTask>;
  private readonly maxTurns: number;
  private readonly maxToolCalls: number;
  private readonly systemPrompt: string;
  private readonly runner: ToolRunner;
  private readonly tools: ToolSchema[];
  private readonly toolTurn: ToolTurn<typeof TOOL_ARGUMENTS, 'malformedToolCalls'>;
  private task: ToolcallTask | undefined;
  private messages: ChatMessage[] = [];
  private info: ToolcallInfo | undefined;
  private done = false;
  private closed = false;

  constructor(options: ToolcallEnvOptions = {}) {
    this.tasks = options.tasks ?? buildTaskSuite();
    const split = options.split ?? 'all';
    // This track's own generator (an LCG), so that a seed draws the order it always drew.
    let s = (options.seed ?? 0) >>> 0;
    const rand = () => {
      s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
      return s / 4294967296;
    };
    this.deck = new TaskDeck('toolcall', this.tasks, split, rand);
    this.maxTurns = options.maxTurns ?? DEFAULT_MAX_TURNS;
    this.maxToolCalls = options.maxToolCalls ?? DEFAULT_MAX_TOOL_CALLS;
    this.systemPrompt = options.systemPrompt ?? DEFAULT_SYSTEM_PROMPT;
    this.runner = options.runner ?? new ToolRunner();
    this.tools = [...(options.tools ?? TOOL_SCHEMAS)];
    // A tool that is not offered is an unknown tool, not a hidden one.
    const offered = new Set(this.tools.map((t) => t.function.name));
    const toolArguments = Object.fromEntries(
      Object.entries(TOOL_ARGUMENTS).filter(([name]) => offered.has(name)),
    ) as typeof TOOL_ARGUMENTS;
    // Malformed calls are answered and counted, but never end the episode here.
    this.toolTurn = new ToolTurn({
      env: 'toolcall',
      tools: toolArguments,
      maxParseErrors: Number.POSITIVE_INFINITY,
      parseErrorCount: 'malformedToolCalls',
    });
  }

  /** The task of the current episode. */
  get currentTask(): ToolcallTask | undefined {
    return this.task;
  }

  async reset(taskId?: string): Promise<Observation> {
    if (this.closed) throw new Error('toolcall env: closed');
    const task = this.deck.draw(taskId);
    this.task = task;
    this.done = false;
    this.messages = [
      { role: 'system', content: this.systemPrompt },
      { role: 'user', content: task.question },
    ];
    this.info = {
      taskId: task.id,
      turns: 0,
      toolCalls: 0,
      malformedToolCalls: 0,
      toolErrors: 0,
      overBudgetToolCalls: 0,
      truncated: false,
      expected: task.answer,
      correct: false,
    };
    return this.observation(task.question);
  }

  async step(action: Action): Promise<StepResult<ToolcallInfo>> {
    if (this.closed) throw new Error('toolcall env: closed');
    const info = this.info;
    const task = this.task;
    if (!info || !task) throw new Error('toolcall env: step() before reset()');
    if (this.done) throw new Error('toolcall env: step() after the episode ended; reset() first');
    const rawCalls = this.toolTurn.open(action, this.messages);
    info.turns++;

    if (rawCalls.length === 0) {
      const verdict = verifyAnswer(action.content, task.answer);
      info.answer = verdict.answer;
      info.correct = verdict.correct;
      this.done = true;
      return { observation: this.observation(''), reward: verdict.reward, done: true, info: { ...info } };
    }

    const results: ToolMessage[] = [];
    for (const [n, raw] of rawCalls.entries()) {
      results.push(await this.answerCall(raw, n, info));
    }
    this.messages.push(...results);
    const text = results.map((r) => r.content).join('\n\n');
    if (info.turns >= this.maxTurns) {
      info.truncated = true;
      this.done = true;
      return { observation: this.observation(text), reward: REWARD_WRONG, done: true, info: { ...info } };
    }
    return { observation: this.observation(text), reward: 0, done: false, info: { ...info } };
  }

  /** Scores the last answer given so far (−1 before any answer), without ending the episode. */
  async evaluate(): Promise<Evaluation<ToolcallInfo>> {
    const info = this.info;
    const task = this.task;
    if (!info || !task) throw new Error('toolcall env: evaluate() before reset()');
    const last = this.messages.findLast((m) => m.role === 'assistant' && !m.tool_calls?.length);
    const verdict = verifyAnswer(last?.content ?? null, task.answer);
    return { reward: verdict.reward, info: { ...info, answer: verdict.answer, correct: verdict.correct } };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.task = undefined;
    this.messages = [];
  }

  private observation(text: string): Observation {
    return { messages: [...this.messages], text, tools: this.tools };
  }

  private async answerCall(raw: unknown, n: number, info: ToolcallInfo): Promise<ToolMessage> {
    const id = turnCallId(raw, info.turns, n);
    const read = this.toolTurn.read(raw, id, info);
    if (!read.ok) return read.reply;
    const call = read.call;
    if (info.toolCalls - info.malformedToolCalls - info.overBudgetToolCalls > this.maxToolCalls) {
      info.overBudgetToolCalls++;
      return toolReply(
        id,
        `Error: the tool-call budget of ${this.maxToolCalls} is spent; give your final answer.`,
        call.name,
      );
    }
    const outcome = await this.runner.run(call.name, call.args);
    if (outcome.error) info.toolErrors++;
    return toolReply(id, outcome.content, call.name);
  }
}
