/**
 * The toolcall track's tools: OpenAI function schemas plus implementations. `calculator` and
 * `lookup` run in-process (a parser and a keyword index, nothing executed); `run_python` and
 * `run_js` run the given code in the bubblewrap sandbox (no network, a fresh workspace per call,
 * CPU/memory/process/output limits).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { ToolSchema } from '../environment.js';
import { runSandboxed } from '../sandbox/sandbox.js';
import { CalculatorError, calculate } from './calculator.js';
import { DocumentStore } from './lookup.js';

export const PYTHON_PATH = '/usr/bin/python3';
export const NODE_PATH = '/usr/bin/node';

export const TOOL_SCHEMAS: readonly ToolSchema[] = [
  {
    type: 'function',
    function: {
      name: 'calculator',
      description:
        'Evaluate an arithmetic expression with + - * / ^ (or **), parentheses, unary minus and decimals. Returns the value.',
      parameters: {
        type: 'object',
        properties: { expression: { type: 'string', description: 'e.g. "(12.5 - 3) * 2^3"' } },
        required: ['expression'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'run_python',
      description:
        'Run a Python 3 program in a sandbox without network and return its stdout and stderr. Print what you need.',
      parameters: {
        type: 'object',
        properties: { code: { type: 'string', description: 'The program source.' } },
        required: ['code'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'run_js',
      description:
        'Run a JavaScript (Node.js) program in a sandbox without network and return its stdout and stderr. Use console.log.',
      parameters: {
        type: 'object',
        properties: { code: { type: 'string', description: 'The program source.' } },
        required: ['code'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'lookup',
      description: 'Keyword search over the reference documents; returns the best matching passages.',
      parameters: {
        type: 'object',
        properties: {
          query: { type: 'string', description: 'Keywords to search for.' },
          k: { type: 'integer', minimum: 1, maximum: 10, description: 'How many passages (default 3).' },
        },
        required: ['query'],
        additionalProperties: false,
      },
    },
  },
];

export const TOOL_ARGUMENTS = {
  calculator: z.strictObject({ expression: z.string() }),
  run_python: z.strictObject({ code: z.string() }),
  run_js: z.strictObject({ code: z.string() }),
  lookup: z.strictObject({ query: z.string(), k: z.number().int().min(1).max(10).optional() }),
} as const;

export type ToolName = keyof typeof TOOL_ARGUMENTS;

export function isToolName(name: string): name is ToolName {
  return Object.hasOwn(TOOL_ARGUMENTS, name);
}

export interface CodeRunnerLimits {
  timeoutMs: number;
  cpuSeconds: number;
  /** RLIMIT_AS for Python; Node reserves a large address space for V8 and gets nodeMemoryMb. */
  memoryMb: number;
  nodeMemoryMb: number;
  maxProcesses: number;
  maxOutputBytes: number;
}

export const DEFAULT_CODE_LIMITS: CodeRunnerLimits = {
  timeoutMs: 20_000,
  cpuSeconds: 10,
  memoryMb: 1024,
  nodeMemoryMb: 8192,
  maxProcesses: 64,
  maxOutputBytes: 64 * 1024,
};

/** The text a tool call returns to the agent; `error` when the call failed (bad input, crash). */
export interface ToolOutcome {
  content: string;
  error: boolean;
}

async function runCode(
  interpreter: string,
  fileName: string,
  code: string,
  limits: CodeRunnerLimits,
  memoryMb: number,
): Promise<ToolOutcome> {
  const workspace = await mkdtemp(join(tmpdir(), 'clawray-toolcall-'));
  try {
    await writeFile(join(workspace, fileName), code);
    const r = await runSandboxed({
      command: [interpreter, fileName],
      workspace,
      network: false,
      timeoutMs: limits.timeoutMs,
      cpuSeconds: limits.cpuSeconds,
      memoryMb,
      maxProcesses: limits.maxProcesses,
      maxOutputBytes: limits.maxOutputBytes,
    });
    const parts: string[] = [];
    if (r.stdout) parts.push(r.stdout.replace(/\n$/, ''));
    if (r.stderr) parts.push(`[stderr]\n${r.stderr.replace(/\n$/, '')}`);
    if (r.truncated) parts.push('[output truncated]');
    if (r.timedOut) parts.push(`[timed out after ${limits.timeoutMs} ms]`);
    else if (r.exitCode !== 0) parts.push(`[exit code ${r.exitCode ?? r.signal}]`);
    const failed = r.timedOut || r.exitCode !== 0;
    return { content: parts.length > 0 ? parts.join('\n') : '(no output)', error: failed };
  } finally {
    await rm(workspace, { recursive: true, force: true });
  }
}

export interface ToolRunnerOptions {
  store?: DocumentStore;
  limits?: Partial<CodeRunnerLimits>;
}

/** Runs validated tool calls. */
export class ToolRunner {
  readonly store: DocumentStore;
  readonly limits: CodeRunnerLimits;

  constructor(options: ToolRunnerOptions = {}) {
    this.store = options.store ?? new DocumentStore();
    this.limits = { ...DEFAULT_CODE_LIMITS, ...options.limits };
  }

  async run<N extends ToolName>(name: N, args: z.infer<(typeof TOOL_ARGUMENTS)[N]>): Promise<ToolOutcome> {
    switch (name) {
      case 'calculator': {
        const { expression } = args as z.infer<typeof TOOL_ARGUMENTS.calculator>;
        try {
          return { content: calculate(expression), error: false };
        } catch (e) {
          if (e instanceof CalculatorError) return { content: `Error: ${e.message}`, error: true };
          throw e;
        }
      }
      case 'lookup': {
        const { query, k } = args as z.infer<typeof TOOL_ARGUMENTS.lookup>;
        return { content: this.store.lookup(query, k ?? 3), error: false };
      }
      case 'run_python': {
        const { code } = args as z.infer<typeof TOOL_ARGUMENTS.run_python>;
        return runCode(PYTHON_PATH, 'main.py', code, this.limits, this.limits.memoryMb);
      }
      case 'run_js': {
        const { code } = args as z.infer<typeof TOOL_ARGUMENTS.run_js>;
        return runCode(NODE_PATH, 'main.js', code, this.limits, this.limits.nodeMemoryMb);
      }
      default:
        throw new Error(`unknown tool ${String(name)}`);
    }
  }
}
