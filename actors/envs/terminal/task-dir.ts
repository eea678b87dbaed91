/**
 * The on-disk task format, terminal-bench's directory layout — one directory per task, its name
 * the task id:
 *
 *   task.yaml      instruction (required); split: train | heldout (default: the FNV-1a hash rule
 *                  on the id); max_agent_timeout_sec; max_test_timeout_sec; parser_name (only
 *                  `pytest`, the result-line format read); test_names (clawray's: the tests that
 *                  must report, so an unreported one fails). Other keys — terminal-bench's author,
 *                  difficulty, tags… — are ignored.
 *   setup.sh       optional; run in the fresh workspace before the agent starts (it stands in for
 *                  terminal-bench's Dockerfile: there is no image, only the sandbox)
 *   solution.sh    optional; the reference solution the oracle plays
 *   run-tests.sh   required; run after the agent with $TEST_DIR holding tests/
 *   tests/         optional; the test files, never visible to the agent
 *
 * Anything else in the directory (Dockerfile, docker-compose.yaml…) is ignored. Scripts run in
 * the sandbox with /workspace as the working directory, where terminal-bench uses /app.
 */

import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { LineCounter, parseDocument, stringify } from 'yaml';
import { z } from 'zod';
import { ConfigError } from '../../../common/errors.js';
import { describeIssues } from '../jsonl-records.js';
import { fnv1a, oracleFor, splitOfHash, type TerminalTask } from './task.js';

export const TASK_FILE = 'task.yaml';
export const SETUP_FILE = 'setup.sh';
export const SOLUTION_FILE = 'solution.sh';
export const RUN_TESTS_FILE = 'run-tests.sh';
export const TESTS_DIR = 'tests';

const TASK_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const MAX_TEST_DEPTH = 16;

/** An absent value and an explicit `null` (`key:` with nothing after it) both mean "not set". */
const optional = <T extends z.ZodType>(schema: T) => schema.nullish().transform((v) => v ?? undefined);

const taskYaml = z.object({
  instruction: z.string().refine((s) => s.trim() !== '', 'must not be blank'),
  split: optional(z.enum(['train', 'heldout'])),
  max_agent_timeout_sec: optional(z.number().positive()),
  max_test_timeout_sec: optional(z.number().positive()),
  parser_name: optional(z.literal('pytest')),
  test_names: optional(z.array(z.string().min(1)).min(1)),
});

function configError(file: string, message: string, cause?: unknown): ConfigError {
  return new ConfigError(`${file}: ${message}`, { cause, fields: { file } });
}

async function isFile(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isFile() ?? false;
}

async function readText(path: string): Promise<string | undefined> {
  if (!(await isFile(path))) return undefined;
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    throw configError(path, `cannot read (${(err as Error).message})`, err);
  }
}

/** Text when the bytes are valid UTF-8, else the bytes. */
function decode(bytes: Buffer): string | Uint8Array {
  const text = bytes.toString('utf8');
  return Buffer.from(text, 'utf8').equals(bytes) ? text : new Uint8Array(bytes);
}

async function readTests(root: string): Promise<Record<string, string | Uint8Array>> {
  const files: Record<string, string | Uint8Array> = {};
  const walk = async (dir: string, depth: number): Promise<void> => {
    if (depth > MAX_TEST_DEPTH) throw configError(dir, `nested more than ${MAX_TEST_DEPTH} levels deep`);
    const entries = (await readdir(dir)).sort();
    for (const name of entries) {
      const path = join(dir, name);
      const st = await stat(path).catch((err) => {
        throw configError(path, `cannot read (${(err as Error).message})`, err);
      });
      if (st.isDirectory()) await walk(path, depth + 1);
      else if (st.isFile()) files[relative(root, path).split(sep).join('/')] = decode(await readFile(path));
      else throw configError(path, 'not a regular file or directory');
    }
  };
  await walk(root, 0);
  return files;
}

