/**
 * The swe track's built-in suite, generated locally and deterministically (a seeded PRNG, no
 * downloads): one small Python repository per template of repos.ts, written as a git repository
 * whose single commit has a fixed identity and date (so its hash, the task's base_commit, is the
 * same on every machine), with the gold patch and the hidden test patch taken as `git diff`s.
 * `writeSweSuite` writes the repositories and a `tasks.jsonl` in the real format; the suite is
 * read back with the same loader as any other task file.
 *
 * Splits: a template's tasks are held out when the FNV-1a hash of the template name is 0 mod 5,
 * so held-out tasks are bugs of templates never seen in training, and a task's split never depends
 * on what else was generated (nor on the seed). Task ids are `<template>-<hash of the repository>`.
 */
import { randomBytes } from 'node:crypto';
import { access, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { seededRandom } from '../../../common/random.js';
import { git } from './git.js';
import { type BugSpec, makeRng, TEMPLATES, type Template, type TestCase } from './repos.js';
import {
  fnv1a,
  goldPatchOracle,
  loadSweTasks,
  type SweTask,
  splitOf,
  writeSweTaskFile,
} from './task-file.js';

export const SUITE_SEED = 20240611;
/** The runner the README tells the agent about. */
export const VISIBLE_TEST_CMD = 'python3 run_tests.py';
/**
 * Scoring runs a copy of the runner that the hidden test patch adds, not the repository's
 * run_tests.py: files the test patch touches are reset before it applies, so an agent's edit of
 * the runner (printing PASSED for everything) does not reach the score.
 */
export const HIDDEN_RUNNER = 'tests/_clawray_runner.py';
export const TEST_CMD = `python3 ${HIDDEN_RUNNER}`;
/** Bumped when the generator changes in a way the drafts do not show (the suite cache is keyed on it). */
const GENERATOR_VERSION = 2;

export type RunnerStyle = 'pytest' | 'unittest';

export interface SuiteOptions {
  seed?: number;
  /** Repositories per template (default 1), each with its own constants. */
  variants?: number;
}

/** One generated repository, before it is written. */
export interface RepoDraft {
  id: string;
  template: string;
  split: SweTask['split'];
  /** Path → content of the base commit. */
  files: Record<string, string>;
  /** Path → content after the gold patch. */
  fixed: Record<string, string>;
  /** Path → content after the test patch. */
  tests: Record<string, string>;
  problemStatement: string;
  failToPass: string[];
  passToPass: string[];
}

const PACKAGES = ['acme', 'toolbelt', 'pyhelpers', 'corelib', 'utilkit', 'basics', 'handy', 'workbench'];

const PYTEST_RUNNER = (
  root: string,
) => `"""Runs the test functions of tests/test_*.py; prints one PASSED/FAILED line per test."""
import importlib.util
import pathlib
import sys
import traceback


def main():
    root = ${root}
    sys.path.insert(0, str(root))
    passed = failed = 0
    for path in sorted((root / "tests").glob("test_*.py")):
        rel = path.relative_to(root).as_posix()
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            failed += 1
            print(f"ERROR {rel} - {type(exc).__name__}: {exc}")
            continue
        for name in sorted(vars(module)):
            test = getattr(module, name)
            if not name.startswith("test_") or not callable(test):
                continue
            try:
                test()
            except Exception as exc:
                failed += 1
                traceback.print_exc(file=sys.stdout)
                print(f"FAILED {rel}::{name} - {type(exc).__name__}: {exc}")
            else:
                passed += 1
                print(f"PASSED {rel}::{name}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
`;

const UNITTEST_RUNNER = (
  root: string,
) => `"""Runs the unittest tests under tests/; prints one "<test id> ... ok|FAIL|ERROR" line per test."""
import pathlib
import sys
import unittest


class LineResult(unittest.TestResult):
    def addSuccess(self, test):
        super().addSuccess(test)
        print(f"{test.id()} ... ok")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        print(f"{test.id()} ... FAIL")

    def addError(self, test, err):
        super().addError(test, err)
        print(f"{test.id()} ... ERROR")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        print(f"{test.id()} ... skipped {reason!r}")


def main():
    root = ${root}
    suite = unittest.defaultTestLoader.discover(str(root / "tests"), top_level_dir=str(root))
    result = LineResult()
    suite.run(result)
    for test, trace in result.failures + result.errors:
        print("=" * 70)
        print(test.id())
        print(trace)
    print(f"{result.testsRun} run, {len(result.failures)} failures, {len(result.errors)} errors")
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
`;

function indent(text: string, by: string): string {
  return text
    .split('\n')
    .map((line) => (line === '' ? line : by + line))
    .join('\n');
}

function className(module: string): string {
  return `${module
    .split('_')
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join('')}Tests`;
}

function renderTests(style: RunnerStyle, pkg: string, spec: BugSpec, cases: TestCase[]): string {
  const imports = `from ${pkg}.${spec.module} import ${[...spec.imports].sort().join(', ')}\n`;
  if (style === 'pytest') {
    return `${imports}${cases.map((c) => `\n\ndef ${c.name}():\n${indent(c.body, '    ')}\n`).join('')}`;
  }
  const methods = cases.map((c) => `\n    def ${c.name}(self):\n${indent(c.body, '        ')}\n`).join('');
  return `import unittest\n\n${imports}\n\nclass ${className(spec.module)}(unittest.TestCase):${methods}`;
}

function testName(style: RunnerStyle, spec: BugSpec, name: string): string {
  return style === 'pytest'
    ? `tests/test_${spec.module}.py::${name}`
    : `tests.test_${spec.module}.${className(spec.module)}.${name}`;
}

function applyFix(spec: BugSpec): string {
  let fixed = spec.source;
  for (const [bug, fix] of spec.fix) {
    const at = fixed.indexOf(bug);
    if (at < 0 || fixed.indexOf(bug, at + 1) >= 0) {
      throw new Error(`swe suite: the fix of ${spec.module} does not match exactly once: ${bug}`);
    }
    fixed = fixed.slice(0, at) + fix + fixed.slice(at + bug.length);
  }
  return fixed;
}

function draftRepo(template: Template, seed: number, variant: number): RepoDraft {
  const rng = makeRng(seededRandom((seed ^ Number.parseInt(fnv1a(template.name), 16)) + variant));
  const pkg = rng.pick(PACKAGES);
  const style: RunnerStyle = rng.pick(['pytest', 'unittest'] as const);
  const spec = template.make(rng);
  const runner = style === 'pytest' ? PYTEST_RUNNER : UNITTEST_RUNNER;
  const modulePath = `${pkg}/${spec.module}.py`;
  const testPath = `tests/test_${spec.module}.py`;
  const files: Record<string, string> = {
    '.gitignore': '__pycache__/\n*.pyc\n',
    'README.md': `# ${pkg}\n\nSmall Python helpers (\`${modulePath}\`), standard library only.\n\nRun the tests with \`${VISIBLE_TEST_CMD}\`.\n`,
    'run_tests.py': runner('pathlib.Path(__file__).resolve().parent'),
    [`${pkg}/__init__.py`]: `"""${pkg}: small helpers."""\n`,
    [modulePath]: spec.source,
    'tests/__init__.py': '',
    [testPath]: renderTests(style, pkg, spec, spec.passing),
  };
  const tests = {
    [testPath]: renderTests(style, pkg, spec, [...spec.passing, ...spec.failing]),
    [HIDDEN_RUNNER]: runner('pathlib.Path(__file__).resolve().parent.parent'),
  };
  const fixed = { [modulePath]: applyFix(spec) };
  const id = `${template.name}-${fnv1a(JSON.stringify([files, tests, fixed, spec.problem]))}`;
  return {
    id,
    template: template.name,
    split: splitOf(template.name),
    files,
    fixed,
    tests,
    problemStatement: spec.problem,
    failToPass: spec.failing.map((c) => testName(style, spec, c.name)),
    passToPass: spec.passing.map((c) => testName(style, spec, c.name)),
  };
}

/** The drafts of the whole suite, both splits, in template order. Pure: nothing is written. */
export function draftSuite(options: SuiteOptions = {}): RepoDraft[] {
  const seed = options.seed ?? SUITE_SEED;
  const variants = options.variants ?? 1;
  const drafts: RepoDraft[] = [];
  const ids = new Set<string>();
  for (const template of TEMPLATES) {
    for (let v = 0; v < variants; v++) {
      const draft = draftRepo(template, seed, v);
      if (ids.has(draft.id)) continue; // two variants that drew the same constants
      ids.add(draft.id);
      drafts.push(draft);
    }
  }
  return drafts;
}

async function writeFiles(dir: string, files: Record<string, string>): Promise<void> {
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), content);
  }
}

