/**
 * zod issues as people read them: the field path, what was expected, what was found, and for
 * a misspelt key or enum value the closest valid one. The schema's checks carry only the
 * "expected" phrase; everything else is added here from the input itself.
 */
import type { z } from 'zod';
import { closest } from '../../common/did-you-mean.js';
import type { FieldPath } from './yaml-source.js';

export { closest, editDistance } from '../../common/did-you-mean.js';

export interface DescribedIssue {
  path: (string | number)[];
  message: string;
  /** Unknown or malformed keys are located at the key, not at its value. */
  atKey: boolean;
}

/** `spec.train.lr`; the same dotted form `--set` takes. */
export function formatPath(path: FieldPath): string {
  return path.length === 0 ? '(manifest)' : path.map(String).join('.');
}

export function valueAt(root: unknown, path: FieldPath): unknown {
  let v = root;
  for (const segment of path) {
    if (v === null || typeof v !== 'object') return undefined;
    if (!Object.hasOwn(v, segment)) return undefined;
    v = (v as Record<string | number, unknown>)[segment];
  }
  return v;
}

/** How a found value is shown after "got". */
export function renderValue(v: unknown): string {
  if (v === null) return 'nothing (an empty value)';
  if (typeof v === 'string') return JSON.stringify(v.length > 60 ? `${v.slice(0, 57)}...` : v);
  if (typeof v === 'number')
    return Number.isNaN(v) ? '.nan' : Number.isFinite(v) ? String(v) : v > 0 ? '.inf' : '-.inf';
  if (typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (v instanceof Uint8Array) return 'binary data';
  if (v instanceof Date) return `a date (${v.toISOString().slice(0, 10)})`;
  if (Array.isArray(v)) {
    const json = safeJson(v);
    return json && json.length <= 40
      ? `a list ${json}`
      : `a list of ${v.length} item${v.length === 1 ? '' : 's'}`;
  }
  if (typeof v === 'object') return 'a mapping';
  return String(v);
}

function safeJson(v: unknown): string | undefined {
  try {
    return JSON.stringify(v).replaceAll(',', ', ');
  } catch {
    return undefined;
  }
}

interface Def {
  type: string;
  shape?: Record<string, { _zod: { def: Def } }>;
  innerType?: { _zod: { def: Def } };
  in?: { _zod: { def: Def } };
  element?: { _zod: { def: Def } };
  valueType?: { _zod: { def: Def } };
  items?: { _zod: { def: Def } }[];
}

const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** Looks through optional/default/pipe wrappers to the schema doing the work. */
function unwrap(def: Def): Def {
  let d = def;
  for (let i = 0; i < 16; i++) {
    const inner = d.innerType ?? d.in;
    if (!inner) break;
    d = inner._zod.def;
  }
  return d;
}

function defAt(schema: z.ZodType, path: FieldPath): Def | undefined {
  let d: Def | undefined = unwrap(defOf(schema));
  for (const segment of path) {
    if (!d) return undefined;
    const next: { _zod: { def: Def } } | undefined =
      d.type === 'object'
        ? d.shape?.[String(segment)]
        : d.type === 'array'
          ? d.element
          : d.type === 'record'
            ? d.valueType
            : d.type === 'tuple'
              ? d.items?.[Number(segment)]
              : undefined;
    d = next ? unwrap(next._zod.def) : undefined;
  }
  return d;
}

/** The keys a strict object at `path` accepts. */
export function knownKeys(schema: z.ZodType, path: FieldPath): string[] {
  const d = defAt(schema, path);
  return d?.type === 'object' ? Object.keys(d.shape ?? {}) : [];
}

/** Every object field of the schema by name, with the paths it lives at. */
function fieldIndex(schema: z.ZodType): Map<string, string[]> {
  const index = new Map<string, string[]>();
  const visit = (d: Def, path: string[]) => {
    if (d.type !== 'object' || path.length > 6) return;
    for (const [key, child] of Object.entries(d.shape ?? {})) {
      const list = index.get(key) ?? [];
      list.push(formatPath(path));
      index.set(key, list);
      visit(unwrap(child._zod.def), [...path, key]);
    }
  };
  visit(unwrap(defOf(schema)), []);
  return index;
}

const indexes = new WeakMap<z.ZodType, Map<string, string[]>>();

function unknownFieldMessage(schema: z.ZodType, parent: FieldPath, key: string): string {
  const siblings = knownKeys(schema, parent);
  const near = closest(key, siblings);
  if (near) return `unknown field \`${key}\`; did you mean \`${near}\`?`;
  let index = indexes.get(schema);
  if (!index) {
    index = fieldIndex(schema);
    indexes.set(schema, index);
  }
  // Only deeper down: a key written one level too high (`spec.maxTurns`) is a common slip; a
  // same-named key in an unrelated section (`checkpoint.dir` for `model.dir`) is not a hint.
  const here = formatPath(parent);
  const elsewhere = index.get(key)?.filter((p) => parent.length === 0 || p.startsWith(`${here}.`));
  if (elsewhere && elsewhere.length > 0) {
    return `unknown field \`${key}\` here; it belongs in ${elsewhere.map((p) => `\`${p}\``).join(' or ')}`;
  }
  return siblings.length > 0
    ? `unknown field \`${key}\`; expected one of ${siblings.join(', ')}`
    : `unknown field \`${key}\``;
}

function expectedVsFound(expected: string, found: unknown, present: boolean): string {
  if (!present) return `required field is missing; expected ${expected}`;
  return `expected ${expected}, got ${renderValue(found)}`;
}

/** One zod issue (unknown keys: one per key) as described issues, reading values from `input`. */
export function describeIssue(issue: z.core.$ZodIssue, input: unknown, schema: z.ZodType): DescribedIssue[] {
  const path = issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p));
  const value = valueAt(input, path);
  const present = value !== undefined;
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map((key) => ({
        path: [...path, key],
        message: unknownFieldMessage(schema, path, key),
        atKey: true,
      }));
    case 'invalid_key': {
      const expected = issue.issues[0]?.message ?? 'a valid key';
      const key = path[path.length - 1];
      return [
        {
          path,
          message: `the key is invalid: expected ${expected}, got ${JSON.stringify(key)}`,
          atKey: true,
        },
      ];
    }
    case 'invalid_value': {
      let message = expectedVsFound(issue.message, value, present);
      if (typeof value === 'string' && issue.values.length > 1) {
        const near = closest(
          value,
          issue.values.filter((v): v is string => typeof v === 'string'),
        );
        if (near && near !== value) message += ` (did you mean "${near}"?)`;
      }
      return [{ path, message, atKey: false }];
    }
    case 'custom': {
      const expected = (issue.params as { expected?: boolean } | undefined)?.expected;
      return [
        {
          path,
          message: expected ? expectedVsFound(issue.message, value, present) : issue.message,
          atKey: false,
        },
      ];
    }
    default:
      return [{ path, message: expectedVsFound(issue.message, value, present), atKey: false }];
  }
}
