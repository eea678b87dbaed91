/**
 * Reads a JSONL file of task records, validating each line with a zod schema. Every problem is a
 * ConfigError naming `file:line` and the field path, because a user fixing a task file needs to
 * know exactly which record and field to edit.
 */
import { readFile } from 'node:fs/promises';
import type { z } from 'zod';
import { ConfigError } from '../../common/errors.js';

export interface JsonlRecord<T> {
  /** 1-based line number in the file. */
  line: number;
  value: T;
}

/** `a.b[2]: message; …` for a zod error, '(record)' for the root. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const path = issue.path
        .map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`))
        .join('');
      return `${path || '(record)'}: ${issue.message}`;
    })
    .join('; ');
}

export async function readJsonlRecords<S extends z.ZodType>(
  path: string,
  schema: S,
): Promise<Array<JsonlRecord<z.output<S>>>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`${path}: cannot read the task file (${(err as Error).message})`, {
      cause: err,
      fields: { file: path },
    });
  }
  const records: Array<JsonlRecord<z.output<S>>> = [];
  for (const [n, raw] of text.split('\n').entries()) {
    const line = n + 1;
    if (raw.trim() === '') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch (err) {
      throw new ConfigError(`${path}:${line}: not valid JSON (${(err as Error).message})`, {
        cause: err,
        fields: { file: path, line },
      });
    }
    const result = schema.safeParse(parsed);
    if (!result.success) {
      throw new ConfigError(`${path}:${line}: ${describeIssues(result.error)}`, {
        fields: { file: path, line },
      });
    }
    records.push({ line, value: result.data });
  }
  if (records.length === 0)
    throw new ConfigError(`${path}: no tasks in the file`, { fields: { file: path } });
  return records;
}

/** Throws naming both lines when two records share an id. */
export function assertUniqueIds(path: string, records: ReadonlyArray<{ line: number; id: string }>): void {
  const seen = new Map<string, number>();
  for (const { line, id } of records) {
    const first = seen.get(id);
    if (first !== undefined) {
      throw new ConfigError(`${path}:${line}: id '${id}' is already used on line ${first}`, {
        fields: { file: path, line, id },
      });
    }
    seen.set(id, line);
  }
}
