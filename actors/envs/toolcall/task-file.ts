/**
 * The toolcall track's task file: JSONL, one task per line —
 * `{"question": "...", "answer": "42", "id"?: "...", "split"?: "train"|"heldout", "oracle"?: [actions]}`.
 * A missing id becomes `custom-<FNV-1a of the question>` and a missing split follows the built-in
 * suite's hash rule, so a file without them still splits the same way on every machine.
 */
import { stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { assertUniqueIds, readJsonlRecords } from '../jsonl-records.js';
import { demonstrationSchema } from '../tool-calls.js';
import { fnv1a, splitOfHash } from '../track.js';
import type { ToolcallTask } from './tasks.js';

export const TASK_FILE_NAME = 'tasks.jsonl';

const record = z.strictObject({
  id: z.string().min(1).optional(),
  question: z.string().min(1),
  answer: z.union([z.string().min(1), z.number()]).transform(String),
  split: z.enum(['train', 'heldout']).optional(),
  oracle: z.array(demonstrationSchema).optional(),
});

/** Reads a toolcall task file (or the `tasks.jsonl` of a directory). */
export async function loadToolcallTasks(path: string): Promise<ToolcallTask[]> {
  const file = (await stat(path).catch(() => undefined))?.isDirectory() ? join(path, TASK_FILE_NAME) : path;
  const records = await readJsonlRecords(file, record);
  const tasks = records.map(({ line, value }) => {
    const hash = fnv1a(value.question);
    const split = value.split ?? splitOfHash(hash);
    const task: ToolcallTask = {
      id: value.id ?? `custom-${hash}`,
      kind: 'custom',
      split,
      question: value.question,
      answer: value.answer,
      oracle: value.oracle ?? [],
    };
    return { line, task };
  });
  assertUniqueIds(
    file,
    tasks.map(({ line, task }) => ({ line, id: task.id })),
  );
  return tasks.map(({ task }) => task);
}

/** Writes tasks in the task-file format (the built-in suite, for inspection or editing). */
export async function writeToolcallTasks(tasks: readonly ToolcallTask[], file: string): Promise<void> {
  const lines = tasks.map((t) =>
    JSON.stringify({ id: t.id, question: t.question, answer: t.answer, split: t.split, oracle: t.oracle }),
  );
  await writeFile(file, `${lines.join('\n')}\n`);
}
