/**
 * The swe track's task format: SWE-bench-like JSONL, one instance per line.
 *
 * ```json
 * {"instance_id": "acme__paging-1", "repo": "repos/paging", "base_commit": "3f2a…",
 *  "problem_statement": "…", "patch": "diff --git …", "test_patch": "diff --git …",
 *  "test_cmd": "python3 -m pytest -rA tests", "FAIL_TO_PASS": ["tests/test_p.py::test_first"],
 *  "PASS_TO_PASS": "[\"tests/test_p.py::test_count\"]", "split": "train"}
 * ```
 *
 * Differences from SWE-bench, which clones `owner/name` from GitHub and knows each repository's
 * test command: `repo` is a LOCAL path (relative paths are resolved against the JSONL file's
 * directory) to a git repository, checked out at `base_commit`, or, without `base_commit`, to a
 * plain directory taken as it is; `test_cmd` is the shell command, run in the repository root,
 * whose output holds per-test result lines (see test-results.ts). `patch` (the gold patch, the
 * task's oracle) and `test_patch` (applied before the tests, never shown to the agent) are
 * optional; FAIL_TO_PASS / PASS_TO_PASS may be JSON arrays or, as SWE-bench ships them, strings
 * holding a JSON array. `oracle` (clawray's, as in the toolcall task file: a list of assistant
 * turns `{content?, tool_calls?}`) replaces the gold patch's `git apply` as the demonstration,
 * e.g. one `write_file` call. `split` is optional (default: held out when the FNV-1a hash of the
 * instance id is 0 mod 5). Other fields (hints_text, version, …) are ignored.
 */
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { ConfigError } from '../../../common/errors.js';
import type { Action } from '../environment.js';
import { demonstrationSchema } from '../tool-calls.js';
import { splitOf, type TrackTask } from '../track.js';

export interface SweTask extends TrackTask {
  /** The instance id. */
  id: string;
  /** Absolute path of the repository (git, with `baseCommit`) or plain directory snapshot. */
  repo: string;
  baseCommit?: string;
  problemStatement: string;
  /** The gold patch, when known; without an `oracle` in the task file, the oracle applies it. */
  patch?: string;
  /** Applied to the scored copy before the tests run; hidden from the agent. */
  testPatch?: string;
  testCmd: string;
  failToPass: string[];
  passToPass: string[];
}

export { fnv1a, HELDOUT_EVERY, splitOf } from '../track.js';

/**
 * The scripted agent that applies the gold patch with `git apply` from a heredoc, then ends the
 * episode. The heredoc delimiter is chosen so that no line of the patch can close it early.
 */
export function goldPatchOracle(patch: string): Action[] {
  let delimiter = 'CLAWRAY_GOLD_PATCH';
  const lines = new Set(patch.split('\n'));
  while (lines.has(delimiter)) delimiter += '_';
  const body = patch.endsWith('\n') ? patch : `${patch}\n`;
  const command = `git apply --whitespace=nowarn <<'${delimiter}'\n${body}${delimiter}\n`;
  return [
    {
      content: 'I apply the fix.',
      tool_calls: [
        {
          id: 'call_gold_patch',
          type: 'function',
          function: { name: 'bash', arguments: JSON.stringify({ command }) },
        },
      ],
    },
    { content: 'The fix is applied.' },
  ];
}

function jsonList(field: string) {
  return z.preprocess(
    (value) => {
      if (typeof value !== 'string') return value;
      try {
        return JSON.parse(value);
      } catch {
        return value;
      }
    },
    z.array(z.string().min(1), {
      error: `${field} must be a JSON array of test names, or a string holding one`,
    }),
  );
}

const optionalText = z
  .string()
  .nullish()
  .transform((v) => (v === null || v === undefined || v.trim() === '' ? undefined : v));

const instanceShape = z.object({
  instance_id: z
    .string()
    .min(1)
    .regex(/^[^\s]+$/, 'must not hold whitespace'),
  repo: z.string().min(1),
  base_commit: z
    .string()
    .regex(/^[^\s-][^\s]*$/, 'must be a commit (a hash or a ref), not starting with "-"')
    .nullish()
    .transform((v) => v ?? undefined),
  problem_statement: z.string().min(1),
  patch: optionalText,
  test_patch: optionalText,
  test_cmd: z.string().min(1),
  FAIL_TO_PASS: jsonList('FAIL_TO_PASS').refine((l) => l.length > 0, {
    message: 'FAIL_TO_PASS must name at least one test (else any change would resolve the task)',
  }),
  PASS_TO_PASS: jsonList('PASS_TO_PASS')
    .nullish()
    .transform((v) => v ?? []),
  split: z.enum(['train', 'heldout']).nullish(),
  oracle: z
    .array(demonstrationSchema)
    .nullish()
    .transform((v) => v ?? undefined),
});

