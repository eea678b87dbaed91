/**
 * Scoring of a test run's output, pytest style: the `-rA` summary lines `PASSED name`,
 * `FAILED name - reason`, `ERROR name`… as terminal-bench's pytest parser reads them. A test
 * passes on PASSED or XFAIL; FAILED, ERROR and XPASS fail it; SKIPPED tests do not count. A name
 * reported twice with different outcomes fails, so a program under test that prints a forged
 * `PASSED` line cannot overturn the real verdict.
 */
import { testsPassedReward } from '../../judge/rule-verifiers.js';

export type TestOutcome = 'passed' | 'failed';

export interface TestReport {
  /** Outcome per test name: the reported ones, plus `expected` names never reported (failed). */
  outcomes: Record<string, TestOutcome>;
  passed: number;
  total: number;
  /** 2·(passed/total) − 1, or −1 when no test result could be read. */
  reward: number;
}

const RESULT_LINE = /^(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED)\s+(\S+)/;

/** Outcomes of the result lines of `output` (in order of first report). */
export function parseTestOutput(output: string): Map<string, TestOutcome> {
  const outcomes = new Map<string, TestOutcome>();
  for (const raw of output.split(/\r?\n/)) {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: colour codes of a tty-minded runner
    const m = RESULT_LINE.exec(raw.replace(/\u001b\[[0-9;]*m/g, '').trim());
    if (!m) continue;
    const [, status, name] = m;
    if (status === 'SKIPPED') continue;
    const outcome: TestOutcome = status === 'PASSED' || status === 'XFAIL' ? 'passed' : 'failed';
    if (outcomes.get(name) !== 'failed') outcomes.set(name, outcome);
  }
  return outcomes;
}

/**
 * Scores `output`. With `expected` names only those count (a missing one fails, an unknown one is
 * ignored); without, every reported name counts.
 */
export function scoreTestOutput(output: string, expected?: readonly string[]): TestReport {
  const reported = parseTestOutput(output);
  const outcomes: Record<string, TestOutcome> = {};
  if (expected && expected.length > 0) {
    for (const name of expected) outcomes[name] = reported.get(name) ?? 'failed';
  } else {
    for (const [name, outcome] of reported) outcomes[name] = outcome;
  }
  const total = Object.keys(outcomes).length;
  const passed = Object.values(outcomes).filter((o) => o === 'passed').length;
  return { outcomes, passed, total, reward: total === 0 ? -1 : testsPassedReward(passed, total) };
}
