import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../common/errors.js';
import { TerminalEnvironment } from './env.js';
import { createTerminalEnvironment, terminalTrack } from './index.js';
import { BUILTIN_TEST_FILE, buildTerminalSuite, builtinSplit } from './suite.js';
import { fnv1a, HELDOUT_EVERY, ORACLE_SCRIPT_PATH, oracleFor } from './task.js';
import { parseTestOutput, scoreTestOutput } from './test-results.js';

const suite = buildTerminalSuite();
const template = (id: string) => id.slice(0, id.lastIndexOf('-'));

describe('terminal built-in suite', () => {
  it('is deterministic, with unique ids, each task tested several ways and solvable', () => {
    expect(buildTerminalSuite()).toEqual(suite);
    expect(suite.length).toBe(27);
    expect(new Set(suite.map((t) => t.id)).size).toBe(suite.length);
    for (const t of suite) {
      expect(t.id).toMatch(/^[a-z-]+-[0-9a-f]{8}$/);
      expect(t.testNames!.length).toBeGreaterThanOrEqual(3);
      expect(t.testNames!.every((n) => n.startsWith(`${BUILTIN_TEST_FILE}::test_`))).toBe(true);
      expect(Object.keys(t.testFiles)).toEqual([BUILTIN_TEST_FILE]);
      expect(t.oracle).toEqual(oracleFor(t.solution));
      expect(t.oracle.length).toBe(2);
    }
    expect(new Set(suite.map((t) => template(t.id))).size).toBe(9);
    expect(buildTerminalSuite({ seed: 7 }).map((t) => t.id)).not.toEqual(suite.map((t) => t.id));
  });

  it('splits by the hash rule: disjoint, deterministic, independent of the rest of the suite', () => {
    const train = builtinSplit('train');
    const heldout = builtinSplit('heldout');
    expect(train.length + heldout.length).toBe(suite.length);
    expect(heldout.length).toBeGreaterThan(0);
    expect(train.length).toBeGreaterThan(heldout.length);
    const trainIds = new Set(train.map((t) => t.id));
    const trainInstructions = new Set(train.map((t) => t.instruction));
    expect(heldout.some((t) => trainIds.has(t.id) || trainInstructions.has(t.instruction))).toBe(false);
    for (const t of suite) {
      const hash = t.id.slice(-8);
      expect(hash).toBe(fnv1a(`${t.instruction}\0${t.setup ?? ''}`));
      expect(t.split).toBe(Number.parseInt(hash, 16) % HELDOUT_EVERY === 0 ? 'heldout' : 'train');
    }
    const bigger = new Map(buildTerminalSuite({ perTemplate: 5 }).map((t) => [t.id, t.split]));
    for (const t of suite) expect(bigger.get(t.id)).toBe(t.split);
  });

  it('plays a long solution through a file', () => {
    const long = `echo ${'x'.repeat(70_000)} > out.txt\n`;
    const [run, done] = oracleFor(long);
    expect(run.tool_calls!.map((c) => c.function.name)).toEqual(['write_file', 'shell_exec']);
    expect(JSON.parse(run.tool_calls![0].function.arguments)).toEqual({
      path: ORACLE_SCRIPT_PATH,
      content: long,
    });
    expect(done.tool_calls).toBeUndefined();
    expect(oracleFor(undefined)).toEqual([]);
  });
});

describe('terminal test output scoring', () => {
  const pytest = [
    '============================= test session starts ==============================',
    'tests/test_outputs.py ..F                                                 [100%]',
    '=========================== short test summary info ============================',
    'PASSED tests/test_outputs.py::test_a',
    'PASSED tests/test_outputs.py::test_b',
    'FAILED tests/test_outputs.py::test_c - AssertionError: assert 1 == 2',
    'SKIPPED [1] tests/test_outputs.py:9: no network',
    'XFAIL tests/test_outputs.py::test_d - known',
    'ERROR tests/test_outputs.py::test_e - fixture',
    '\u001b[32mPASSED\u001b[0m tests/test_outputs.py::test_f',
    '==================== 1 failed, 2 passed in 0.03s ====================',
  ].join('\n');

  it('reads pytest -rA summary lines into 2·acc − 1', () => {
    const report = scoreTestOutput(pytest);
    expect(report.outcomes).toEqual({
      'tests/test_outputs.py::test_a': 'passed',
      'tests/test_outputs.py::test_b': 'passed',
      'tests/test_outputs.py::test_c': 'failed',
      'tests/test_outputs.py::test_d': 'passed',
      'tests/test_outputs.py::test_e': 'failed',
      'tests/test_outputs.py::test_f': 'passed',
    });
    expect(report).toMatchObject({ passed: 4, total: 6 });
    expect(report.reward).toBeCloseTo(2 * (4 / 6) - 1);
  });

  it('counts only the expected tests when it knows them; unreported ones fail', () => {
    const expected = ['tests/test_outputs.py::test_a', 'tests/test_outputs.py::test_c', 'missing'];
    expect(scoreTestOutput(`${pytest}\nPASSED forged::test_z`, expected)).toMatchObject({
      passed: 1,
      total: 3,
      outcomes: { missing: 'failed' },
    });
  });

  it('lets a failure win over a forged pass of the same test, and gives −1 without results', () => {
    const outcomes = parseTestOutput('FAILED t::x - no\nPASSED t::x\nPASSED t::y\nFAILED t::y');
    expect([...outcomes]).toEqual([
      ['t::x', 'failed'],
      ['t::y', 'failed'],
    ]);
    expect(scoreTestOutput('Traceback: ImportError\n')).toEqual({
      outcomes: {},
      passed: 0,
      total: 0,
      reward: -1,
    });
    expect(scoreTestOutput('PASSED a\nPASSED b')).toMatchObject({ reward: 1 });
  });
});

describe('terminal track', () => {
  it('is a Track with the built-in suite, the loader and validated settings', async () => {
    expect(terminalTrack.name).toBe('terminal');
    expect(await terminalTrack.builtinTasks()).toEqual(suite);
    const env = terminalTrack.createEnvironment(suite, {
      split: 'heldout',
      seed: 1,
      settings: { maxSteps: 3, maxParseErrors: 0, commandTimeoutMs: 1000, memoryMb: 512 },
    });
    expect(env).toBeInstanceOf(TerminalEnvironment);
    await env.close();
  });

  it('rejects bad settings with a ConfigError naming the field', () => {
    const bad = (settings: Record<string, unknown>) => () => createTerminalEnvironment(suite, { settings });
    expect(bad({ maxSteps: 0 })).toThrow(ConfigError);
    expect(bad({ maxSteps: 0 })).toThrow(/terminal env settings: maxSteps: /);
    expect(bad({ maxParseErrors: -1 })).toThrow(/maxParseErrors: /);
    expect(bad({ commandTimeoutMs: 'soon' })).toThrow(/commandTimeoutMs: /);
    expect(bad({ maxStep: 3 })).toThrow(/maxStep/);
    expect(() =>
      createTerminalEnvironment(
        suite.filter((t) => t.split === 'train'),
        { split: 'heldout' },
      ),
    ).toThrow(/no tasks in split 'heldout'/);
  });
});
