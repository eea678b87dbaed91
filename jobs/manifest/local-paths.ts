/**
 * The files a manifest names on this machine, checked before anything is uploaded or started:
 * a model directory, a task file or directory, a chat template, a judge model, plugin modules.
 * Without this a job whose `./tasks` was never made is uploaded, started, and fails in an env
 * pool with a path inside the package cache; with it `job submit` says, in one line, which field
 * names what, and, when a make script of the example says it writes that path, the command
 * that makes it.
 *
 * A make script declares what it writes with a header line, paths relative to the script:
 *
 *   * @writes ./tasks
 *
 * Only relative paths are checked (they resolve in the working dir, which travels with the job,
 * as the driver resolves them); an absolute path names a file on the cluster's nodes, which need
 * not be this machine, and URIs and `builtin:` values are no files at all.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { ConfigError } from '../../common/errors.js';
import { pluginLocation } from '../../common/plugin-module.js';
import { manifestLocation } from './load.js';
import type { RLJobManifest } from './schema.js';

/** A path the manifest names, as the job resolves it. */
export interface LocalPath {
  /** The field's dotted path, e.g. `spec.env.tasks`. */
  field: string;
  /** The value as written (`./tasks`, `./plugins/reward.js#score`). */
  value: string;
  /** Where the job looks for it (absolute). */
  path: string;
}

export interface LocalPathCheck {
  /** The manifest file as the user named it (it labels the refusal; its folder holds make scripts). */
  file: string;
  /** Where the job resolves relative paths: the working dir it runs in. */
  workingDir: string;
  /** Where the user runs clawray, for the make command printed. Default process.cwd(). */
  cwd?: string;
}

/** `scheme:…` (a URI, `builtin:compact-tools`): not a file on this machine. */
const NOT_A_FILE = /^[A-Za-z][A-Za-z0-9+.-]*:/;

/** The relative paths of the manifest that name files, resolved against the working dir. */
export function localPaths(m: RLJobManifest, workingDir: string): LocalPath[] {
  const { model, env, judge, plugins } = m.spec;
  const named: Array<{ field: string; value: string | undefined; path?: string }> = [];
  // A model path that holds no model is fine with model.init: the job starts from a random one.
  if (!model.init) named.push({ field: 'spec.model.path', value: model.path });
  named.push({ field: 'spec.model.chatTemplate', value: model.chatTemplate });
  if (env && env.tasks !== 'builtin') named.push({ field: 'spec.env.tasks', value: env.tasks });
  // In-job judge engines serve judge.model (the policy's own path is checked above); onnx-prm
  // loads its classifier; with baseURL, judge.model is a model name at that endpoint.
  const judgeDir =
    judge.backend === 'onnx-prm' ||
    (judge.backend === 'llm' && !judge.baseURL && judge.model !== undefined && judge.model !== model.path);
  if (judgeDir) named.push({ field: 'spec.judge.model', value: judge.model });
  for (const [name, spec] of Object.entries(plugins)) {
    if (spec)
      named.push({ field: `spec.plugins.${name}`, value: spec, path: pluginLocation(spec, workingDir).path });
  }
  return named
    .filter((n): n is { field: string; value: string; path?: string } => n.value !== undefined)
    .filter((n) => !isAbsolute(n.value) && !NOT_A_FILE.test(n.value))
    .map((n) => ({ field: n.field, value: n.value, path: n.path ?? resolve(workingDir, n.value) }));
}

/** The manifest's relative paths that name nothing on this machine. */
export function missingLocalPaths(m: RLJobManifest, workingDir: string): LocalPath[] {
  return localPaths(m, workingDir).filter((p) => !existsSync(p.path));
}

/** A make script and the paths (absolute) its `@writes` lines declare. */
export interface MakeScript {
  script: string;
  writes: string[];
}

const MAKE_SCRIPT = /^make-.*\.m?js$/;
/** ` * @writes ./tasks ./repo` in a header comment (or `// @writes …`). */
const WRITES_LINE = /^\s*(?:\*|\/\/)?\s*@writes\s+(.+?)\s*$/gm;

/** The make scripts (`make-*.mjs`) of `dir` with what each declares it writes. */
export function makeScripts(dir: string): MakeScript[] {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => MAKE_SCRIPT.test(n));
  } catch {
    return [];
  }
  return names.sort().map((name) => {
    const script = join(dir, name);
    const text = readFileSync(script, 'utf8');
    const writes = [...text.matchAll(WRITES_LINE)].flatMap((m) =>
      m[1].split(/\s+/).map((p) => resolve(dir, p)),
    );
    return { script, writes };
  });
}

/** The script among `scripts` that writes `path`, or a directory it is in, or something inside it. */
export function makerOf(path: string, scripts: readonly MakeScript[]): string | undefined {
  const within = (inner: string, outer: string) => inner === outer || inner.startsWith(outer + sep);
  return scripts.find((s) => s.writes.some((w) => within(path, w) || within(w, path)))?.script;
}

/**
 * Refuses a manifest whose relative paths name nothing here, in one line: where the field is,
 * the path, and the make command that writes it when a make script next to the manifest (or in
 * the working dir) declares it.
 */
export function checkLocalPaths(m: RLJobManifest, o: LocalPathCheck): void {
  const missing = missingLocalPaths(m, o.workingDir);
  if (missing.length === 0) return;
  const dirs = [...new Set([resolve(dirname(o.file)), resolve(o.workingDir)])];
  const scripts = dirs.flatMap((d) => makeScripts(d));
  const [first, ...rest] = missing;
  const where = manifestLocation(m, first.field.split('.')) ?? o.file;
  const label = where.startsWith('--set ') ? `${o.file} (${where})` : where;
  const inDir =
    resolve(o.workingDir) === resolve(dirname(o.file)) ? '' : ` in the working dir ${o.workingDir}`;
  const maker = makerOf(first.path, scripts);
  const make = maker ? `; make it with: node ${shellWord(relative(o.cwd ?? process.cwd(), maker))}` : '';
  const also =
    rest.length > 0 ? `; also missing: ${rest.map((p) => `${p.field} ${p.value}`).join(', ')}` : '';
  throw new ConfigError(`${label}: ${first.field} ${first.value} does not exist${inDir}${make}${also}`, {
    fields: { field: first.field, path: first.path, ...(maker ? { make: maker } : {}) },
  });
}

/** A word `sh` reads back as it is. */
function shellWord(word: string): string {
  return /^[A-Za-z0-9_\-.,/:=@%+]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
