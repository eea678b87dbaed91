/**
 * The swe track's tools, OpenAI function schemas plus their runs. All of them run in the sandbox
 * on the episode's workspace (mounted at /workspace): `bash` runs a command line; `view_file` and
 * `write_file` are conveniences on top of the same sandbox, so a path through a symlink the agent
 * made cannot reach outside the workspace.
 */
import { z } from 'zod';
import type { ToolSchema } from '../environment.js';
import { type SandboxLimits, sandboxed, shell } from './shell.js';

export const TOOL_SCHEMAS: readonly ToolSchema[] = [
  {
    type: 'function',
    function: {
      name: 'bash',
      description:
        'Run a bash command line in the repository (/workspace, the working directory) and return its exit code and combined stdout/stderr. Each call starts a fresh shell: cd and variables do not carry over. No network.',
      parameters: {
        type: 'object',
        properties: {
          command: { type: 'string', description: 'The command line, e.g. "grep -rn def src".' },
        },
        required: ['command'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'view_file',
      description:
        'Show a file of the repository with line numbers (optionally only lines start_line..end_line), or list a directory.',
      parameters: {
        type: 'object',
        properties: {
          path: {
            type: 'string',
            description: 'Relative to the repository root, or absolute under /workspace.',
          },
          start_line: { type: 'integer', minimum: 1 },
          end_line: { type: 'integer', minimum: 1 },
        },
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
        'Create or overwrite a file of the repository with the given content (parent directories are made).',
      parameters: {
        type: 'object',
        properties: {
          path: {
            type: 'string',
            description: 'Relative to the repository root, or absolute under /workspace.',
          },
          content: { type: 'string', description: 'The whole new content of the file.' },
        },
        required: ['path', 'content'],
        additionalProperties: false,
      },
    },
  },
];

export const TOOL_ARGUMENTS = {
  bash: z.strictObject({ command: z.string().min(1) }),
  view_file: z.strictObject({
    path: z.string().min(1),
    start_line: z.number().int().min(1).optional(),
    end_line: z.number().int().min(1).optional(),
  }),
  write_file: z.strictObject({ path: z.string().min(1), content: z.string() }),
} as const;

export type ToolName = keyof typeof TOOL_ARGUMENTS;

export function isToolName(name: string): name is ToolName {
  return Object.hasOwn(TOOL_ARGUMENTS, name);
}

export interface ToolLimits {
  sandbox: SandboxLimits;
  /** Wall clock of one call. */
  commandTimeoutMs: number;
  /** Characters of output shown to the agent; the middle of longer output is cut. */
  maxOutputChars: number;
}

export interface ToolOutcome {
  content: string;
  /** The command exited non-zero, timed out or was cut. */
  error: boolean;
}

/** The sandbox keeps this much output; the agent sees at most maxOutputChars of it. */
const KEPT_OUTPUT_BYTES = 1024 * 1024;

// awk reads a file operand like "-" or "x=y" as stdin or an assignment; "./" keeps it a file.
const VIEW_SCRIPT = `if [ -d "$1" ]; then exec ls -la -- "$1"; fi
case "$1" in /*) f="$1" ;; *) f="./$1" ;; esac
exec awk -v s="$2" -v e="$3" 'NR >= s && (e == 0 || NR <= e) { printf "%6d\\t%s\\n", NR, $0 }' "$f"
`;

const WRITE_SCRIPT = `mkdir -p -- "$(dirname -- "$1")" && cat > "$1" && echo "wrote $(wc -c < "$1") bytes to $1"
`;

/** Long output keeps its head and its tail: the command and the error at the end both matter. */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = Math.floor(max / 2);
  const tail = max - head;
  return `${text.slice(0, head)}\n[… ${text.length - max} characters cut …]\n${text.slice(text.length - tail)}`;
}

/** Runs validated tool calls on a workspace. */
export async function runTool<N extends ToolName>(
  name: N,
  args: z.infer<(typeof TOOL_ARGUMENTS)[N]>,
  workspace: string,
  limits: ToolLimits,
): Promise<ToolOutcome> {
  const run = {
    workspace,
    timeoutMs: limits.commandTimeoutMs,
    maxOutputBytes: KEPT_OUTPUT_BYTES,
    limits: limits.sandbox,
  };
  let r: Awaited<ReturnType<typeof sandboxed>>;
  if (name === 'bash') {
    r = await shell((args as z.infer<typeof TOOL_ARGUMENTS.bash>).command, run);
  } else if (name === 'view_file') {
    const a = args as z.infer<typeof TOOL_ARGUMENTS.view_file>;
    const argv = [
      '/bin/sh',
      '-c',
      VIEW_SCRIPT,
      'sh',
      a.path,
      String(a.start_line ?? 1),
      String(a.end_line ?? 0),
    ];
    r = await sandboxed(argv, run);
  } else {
    const a = args as z.infer<typeof TOOL_ARGUMENTS.write_file>;
    r = await sandboxed(['/bin/sh', '-c', WRITE_SCRIPT, 'sh', a.path], { ...run, stdin: a.content });
  }
  const output = r.stdout + (r.stderr ? (r.stdout && !r.stdout.endsWith('\n') ? '\n' : '') + r.stderr : '');
  const parts = [clip(output, limits.maxOutputChars).replace(/\n$/, '')];
  if (r.truncated) parts.push(`[output cut at ${KEPT_OUTPUT_BYTES} bytes; the command was stopped]`);
  if (r.timedOut) parts.push(`[timed out after ${limits.commandTimeoutMs} ms; the command was stopped]`);
  else if (!r.truncated) parts.push(`[exit code ${r.exitCode ?? r.signal}]`);
  const content = parts.filter((p) => p !== '').join('\n');
  return { content, error: r.timedOut || r.truncated || r.exitCode !== 0 };
}
