import { describe, expect, it } from 'vitest';
import { patchPaths } from './grader.js';
import { judgeTests, parseTestOutput } from './test-results.js';

describe('test output parsing', () => {
  it('reads pytest -rA summaries, pytest -v lines and unittest -v lines', () => {
    const out = [
      'tests/test_a.py::test_one PASSED                                   [ 25%]',
      'tests/test_a.py::test_two FAILED                                   [ 50%]',
      'tests/test_a.py::test_param[a b] PASSED [ 75%]',
      '=========================== short test summary info ===========================',
      'PASSED tests/test_a.py::test_one',
      'FAILED tests/test_a.py::test_two - AssertionError: assert 1 == 2',
      'ERROR tests/test_b.py::test_setup - RuntimeError: boom',
      'SKIPPED [1] tests/test_c.py:3: no network',
      'XFAIL tests/test_a.py::test_known - reason',
      'XPASS tests/test_a.py::test_lucky',
      'test_add (tests.test_calc.CalcTests.test_add) ... ok',
      'tests.test_calc.CalcTests.test_sub ... FAIL',
      'tests.test_calc.CalcTests.test_div ... ERROR',
      "tests.test_calc.CalcTests.test_net ... skipped 'offline'",
      'tests.test_calc.CalcTests.test_old ... expected failure',
      'FAIL: tests.test_calc.CalcTests.test_sub',
      'random log line ... with dots',
    ].join('\n');
    const results = parseTestOutput(out);
    expect(Object.fromEntries(results)).toEqual({
      'tests/test_a.py::test_one': 'passed',
      'tests/test_a.py::test_two': 'failed',
      'tests/test_a.py::test_param[a b]': 'passed',
      'tests/test_b.py::test_setup': 'error',
      '[1] tests/test_c.py:3: no network': 'skipped',
      'tests/test_a.py::test_known': 'xfail',
      'tests/test_a.py::test_lucky': 'xpass',
      'test_add (tests.test_calc.CalcTests.test_add)': 'passed',
      'tests.test_calc.CalcTests.test_sub': 'failed',
      'tests.test_calc.CalcTests.test_div': 'error',
      'tests.test_calc.CalcTests.test_net': 'skipped',
      'tests.test_calc.CalcTests.test_old': 'xfail',
    });
  });

  it('lets a failing report of a test win over a passing one', () => {
    const results = parseTestOutput('PASSED t::x\nFAILED t::x - no\nPASSED t::x\n', 'PASSED t::y\r\n');
    expect(results.get('t::x')).toBe('failed');
    expect(results.get('t::y')).toBe('passed');
  });

  it('resolves only when every listed test passes; missing tests count as failed', () => {
    const results = parseTestOutput('PASSED a\nPASSED b\nFAILED c\nXFAIL d\nSKIPPED e\n');
    expect(judgeTests(results, ['a'], ['b', 'd'])).toEqual({
      resolved: true,
      failToPass: { passed: ['a'], failed: [] },
      passToPass: { passed: ['b', 'd'], failed: [] },
    });
    const verdict = judgeTests(results, ['a', 'missing'], ['b', 'c', 'e']);
    expect(verdict.resolved).toBe(false);
    expect(verdict.failToPass.failed).toEqual(['missing']);
    expect(verdict.passToPass.failed).toEqual(['c', 'e']);
  });
});

describe('patch paths', () => {
  it('lists the old and new paths a patch touches', () => {
    const patch = [
      'diff --git a/tests/test_x.py b/tests/test_x.py',
      '--- a/tests/test_x.py',
      '+++ b/tests/test_x.py',
      '@@ -1,2 +1,2 @@',
      '--- a comment removed',
      '+++ a comment added',
      ' context',
      '\\ No newline at end of file',
      'diff --git a/tests/new.py b/tests/new.py',
      'new file mode 100644',
      '--- /dev/null',
      '+++ b/tests/new.py',
      'diff --git a/old.py b/moved.py',
      'rename from old.py',
      'rename to moved.py',
      '--- "a/tests/caf\\303\\251 x.py"',
      '+++ "b/tests/caf\\303\\251 x.py"',
    ].join('\n');
    expect(patchPaths(patch)).toEqual([
      'tests/test_x.py',
      'tests/new.py',
      'old.py',
      'moved.py',
      'tests/café x.py',
    ]);
  });
});