/** The diff that turns the committed tree into one with `files` written over it. */
async function diffOf(
  repo: string,
  files: Record<string, string>,
  base: Record<string, string>,
): Promise<string> {
  await writeFiles(repo, files);
  try {
    await git(['add', '-A'], { cwd: repo });
    return await git(
      ['diff', '--cached', '--no-color', '--no-ext-diff', '--src-prefix=a/', '--dst-prefix=b/'],
      {
        cwd: repo,
      },
    );
  } finally {
    await git(['reset', '-q'], { cwd: repo });
    await writeFiles(repo, base);
    for (const path of Object.keys(files)) {
      if (!Object.hasOwn(base, path)) await rm(join(repo, path), { force: true });
    }
  }
}

async function writeRepo(dir: string, draft: RepoDraft): Promise<SweTask> {
  await mkdir(dir, { recursive: true });
  await writeFiles(dir, draft.files);
  await git(['-c', 'init.defaultBranch=main', 'init', '-q', '--template=', dir], { cwd: dir });
  await git(['add', '-A'], { cwd: dir });
  await git(['commit', '-q', '--no-verify', '-m', `Add ${Object.keys(draft.fixed)[0]}`], { cwd: dir });
  const baseCommit = (await git(['rev-parse', 'HEAD'], { cwd: dir })).trim();
  const patch = await diffOf(dir, draft.fixed, draft.files);
  const testPatch = await diffOf(dir, draft.tests, draft.files);
  return {
    id: draft.id,
    split: draft.split,
    oracle: goldPatchOracle(patch),
    repo: dir,
    baseCommit,
    problemStatement: draft.problemStatement,
    patch,
    testPatch,
    testCmd: TEST_CMD,
    failToPass: draft.failToPass,
    passToPass: draft.passToPass,
  };
}

