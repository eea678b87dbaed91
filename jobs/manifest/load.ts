/**
 * Reading a manifest: YAML with source positions, `--set path=value` overrides, the schema,
 * the per-track defaults and the cross-field rules. Every problem found is reported at once,
 * each as `file:line:col: field.path: expected …, got …` (or `--set expr: …` for a problem an
 * override brought in), in one ConfigError, so the CLI exits 2 with no stack trace.
 */
import { readFile } from 'node:fs/promises';
import { parse as parseYamlValue } from 'yaml';
import { ConfigError } from '../../common/errors.js';
import { crossFieldIssues } from './checks.js';
import { describeIssue, formatPath } from './messages.js';
import { type RLJobManifest, resolveManifest, rljobSchema } from './schema.js';
import { type FieldPath, type SourcePos, YamlSource } from './yaml-source.js';

export interface ManifestProblem {
  file: string;
  /** 1-based; absent when the problem comes from an override. */
  line?: number;
  col?: number;
  /** The `--set` expression the problem comes from, when it does. */
  override?: string;
  /** Dotted field path; empty for YAML syntax errors. */
  path: string;
  message: string;
  /** The whole line as printed: `file:line:col: path: message`. */
  text: string;
}

export interface ManifestOptions {
  /** `path=value` overrides, applied in order after the file is read (values are YAML). */
  set?: readonly string[];
}

export type ManifestResult =
  | { ok: true; manifest: RLJobManifest }
  | { ok: false; problems: ManifestProblem[] };

interface Override {
  expr: string;
  path: (string | number)[];
}

type Locator = (path: FieldPath) => string;
const locators = new WeakMap<object, Locator>();

/**
 * `file:line:col` of a field of a manifest returned by `parseManifest`/`loadManifest` (the
 * nearest written ancestor for a defaulted field; `--set expr` for an overridden one), so
 * later checks such as the partition plan can point into the file too.
 */
export function manifestLocation(manifest: RLJobManifest, path: FieldPath): string | undefined {
  return locators.get(manifest)?.(path);
}

const isPrefix = (prefix: FieldPath, path: FieldPath) =>
  prefix.length <= path.length && prefix.every((s, i) => String(s) === String(path[i]));

const SEGMENT = /^[A-Za-z_][A-Za-z0-9_-]*$|^\d+$/;

/** Parses `a.b.c=value`; the value is YAML, so `50` is a number and `[0.1, 0.3]` a list. */
function parseOverride(expr: string): { path: (string | number)[]; value: unknown } | { error: string } {
  const eq = expr.indexOf('=');
  if (eq < 0) return { error: 'expected path=value, like spec.train.steps=50' };
  const rawPath = expr.slice(0, eq).trim();
  const segments = rawPath.split('.');
  if (rawPath === '' || segments.some((s) => !SEGMENT.test(s))) {
    return {
      error: `expected a dotted field path like spec.train.steps before "=", got ${JSON.stringify(rawPath)}`,
    };
  }
  const rawValue = expr.slice(eq + 1);
  let value: unknown = rawValue;
  if (rawValue.trim() !== '') {
    try {
      value = parseYamlValue(rawValue, { prettyErrors: false });
    } catch (err) {
      const first = (err as Error).message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
      return { error: `the value is not valid YAML: ${first.charAt(0).toLowerCase()}${first.slice(1)}` };
    }
  }
  return { path: segments.map((s) => (/^\d+$/.test(s) ? Number(s) : s)), value };
}

/** Sets `value` at `path` inside `root`, creating mappings on the way; null removes the field. */
function applyOverride(
  root: unknown,
  path: (string | number)[],
  value: unknown,
): { root: unknown } | { error: string } {
  const top: unknown = root === null || root === undefined ? {} : root;
  if (typeof top !== 'object') return { error: 'the manifest is not a mapping' };
  let node = top as Record<string | number, unknown>;
  for (let i = 0; i < path.length - 1; i++) {
    const segment = path[i];
    let next = Object.hasOwn(node, segment) ? node[segment] : undefined;
    if (next === undefined || next === null) {
      next = {};
      define(node, segment, next);
    }
    if (typeof next !== 'object') {
      return {
        error: `${formatPath(path.slice(0, i + 1))} is ${typeof next === 'string' ? 'a string' : `a ${typeof next}`}, not a mapping, so it has no field ${JSON.stringify(String(path[i + 1]))}`,
      };
    }
    node = next as Record<string | number, unknown>;
  }
  const last = path[path.length - 1];
  if (Array.isArray(node)) {
    if (typeof last !== 'number' || last > node.length) {
      return {
        error: `${formatPath(path.slice(0, -1))} is a list of ${node.length}; expected an index up to ${node.length}`,
      };
    }
  }
  if (value === null) {
    if (Array.isArray(node)) node.splice(last as number, 1);
    else delete node[last];
  } else {
    define(node, last, value);
  }
  return { root: top };
}