type Instance = z.output<typeof instanceShape>;

function fieldError(where: string, issue: z.ZodError['issues'][number]): ConfigError {
  const field = issue.path.length > 0 ? issue.path.map(String).join('.') : '(instance)';
  return new ConfigError(`${where}: field ${field}: ${issue.message}`, { fields: { field } });
}

async function parseFile(file: string): Promise<{ task: SweTask; where: string }[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new ConfigError(`swe: cannot read task file ${file}: ${(e as Error).message}`);
  }
  const base = dirname(file);
  const tasks: { task: SweTask; where: string }[] = [];
  for (const [index, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    const where = `${file}:${index + 1}`;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch (e) {
      throw new ConfigError(`${where}: not valid JSON: ${(e as Error).message}`);
    }
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
      throw new ConfigError(`${where}: an instance must be a JSON object`);
    }
    const parsed = instanceShape.safeParse(raw);
    if (!parsed.success) throw fieldError(where, parsed.error.issues[0]);
    const task = toTask(parsed.data, base);
    try {
      const st = await stat(task.repo);
      if (!st.isDirectory()) throw new Error('not a directory');
    } catch {
      throw new ConfigError(`${where}: field repo: ${task.repo} is not a directory`, {
        fields: { field: 'repo' },
      });
    }
    tasks.push({ task, where });
  }
  return tasks;
}

function toTask(i: Instance, base: string): SweTask {
  const task: SweTask = {
    id: i.instance_id,
    split: i.split ?? splitOf(i.instance_id),
    oracle: i.oracle ?? (i.patch ? goldPatchOracle(i.patch) : []),
    repo: resolve(base, i.repo),
    problemStatement: i.problem_statement,
    testCmd: i.test_cmd,
    failToPass: i.FAIL_TO_PASS,
    passToPass: i.PASS_TO_PASS,
  };
  if (i.base_commit !== undefined) task.baseCommit = i.base_commit;
  if (i.patch !== undefined) task.patch = i.patch;
  if (i.test_patch !== undefined) task.testPatch = i.test_patch;
  return task;
}

/**
 * The tasks of a JSONL file, or of every `*.jsonl` file of a directory (in name order). Errors
 * are ConfigErrors naming `file:line` and the field.
 */
export async function loadSweTasks(path: string): Promise<SweTask[]> {
  const target = resolve(path);
  let files: string[];
  try {
    const st = await stat(target);
    files = st.isDirectory()
      ? (await readdir(target))
          .filter((f) => f.endsWith('.jsonl'))
          .sort()
          .map((f) => join(target, f))
      : [target];
  } catch {
    throw new ConfigError(`swe: task file ${target} does not exist`);
  }
  if (files.length === 0) throw new ConfigError(`swe: no *.jsonl task file in ${target}`);
  const tasks: SweTask[] = [];
  const seen = new Map<string, string>();
  for (const file of files) {
    for (const { task, where } of await parseFile(file)) {
      const first = seen.get(task.id);
      if (first !== undefined) {
        throw new ConfigError(`${where}: field instance_id: '${task.id}' is already used at ${first}`, {
          fields: { field: 'instance_id' },
        });
      }
      seen.set(task.id, where);
      tasks.push(task);
    }
  }
  return tasks;
}

/** One task as a JSONL line, its repository path relative to `baseDir` (the file's directory). */
export function taskToJsonLine(task: SweTask, baseDir: string): string {
  const record: Record<string, unknown> = {
    instance_id: task.id,
    repo: relative(baseDir, task.repo) || '.',
    base_commit: task.baseCommit,
    problem_statement: task.problemStatement,
    patch: task.patch,
    test_patch: task.testPatch,
    test_cmd: task.testCmd,
    FAIL_TO_PASS: task.failToPass,
    PASS_TO_PASS: task.passToPass,
    split: task.split,
  };
  const fromPatch = task.patch === undefined ? [] : goldPatchOracle(task.patch);
  if (!isDeepStrictEqual(task.oracle, fromPatch)) record.oracle = task.oracle;
  return JSON.stringify(record);
}

/** Writes `tasks` to a JSONL file that `loadSweTasks` reads back. */
export async function writeSweTaskFile(file: string, tasks: readonly SweTask[]): Promise<void> {
  const base = dirname(resolve(file));
  await writeFile(file, tasks.map((t) => `${taskToJsonLine(t, base)}\n`).join(''));
}
