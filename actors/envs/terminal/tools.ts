/**
 * The terminal track's tools, as OpenAI function schemas with their argument validators, and the
 * text each call answers the agent with. Every call runs in the sandbox through the Workspace.
 */
import { z } from 'zod';
import type { ToolSchema } from '../environment.js';
import type { SandboxResult } from '../sandbox/sandbox.js';
import { SANDBOX_ROOT, type Workspace } from './workspace.js';

export const TOOL_SCHEMAS: readonly ToolSchema[] = [
  {
    type: 'function',
    function: {
      name: 'shell_exec',
      description:
        `Run a shell command (bash) in ${SANDBOX_ROOT}, the working directory, and return its exit code, ` +
        'stdout and stderr. Each call is a fresh shell: cd and variables do not carry over, files do. ' +
        'No network; stdin is empty.',
      parameters: {
        type: 'object',
        properties: { command: { type: 'string', description: 'e.g. "ls -la && wc -l data.txt"' } },
        required: ['command'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'view',
      description: `Show a text file of the workspace, or list a directory. Paths are relative to ${SANDBOX_ROOT}.`,
      parameters: {
        type: 'object',
        properties: { path: { type: 'string', description: 'e.g. "src/main.py"' } },
        required: ['path'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'write_file',
      description:
        'Create or overwrite a file of the workspace with the given content (parent directories are ' +
        `created). Paths are relative to ${SANDBOX_ROOT}.`,
      parameters: {
        type: 'object',
        properties: {
          path: { type: 'string', description: 'e.g. "out/result.txt"' },
          content: { type: 'string', description: 'The whole new content of the file.' },
        },
        required: ['path', 'content'],
        additionalProperties: false,
      },
    },
  },
];

export const TOOL_ARGUMENTS = {
  shell_exec: z.strictObject({ command: z.string().min(1) }),
  view: z.strictObject({ path: z.string().min(1) }),
  write_file: z.strictObject({ path: z.string().min(1), content: z.string() }),
} as const;

export type ToolName = keyof typeof TOOL_ARGUMENTS;
export type ToolArguments = { [K in ToolName]: z.output<(typeof TOOL_ARGUMENTS)[K]> };

export function isToolName(name: string): name is ToolName {
  return Object.hasOwn(TOOL_ARGUMENTS, name);
}

/** Longest command accepted: one argv string of Linux may not exceed 128 KiB. */
export const MAX_COMMAND_BYTES = 100_000;

export interface ToolOutcome {
  content: string;
  /** The call failed: a command exited ≠ 0 or timed out, a path was refused, a file missing. */
  error: boolean;
}

export interface ToolLimits {
  /** Wall clock of one call. */
  timeoutMs: number;
  /** Characters of a tool result the agent gets; longer ones keep their head and tail. */
  maxOutputChars: number;
}

/** `text` cut to `max` characters, keeping the head and the tail (errors often end the output). */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = Math.ceil(max / 2);
  const tail = max - head;
  const omitted = text.length - head - tail;
  return `${text.slice(0, head)}\n[... ${omitted} characters omitted ...]\n${text.slice(text.length - tail)}`;
}

export function formatCommandResult(r: SandboxResult, timeoutMs: number, maxChars: number): string {
  const parts: string[] = [];
  if (r.stdout) parts.push(r.stdout.replace(/\n$/, ''));
  if (r.stderr) parts.push(`[stderr]\n${r.stderr.replace(/\n$/, '')}`);
  if (r.truncated) parts.push('[output limit reached: the command was killed]');
  if (r.timedOut) parts.push(`[timed out after ${timeoutMs} ms: the command was killed]`);
  else if (!r.truncated) parts.push(`[exit code ${r.exitCode ?? r.signal}]`);
  return clip(parts.join('\n'), maxChars);
}

/** Runs one validated call in the workspace. */
export async function runTool<N extends ToolName>(
  workspace: Workspace,
  name: N,
  args: ToolArguments[N],
  limits: ToolLimits,
): Promise<ToolOutcome> {
  switch (name) {
    case 'shell_exec': {
      const { command } = args as ToolArguments['shell_exec'];
      if (Buffer.byteLength(command) > MAX_COMMAND_BYTES) {
        return {
          content: `Error: the command is longer than ${MAX_COMMAND_BYTES} bytes; write a script with write_file and run it.`,
          error: true,
        };
      }
      const r = await workspace.exec(command, limits.timeoutMs);
      return {
        content: formatCommandResult(r, limits.timeoutMs, limits.maxOutputChars),
        error: r.timedOut || r.truncated || r.exitCode !== 0,
      };
    }
    case 'view': {
      const { path } = args as ToolArguments['view'];
      // Read past what is shown (a character may take 4 bytes), within the sandbox's output limit.
      const r = await workspace.view(path, Math.min(limits.maxOutputChars * 4, 128 * 1024), limits.timeoutMs);
      if (!r.ok) return { content: `Error: ${r.text}`, error: true };
      if (r.directory) return { content: clip(r.text, limits.maxOutputChars), error: false };
      if (r.text.includes('\0')) return { content: `(binary file, ${r.size} bytes)`, error: false };
      const shown = clip(r.text, limits.maxOutputChars);
      const cut = r.size !== undefined && Buffer.byteLength(r.text) < r.size;
      return {
        content:
          r.size === 0 ? '(empty file)' : cut ? `${shown}\n[... file continues: ${r.size} bytes]` : shown,
        error: false,
      };
    }
    case 'write_file': {
      const { path, content } = args as ToolArguments['write_file'];
      const r = await workspace.writeFile(path, content, limits.timeoutMs);
      return { content: r.ok ? r.text : `Error: ${r.text}`, error: !r.ok };
    }
    default:
      throw new Error(`unknown tool ${String(name)}`);
  }
}
