/**
 * Scoring an episode, SWE-bench style: the agent's `git diff` against the base commit (new
 * untracked files included) is applied to a FRESH copy of the snapshot, the task's hidden
 * test_patch goes on top, the test command runs, and the episode is resolved when every
 * FAIL_TO_PASS and every PASS_TO_PASS test passes.
 *
 * The agent reaches the score only through its diff: nothing of its workspace but the diff is
 * carried over, and the files the test patch touches are first put back to their base contents
 * (edits to them neither block the test patch nor survive it). Every git command on a directory
 * the agent wrote to runs in the sandbox, never on the host.
 */
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type SandboxLimits, SHELL, sandboxed } from './shell.js';
import { copySnapshot, removeTree } from './snapshot.js';
import { judgeTests, parseTestOutput, type TestGroupOutcome } from './test-results.js';

export interface GradedTask {
  testCmd: string;
  testPatch?: string;
  failToPass: readonly string[];
  passToPass: readonly string[];
}

export interface GraderOptions {
  limits: SandboxLimits;
  /** Wall clock of the test command. */
  testTimeoutMs: number;
  /** Wall clock of taking the diff; applying the patches gets it on top of testTimeoutMs. */
  gitTimeoutMs: number;
  /** A larger diff is not scored (−1). */
  maxPatchBytes: number;
  /** Test output kept for parsing; past it the run is cut. */
  maxTestOutputBytes: number;
}

export interface Grade {
  resolved: boolean;
  /** Why the episode was not resolved. */
  reason?: string;
  failToPass?: TestGroupOutcome;
  passToPass?: TestGroupOutcome;
  /** Exit code of the test command (null when it was killed). */
  testExitCode?: number | null;
  /** The end of the test command's output. */
  testOutputTail?: string;
}

export type DiffOutcome = { patch: string; error?: undefined } | { patch?: undefined; error: string };

/**
 * Command-line config wins over the repository's: whatever the agent set in its `.git/config`
 * for its own convenience (no prefixes, colours, an external diff) does not change the diff format.
 */
const GIT_FORMAT = [
  '-c',
  'diff.noprefix=false',
  '-c',
  'diff.mnemonicPrefix=false',
  '-c',
  'diff.relative=false',
  '-c',
  'diff.suppressBlankEmpty=false',
  '-c',
  'core.autocrlf=false',
  '-c',
  'core.safecrlf=false',
  '-c',
  'color.ui=false',
];

const GIT_ENV = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };

/**
 * The index is staged in the sandbox's /tmp so the agent's own index is left as it was. Files the
 * repository ignores (.gitignore, .git/info/exclude) are not part of the diff, as with `git add`.
 */
const DIFF_SCRIPT = `set -e
export GIT_INDEX_FILE=/tmp/clawray-diff-index
if [ -f .git/index ]; then cp .git/index "$GIT_INDEX_FILE"; fi
git ${GIT_FORMAT.join(' ')} add -A
exec git ${GIT_FORMAT.join(' ')} diff --cached --binary --no-color --no-ext-diff --no-textconv --no-renames --src-prefix=a/ --dst-prefix=b/ "$1" --
`;

/**
 * One sandbox run grades a fresh copy: the agent's diff, then the test patch (the files it touches
 * first reset to their base contents, new ones removed), then the test command with stderr merged
 * into stdout. The patches come in as files under `.git/` (out of the tests' sight) and are
 * removed before the tests start. Only this script writes to the run's stderr (the tests' goes to
 * stdout), so a `clawray-grade:` line there reliably means a patch did not apply.
 */
const GRADE_SCRIPT = `d=.git/clawray-grade
base="$1"; cmd="$2"; shift 2
if ! err=$(git ${GIT_FORMAT.join(' ')} apply --whitespace=nowarn "$d/agent.diff" 2>&1); then
  printf 'clawray-grade: diff: %s\\n' "$err" >&2; exit 1
fi
if [ -f "$d/test.diff" ]; then
  for f in "$@"; do
    if git cat-file -e "$base:$f" 2>/dev/null; then git checkout -q "$base" -- "$f"; else rm -rf -- "$f"; fi
  done
  if ! err=$(git ${GIT_FORMAT.join(' ')} apply --whitespace=nowarn "$d/test.diff" 2>&1); then
    printf 'clawray-grade: test_patch: %s\\n' "$err" >&2; exit 1
  fi
fi
rm -rf "$d"
unset GIT_CONFIG_NOSYSTEM GIT_CONFIG_GLOBAL
exec "$0" -c "$cmd" 2>&1
`;

function tail(text: string, chars: number): string {
  return text.length <= chars ? text : `…${text.slice(text.length - chars)}`;
}

function lastLines(text: string, n = 5): string {
  return text.trim().split('\n').slice(-n).join(' / ');
}

/** The diff of `workspace` against `baseCommit`, new untracked (not ignored) files included. */
export async function takeDiff(
  workspace: string,
  baseCommit: string,
  options: GraderOptions,
): Promise<DiffOutcome> {
  const r = await sandboxed(['/bin/sh', '-c', DIFF_SCRIPT, 'sh', baseCommit], {
    workspace,
    timeoutMs: options.gitTimeoutMs,
    maxOutputBytes: options.maxPatchBytes + 64 * 1024,
    limits: options.limits,
    env: GIT_ENV,
  });
  if (r.timedOut) return { error: `taking the diff timed out after ${options.gitTimeoutMs} ms` };
  if (r.truncated || Buffer.byteLength(r.stdout) > options.maxPatchBytes) {
    return { error: `the diff is larger than ${options.maxPatchBytes} bytes` };
  }
  if (r.exitCode !== 0) return { error: `could not take the diff: ${lastLines(r.stderr)}` };
  return { patch: r.stdout };
}

