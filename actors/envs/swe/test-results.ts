/**
 * Reading per-test results out of a test command's output, and the SWE-bench verdict on them.
 *
 * Recognised lines (each on its own line, surrounding whitespace ignored):
 * - pytest `-rA` summary: `PASSED tests/test_x.py::test_y`, `FAILED tests/test_x.py::test_y - reason`,
 *   also ERROR, SKIPPED, XFAIL, XPASS;
 * - pytest `-v`: `tests/test_x.py::test_y PASSED [ 50%]` (the name must hold `::`);
 * - unittest `-v`: `name ... ok`, `name ... FAIL`, `name ... ERROR`, `name ... skipped 'why'`,
 *   `name ... expected failure`, `name ... unexpected success`; the name is everything before ` ... `.
 *
 * A test counts as passed when it PASSED or XFAILed (an expected failure is the wanted outcome),
 * as in SWE-bench. When one name is reported more than once, a failing report wins over a passing
 * one, so a patched module that prints fake `PASSED` lines does not hide the runner's `FAILED`.
 * A listed test missing from the output counts as failed.
 */

export type TestStatus = 'passed' | 'failed' | 'error' | 'skipped' | 'xfail' | 'xpass';

const PYTEST_STATUS: Record<string, TestStatus> = {
  PASSED: 'passed',
  FAILED: 'failed',
  ERROR: 'error',
  SKIPPED: 'skipped',
  XFAIL: 'xfail',
  XPASS: 'xpass',
};

const STATUS_WORDS = Object.keys(PYTEST_STATUS).join('|');
const PYTEST_SUMMARY = new RegExp(`^(${STATUS_WORDS})\\s+(\\S.*)$`);
const PYTEST_VERBOSE = new RegExp(`^(\\S.*::.*?)\\s+(${STATUS_WORDS})(?:\\s+\\[\\s*\\d+%\\])?$`);
const UNITTEST = /^(\S.*?) \.\.\. (ok|FAIL|ERROR|skipped\b.*|expected failure|unexpected success)$/;

/** How bad a status is when one test is reported more than once: the worst report stands. */
const SEVERITY: Record<TestStatus, number> = {
  passed: 0,
  xfail: 0,
  skipped: 1,
  xpass: 2,
  failed: 3,
  error: 3,
};

export function isPassing(status: TestStatus | undefined): boolean {
  return status === 'passed' || status === 'xfail';
}

function unittestStatus(word: string): TestStatus {
  if (word === 'ok') return 'passed';
  if (word === 'FAIL') return 'failed';
  if (word === 'ERROR') return 'error';
  if (word === 'expected failure') return 'xfail';
  if (word === 'unexpected success') return 'xpass';
  return 'skipped';
}

function parseLine(line: string): [string, TestStatus] | undefined {
  const summary = PYTEST_SUMMARY.exec(line);
  if (summary) {
    let name = summary[2];
    // `FAILED name - AssertionError: …`: the reason follows the first ` - ` after the name.
    const dash = name.indexOf(' - ');
    if (dash > 0) name = name.slice(0, dash);
    return [name.trim(), PYTEST_STATUS[summary[1]]];
  }
  const verbose = PYTEST_VERBOSE.exec(line);
  if (verbose) return [verbose[1], PYTEST_STATUS[verbose[2]]];
  const unit = UNITTEST.exec(line);
  if (unit) return [unit[1], unittestStatus(unit[2])];
  return undefined;
}

/** Every test the output reports, with its worst reported status. */
export function parseTestOutput(...outputs: string[]): Map<string, TestStatus> {
  const results = new Map<string, TestStatus>();
  for (const output of outputs) {
    for (const raw of output.split(/\r?\n/)) {
      const parsed = parseLine(raw.trim());
      if (!parsed) continue;
      const [name, status] = parsed;
      const before = results.get(name);
      if (before === undefined || SEVERITY[status] > SEVERITY[before]) results.set(name, status);
    }
  }
  return results;
}

export interface TestGroupOutcome {
  passed: string[];
  /** Listed tests that did not pass, including those missing from the output. */
  failed: string[];
}

export interface TestVerdict {
  /** Every FAIL_TO_PASS and every PASS_TO_PASS test passed. */
  resolved: boolean;
  failToPass: TestGroupOutcome;
  passToPass: TestGroupOutcome;
}

function group(names: readonly string[], results: Map<string, TestStatus>): TestGroupOutcome {
  const outcome: TestGroupOutcome = { passed: [], failed: [] };
  for (const name of names) (isPassing(results.get(name)) ? outcome.passed : outcome.failed).push(name);
  return outcome;
}

export function judgeTests(
  results: Map<string, TestStatus>,
  failToPass: readonly string[],
  passToPass: readonly string[],
): TestVerdict {
  const f2p = group(failToPass, results);
  const p2p = group(passToPass, results);
  return {
    resolved: f2p.failed.length === 0 && p2p.failed.length === 0,
    failToPass: f2p,
    passToPass: p2p,
  };
}