/** Reads one task directory. */
export async function loadTerminalTaskDir(dir: string): Promise<TerminalTask> {
  const id = basename(resolve(dir));
  if (!TASK_ID.test(id)) {
    throw configError(dir, 'the directory name is the task id: letters, digits, . _ - (not first)');
  }
  const file = join(dir, TASK_FILE);
  const source = await readText(file);
  if (source === undefined) throw configError(file, 'missing (every task directory needs one)');
  const lines = new LineCounter();
  const doc = parseDocument(source, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const err = doc.errors[0];
    const { line, col } = lines.linePos(err.pos[0]);
    throw new ConfigError(`${file}:${line}:${col}: ${err.message.split('\n')[0]}`, {
      cause: err,
      fields: { file, line },
    });
  }
  const parsed: unknown = doc.toJS();
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw configError(file, 'expected a mapping of fields (instruction: …)');
  }
  const fields = taskYaml.safeParse(parsed);
  if (!fields.success) throw configError(file, describeIssues(fields.error));
  const runTests = await readText(join(dir, RUN_TESTS_FILE));
  if (runTests === undefined)
    throw configError(join(dir, RUN_TESTS_FILE), 'missing (the test script is required)');
  const setup = await readText(join(dir, SETUP_FILE));
  const solution = await readText(join(dir, SOLUTION_FILE));
  const testsDir = join(dir, TESTS_DIR);
  const hasTests = (await stat(testsDir).catch(() => undefined))?.isDirectory() ?? false;
  const y = fields.data;
  const task: TerminalTask = {
    id,
    split: y.split ?? splitOfHash(fnv1a(id)),
    oracle: oracleFor(solution),
    instruction: y.instruction,
    runTests,
    testFiles: hasTests ? await readTests(testsDir) : {},
  };
  if (setup !== undefined) task.setup = setup;
  if (solution !== undefined) task.solution = solution;
  if (y.test_names !== undefined) task.testNames = y.test_names;
  if (y.max_agent_timeout_sec !== undefined) task.agentTimeoutSec = y.max_agent_timeout_sec;
  if (y.max_test_timeout_sec !== undefined) task.testTimeoutSec = y.max_test_timeout_sec;
  return task;
}

/**
 * Reads a task directory, or a directory of task directories (a suite: each subdirectory not
 * starting with `.` must be a task), or the `task.yaml` of one task.
 */
export async function loadTerminalTasks(path: string): Promise<TerminalTask[]> {
  const st = await stat(path).catch(() => undefined);
  if (!st) throw configError(path, 'no such file or directory');
  if (st.isFile()) {
    if (basename(path) !== TASK_FILE)
      throw configError(path, `expected a task directory or its ${TASK_FILE}`);
    return [await loadTerminalTaskDir(dirname(path))];
  }
  if (await isFile(join(path, TASK_FILE))) return [await loadTerminalTaskDir(path)];
  const tasks: TerminalTask[] = [];
  for (const entry of (await readdir(path, { withFileTypes: true })).sort((a, b) =>
    a.name < b.name ? -1 : 1,
  )) {
    if (entry.name.startsWith('.')) continue;
    const sub = join(path, entry.name);
    if (
      !(
        entry.isDirectory() ||
        (entry.isSymbolicLink() && (await stat(sub).catch(() => undefined))?.isDirectory())
      )
    ) {
      continue;
    }
    tasks.push(await loadTerminalTaskDir(sub));
  }
  if (tasks.length === 0)
    throw configError(path, `no task directories here (a task directory holds ${TASK_FILE})`);
  return tasks;
}

function taskYamlText(task: TerminalTask): string {
  const fields: Record<string, unknown> = { instruction: task.instruction, split: task.split };
  if (task.agentTimeoutSec !== undefined) fields.max_agent_timeout_sec = task.agentTimeoutSec;
  if (task.testTimeoutSec !== undefined) fields.max_test_timeout_sec = task.testTimeoutSec;
  if (task.testNames !== undefined && task.testNames.length > 0) fields.test_names = task.testNames;
  return stringify(fields, { blockQuote: 'literal', lineWidth: 0 });
}

/**
 * Writes `task` as a task directory at `dir` (created; it must not exist or be empty). Loading it
 * back gives the same task when the directory's name is the task's id. The oracle is not written:
 * it is derived from `solution.sh` on load.
 */
export async function writeTerminalTask(task: TerminalTask, dir: string): Promise<void> {
  const existing = await readdir(dir).catch(() => undefined);
  if (existing && existing.length > 0) throw configError(dir, 'not empty; write a task into a new directory');
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, TASK_FILE), taskYamlText(task));
  if (task.setup !== undefined) await writeFile(join(dir, SETUP_FILE), task.setup, { mode: 0o755 });
  if (task.solution !== undefined) await writeFile(join(dir, SOLUTION_FILE), task.solution, { mode: 0o755 });
  await writeFile(join(dir, RUN_TESTS_FILE), task.runTests, { mode: 0o755 });
  const testsDir = join(dir, TESTS_DIR);
  for (const [rel, content] of Object.entries(task.testFiles)) {
    const file = resolve(testsDir, rel);
    if (!file.startsWith(resolve(testsDir) + sep))
      throw configError(dir, `test file path '${rel}' leaves ${TESTS_DIR}/`);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, content);
  }
}

/** Writes each task to `root/<id>`, a suite `loadTerminalTasks(root)` reads back. */
export async function writeTerminalTasks(tasks: readonly TerminalTask[], root: string): Promise<void> {
  for (const task of tasks) await writeTerminalTask(task, join(root, task.id));
}
