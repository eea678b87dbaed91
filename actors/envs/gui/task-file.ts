/**
 * The gui track's on-disk format: a directory holding `tasks.jsonl`, one task per line, and
 * the task pages as self-contained HTML files (inline style and script; the environment serves
 * nothing else) at paths relative to that directory:
 *
 *   {"id": "…", "kind": "form", "split": "train", "page": "pages/checkout.html",
 *    "instruction": "Fill in …", "goal": {"state": {"submission": {…}}}, "oracle": [Action, …]}
 *
 * `page`, `instruction` and `goal` are required. `id` defaults to `gui-<kind>-<FNV-1a of the
 * instruction>`, `kind` to 'page', `split` to the built-in rule on the instruction, `oracle` to
 * none. The goal names keys of the page's `window.__taskState` and the JSON values they must
 * hold at the end. Blank lines are skipped. Every error names the file, the line and the field.
 */
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { z } from 'zod';
import { ConfigError } from '../../../common/errors.js';
import type { Action } from '../environment.js';
import { goalSchema } from './goal.js';
import { buildGuiSuite, type GuiTask, guiSplitOf, guiTaskId } from './tasks.js';

export const TASKS_FILE = 'tasks.jsonl';
export const MAX_PAGE_BYTES = 4 * 1024 * 1024;

const toolCallSchema = z.strictObject({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.strictObject({ name: z.string().min(1), arguments: z.string() }),
});

const actionSchema = z.strictObject({
  content: z.string().nullable().optional(),
  tool_calls: z.array(toolCallSchema).optional(),
});

const taskLineSchema = z.strictObject({
  id: z
    .string()
    .regex(
      /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/,
      'letters, digits and . _ : - (at most 128), not starting with a sign',
    )
    .optional(),
  kind: z.string().min(1).max(64).optional(),
  split: z.enum(['train', 'heldout']).optional(),
  page: z.string().min(1),
  instruction: z.string().trim().min(1),
  goal: goalSchema,
  oracle: z.array(actionSchema).optional(),
});

type TaskLine = z.infer<typeof taskLineSchema>;

function fail(file: string, line: number | undefined, field: string | undefined, message: string): never {
  const where = line === undefined ? file : `${file}:${line}`;
  throw new ConfigError(`gui tasks: ${where}: ${field ? `${field}: ` : ''}${message}`, {
    fields: { file, line, field },
  });
}

/** Loads tasks from a `tasks.jsonl` file, or from a directory that holds one. */
export async function loadGuiTasks(path: string): Promise<GuiTask[]> {
  let file = resolve(path);
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(file);
  } catch {
    throw new ConfigError(`gui tasks: ${file}: no such file or directory`, { fields: { file } });
  }
  if (info.isDirectory()) file = join(file, TASKS_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    fail(
      file,
      undefined,
      undefined,
      `cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
    );
  }
  const root = dirname(file);
  const tasks: GuiTask[] = [];
  const firstLine = new Map<string, number>();
  const lines = text.split('\n');
  for (const [i, raw] of lines.entries()) {
    const lineNo = i + 1;
    if (raw.trim() === '') continue;
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch (e) {
      fail(file, lineNo, undefined, `not valid JSON (${(e as Error).message})`);
    }
    const parsed = taskLineSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const keys = issue.code === 'unrecognized_keys' ? issue.keys : [];
      const field = [...issue.path.map(String), ...keys].join('.') || '(task)';
      fail(file, lineNo, field, issue.message);
    }
    const task = await toTask(parsed.data, root, file, lineNo);
    const seen = firstLine.get(task.id);
    if (seen !== undefined) fail(file, lineNo, 'id', `duplicate id '${task.id}' (first on line ${seen})`);
    firstLine.set(task.id, lineNo);
    tasks.push(task);
  }
  if (tasks.length === 0) fail(file, undefined, undefined, 'no tasks');
  return tasks;
}

async function toTask(line: TaskLine, root: string, file: string, lineNo: number): Promise<GuiTask> {
  const pagePath = resolve(root, line.page);
  const rel = relative(root, pagePath);
  if (isAbsolute(line.page) || rel.startsWith('..') || isAbsolute(rel)) {
    fail(file, lineNo, 'page', `must be a relative path inside ${root}`);
  }
  let html: string;
  try {
    const size = (await stat(pagePath)).size;
    if (size > MAX_PAGE_BYTES)
      fail(file, lineNo, 'page', `${line.page} is larger than ${MAX_PAGE_BYTES} bytes`);
    html = await readFile(pagePath, 'utf8');
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    fail(
      file,
      lineNo,
      'page',
      `cannot read ${pagePath} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
    );
  }
  const kind = line.kind ?? 'page';
  const instruction = line.instruction.trim();
  return {
    id: line.id ?? guiTaskId(kind, instruction),
    split: line.split ?? guiSplitOf(instruction),
    kind,
    instruction,
    html,
    goal: { state: line.goal.state as GuiTask['goal']['state'] },
    oracle: (line.oracle ?? []) as Action[],
  };
}

/**
 * Writes tasks (default: the built-in suite) in the on-disk format under `dir`: `tasks.jsonl`
 * and `pages/<id>.html`. Returns the path of `tasks.jsonl`.
 */
export async function writeGuiSuite(dir: string, tasks: GuiTask[] = buildGuiSuite()): Promise<string> {
  await mkdir(join(dir, 'pages'), { recursive: true });
  const used = new Set<string>();
  const lines: string[] = [];
  for (const task of tasks) {
    let base = task.id.replace(/[^A-Za-z0-9._-]/g, '_');
    while (used.has(base)) base += '_';
    used.add(base);
    const page = `pages/${base}.html`;
    await writeFile(join(dir, page), task.html);
    lines.push(
      JSON.stringify({
        id: task.id,
        kind: task.kind,
        split: task.split,
        page,
        instruction: task.instruction,
        goal: task.goal,
        oracle: task.oracle,
      }),
    );
  }
  const file = join(dir, TASKS_FILE);
  await writeFile(file, `${lines.join('\n')}\n`);
  return file;
}