function define(target: Record<string | number, unknown>, key: string | number, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function problemText(p: Omit<ManifestProblem, 'text'>): string {
  const where = p.override !== undefined ? `--set ${p.override}` : `${p.file}:${p.line}:${p.col}`;
  return p.path ? `${where}: ${p.path}: ${p.message}` : `${where}: ${p.message}`;
}

function problem(p: Omit<ManifestProblem, 'text'>): ManifestProblem {
  return { ...p, text: problemText(p) };
}

/** Validates manifest text; problems are returned, not thrown. */
export function checkManifestText(text: string, file: string, options: ManifestOptions = {}): ManifestResult {
  const problems: ManifestProblem[] = [];
  const overrides: (Override & { value: unknown })[] = [];
  for (const expr of options.set ?? []) {
    const parsed = parseOverride(expr);
    if ('error' in parsed) problems.push(problem({ file, override: expr, path: '', message: parsed.error }));
    else overrides.push({ expr, ...parsed });
  }

  const { source, value: parsed, problems: syntax } = YamlSource.parse(text);
  for (const s of syntax)
    problems.push(problem({ file, line: s.line, col: s.col, path: '', message: s.message }));
  if (syntax.length > 0) return { ok: false, problems: sortProblems(problems) };
  if (parsed === null || parsed === undefined) {
    const message =
      'the file holds no document; expected an RLJob manifest with apiVersion, kind, metadata and spec';
    problems.push(problem({ file, line: 1, col: 1, path: '', message }));
    return { ok: false, problems: sortProblems(problems) };
  }

  let value: unknown = parsed;
  const applied: Override[] = [];
  for (const o of overrides) {
    const result = applyOverride(value, o.path, o.value);
    if ('error' in result) {
      problems.push(problem({ file, override: o.expr, path: formatPath(o.path), message: result.error }));
    } else {
      value = result.root;
      applied.push(o);
    }
  }

  const locate = (path: FieldPath, atKey: boolean): { pos?: SourcePos; override?: string } => {
    // The last override touching the field wins, as it is the one whose value was validated.
    for (let i = applied.length - 1; i >= 0; i--) {
      const o = applied[i];
      if (isPrefix(o.path, path) || (isPrefix(path, o.path) && !source.has(path)))
        return { override: o.expr };
    }
    return { pos: atKey ? source.locateKey(path) : source.locate(path).pos };
  };
  const report = (path: FieldPath, message: string, atKey = false) => {
    const at = locate(path, atKey);
    problems.push(
      problem({
        file,
        line: at.pos?.line,
        col: at.pos?.col,
        override: at.override,
        path: formatPath(path),
        message,
      }),
    );
  };

  const result = rljobSchema.safeParse(value);
  if (!result.success) {
    for (const issue of result.error.issues) {
      for (const d of describeIssue(issue, value, rljobSchema)) report(d.path, d.message, d.atKey);
    }
    return { ok: false, problems: sortProblems(problems) };
  }
  const manifest = resolveManifest(result.data);
  for (const issue of crossFieldIssues(result.data, manifest)) report(issue.path, issue.message);
  if (problems.length > 0) return { ok: false, problems: sortProblems(problems) };

  locators.set(manifest, (path) => {
    const at = locate(path, false);
    return at.override !== undefined ? `--set ${at.override}` : `${file}:${at.pos!.line}:${at.pos!.col}`;
  });
  return { ok: true, manifest };
}

/** File positions first, in file order; then override problems in the order given. */
function sortProblems(problems: ManifestProblem[]): ManifestProblem[] {
  const seen = new Set<string>();
  const unique = problems.filter((p) => !seen.has(p.text) && seen.add(p.text));
  const rank = (p: ManifestProblem) =>
    p.override !== undefined ? Number.MAX_SAFE_INTEGER : p.line! * 1e6 + p.col!;
  return unique
    .map((p, i) => ({ p, i }))
    .sort((a, b) => rank(a.p) - rank(b.p) || a.i - b.i)
    .map(({ p }) => p);
}

/** One ConfigError listing every problem; `fields` name the first. */
export function manifestError(file: string, problems: readonly ManifestProblem[]): ConfigError {
  const first = problems[0];
  const head =
    problems.length === 1
      ? `invalid manifest ${file}:`
      : `invalid manifest ${file} (${problems.length} problems):`;
  return new ConfigError([head, ...problems.map((p) => `  ${p.text}`)].join('\n'), {
    fields: {
      file,
      field: first?.path ?? '',
      line: first?.line,
      col: first?.col,
      override: first?.override,
      problems: problems.length,
    },
  });
}

/** Parses and validates manifest text (read from `file`, which only labels positions). */
export function parseManifest(text: string, file: string, options: ManifestOptions = {}): RLJobManifest {
  const result = checkManifestText(text, file, options);
  if (!result.ok) throw manifestError(file, result.problems);
  return result.manifest;
}

/** Reads, parses and validates the manifest at `file`. */
export async function loadManifest(file: string, options: ManifestOptions = {}): Promise<RLJobManifest> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (err as Error).message;
    throw new ConfigError(`cannot read manifest ${file}: ${why}`, { fields: { file } });
  }
  return parseManifest(text, file, options);
}