/**
 * Writes the suite under `dir`: `repos/<id>/` (one git repository each) and `tasks.jsonl`.
 * Returns the path of `tasks.jsonl`.
 */
export async function writeSweSuite(dir: string, options: SuiteOptions = {}): Promise<string> {
  const tasks: SweTask[] = [];
  for (const draft of draftSuite(options)) tasks.push(await writeRepo(join(dir, 'repos', draft.id), draft));
  const file = join(dir, 'tasks.jsonl');
  await writeSweTaskFile(file, tasks);
  return file;
}

/** Where the suite of these options is cached: keyed by the drafts, so a changed template gets a new one. */
export function suiteCacheDir(options: SuiteOptions = {}, root = tmpdir()): string {
  const key = fnv1a(JSON.stringify([GENERATOR_VERSION, draftSuite(options)]));
  return join(root, `clawray-swe-suite-${key}`);
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * The built-in suite, generated on first use into a cache directory (default: under the OS temp
 * dir) and loaded from its `tasks.jsonl`. Concurrent callers each build into a private directory
 * and rename it into place; the first rename wins and the others use its result.
 */
export async function builtinSweTasks(
  options: SuiteOptions & { cacheRoot?: string } = {},
): Promise<SweTask[]> {
  const dir = suiteCacheDir(options, options.cacheRoot);
  const file = join(dir, 'tasks.jsonl');
  if (!(await exists(file))) {
    // A directory without its task file is what an interrupted cleanup leaves; build it anew.
    await rm(dir, { recursive: true, force: true });
    const building = `${dir}.building-${process.pid}-${randomBytes(4).toString('hex')}`;
    try {
      await writeSweSuite(building, options);
      await rename(building, dir).catch(async (e: NodeJS.ErrnoException) => {
        if (!(await exists(file))) throw e;
      });
    } finally {
      await rm(building, { recursive: true, force: true });
    }
  }
  return loadSweTasks(file);
}