function unquote(path: string): string {
  if (!path.startsWith('"')) return path;
  // git quotes unusual names C-style with octal escapes of their UTF-8 bytes.
  const body = path.slice(1, -1);
  const bytes: number[] = [];
  const simple: Record<string, number> = { n: 10, t: 9, '"': 34, '\\': 92, a: 7, b: 8, f: 12, r: 13, v: 11 };
  for (let i = 0; i < body.length; i++) {
    const ch = body[i];
    if (ch === '\\' && i + 1 < body.length) {
      const next = body[i + 1];
      if (/[0-7]/.test(next)) {
        bytes.push(Number.parseInt(body.slice(i + 1, i + 4), 8));
        i += 3;
      } else {
        bytes.push(simple[next] ?? next.charCodeAt(0));
        i += 1;
      }
    } else {
      bytes.push(...Buffer.from(ch, 'utf8'));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/** The repository paths a patch touches (old and new names). */
export function patchPaths(patch: string): string[] {
  const paths = new Set<string>();
  const lines = patch.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const hunk = /^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@/.exec(line);
    if (hunk) {
      // Hunk bodies are skipped by their line counts: a removed line "-- x" reads "--- x".
      let oldLeft = hunk[1] === undefined ? 1 : Number(hunk[1]);
      let newLeft = hunk[2] === undefined ? 1 : Number(hunk[2]);
      while ((oldLeft > 0 || newLeft > 0) && i + 1 < lines.length) {
        const body = lines[++i];
        if (body.startsWith('\\')) continue;
        if (body.startsWith('-')) oldLeft--;
        else if (body.startsWith('+')) newLeft--;
        else {
          oldLeft--;
          newLeft--;
        }
      }
      continue;
    }
    let name: string | undefined;
    if (line.startsWith('--- ') || line.startsWith('+++ ')) {
      name = unquote(line.slice(4).replace(/\t.*$/, ''));
      if (name === '/dev/null') continue;
      name = name.replace(/^[ab]\//, '');
    } else {
      const m = /^(?:rename|copy) (?:from|to) (.+)$/.exec(line);
      if (m) name = unquote(m[1]);
    }
    if (name) paths.add(name);
  }
  return [...paths];
}

/** Applies `patch` (+ the task's test patch) to a fresh copy of `snapshot` and runs the tests. */
export async function gradePatch(
  task: GradedTask,
  snapshot: string,
  baseCommit: string,
  patch: string,
  scratchDir: string,
  options: GraderOptions,
): Promise<Grade> {
  if (patch.trim() === '') return { resolved: false, reason: 'empty diff: the repository was not changed' };
  const root = await mkdtemp(join(scratchDir, 'grade-'));
  const workspace = join(root, 'repo');
  try {
    await copySnapshot(snapshot, workspace);
    // The fresh copy has not been in the sandbox yet: its .git holds no link the agent made.
    const inbox = join(workspace, '.git', 'clawray-grade');
    await mkdir(inbox);
    await writeFile(join(inbox, 'agent.diff'), patch);
    const testPatch = task.testPatch?.trim() ? task.testPatch : undefined;
    if (testPatch) await writeFile(join(inbox, 'test.diff'), testPatch);
    const paths = testPatch ? patchPaths(testPatch) : [];
    const r = await sandboxed([SHELL, '-c', GRADE_SCRIPT, SHELL, baseCommit, task.testCmd, ...paths], {
      workspace,
      timeoutMs: options.gitTimeoutMs + options.testTimeoutMs,
      maxOutputBytes: options.maxTestOutputBytes,
      limits: options.limits,
      env: GIT_ENV,
    });
    const harness = /^clawray-grade: (diff|test_patch): ([\s\S]*)$/m.exec(r.stderr);
    if (harness) {
      const what = harness[1] === 'diff' ? 'the diff' : 'the test patch';
      return { resolved: false, reason: `${what} does not apply: ${lastLines(harness[2])}` };
    }
    const verdict = judgeTests(parseTestOutput(r.stdout), task.failToPass, task.passToPass);
    const grade: Grade = {
      resolved: verdict.resolved,
      failToPass: verdict.failToPass,
      passToPass: verdict.passToPass,
      testExitCode: r.exitCode,
      testOutputTail: tail(r.stdout, 4000),
    };
    if (!verdict.resolved) {
      const failed = [...verdict.failToPass.failed, ...verdict.passToPass.failed];
      const total = task.failToPass.length + task.passToPass.length;
      const shown = failed.slice(0, 5).join(', ') + (failed.length > 5 ? ', …' : '');
      grade.reason = `${failed.length} of ${total} listed tests did not pass: ${shown}`;
      if (r.timedOut) grade.reason += ` (the tests timed out after ${options.testTimeoutMs} ms)`;
      else if (r.truncated) grade.reason += ' (the test output was cut at its size limit)';
    }
    return grade;
  } finally {
    await removeTree(root);
  }
}
