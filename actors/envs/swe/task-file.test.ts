import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../common/errors.js';
import { sweTrack } from './index.js';
import { TEMPLATES } from './repos.js';
import { fnv1a, loadSweTasks, type SweTask, splitOf, writeSweTaskFile } from './task-file.js';
import { builtinSweTasks, draftSuite, writeSweSuite } from './tasks.js';

let dir: string;
let suiteFile: string;
let suite: SweTask[];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'clawray-swe-taskfile-'));
  suiteFile = await writeSweSuite(join(dir, 'suite'));
  suite = await loadSweTasks(suiteFile);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const valid = {
  instance_id: 'demo-1',
  repo: 'repo',
  problem_statement: 'It is broken.',
  test_cmd: 'python3 run_tests.py',
  FAIL_TO_PASS: ['t::a'],
};

function writeJsonl(name: string, lines: unknown[]): string {
  const file = join(dir, name);
  mkdirSync(join(dir, 'repo'), { recursive: true });
  writeFileSync(file, lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n'));
  return file;
}

async function loadError(lines: unknown[]): Promise<ConfigError> {
  const file = writeJsonl(`bad-${Math.random().toString(36).slice(2)}.jsonl`, lines);
  const err = await loadSweTasks(file).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConfigError);
  return err as ConfigError;
}

describe('swe task file', () => {
  it('round-trips the built-in suite through JSONL', async () => {
    expect(suite.length).toBe(TEMPLATES.length);
    // Both runner styles occur: pytest-style ids (file::test) and unittest ids (module.Class.test).
    expect(suite.some((t) => t.failToPass[0].includes('::'))).toBe(true);
    expect(suite.some((t) => /^tests\.test_\w+\.\w+Tests\.test_\w+$/.test(t.failToPass[0]))).toBe(true);
    const again = join(dir, 'again', 'tasks.jsonl');
    mkdirSync(join(dir, 'again'));
    await writeSweTaskFile(again, suite);
    expect(await loadSweTasks(again)).toEqual(suite);
    expect(await loadSweTasks(join(dir, 'suite'))).toEqual(suite);
    for (const t of suite) {
      expect(t.repo).toBe(join(dir, 'suite', 'repos', t.id));
      expect(t.baseCommit).toMatch(/^[0-9a-f]{40}$/);
      expect(t.patch).toContain('diff --git');
      expect(t.testPatch).toContain('diff --git');
      expect(t.failToPass.length).toBeGreaterThan(0);
      expect(t.passToPass.length).toBeGreaterThan(0);
      expect(t.oracle).toHaveLength(2);
      expect(JSON.parse(t.oracle[0].tool_calls![0].function.arguments).command).toContain(t.patch);
      // The working tree is the base commit, nothing more (a plain-directory copy must match it).
      expect(
        execFileSync('git', ['status', '--porcelain', '--ignored'], { cwd: t.repo, encoding: 'utf8' }),
      ).toBe('');
    }
  });

  it('splits by the template name, with both splits non-empty and independent of the seed', () => {
    const heldout = suite.filter((t) => t.split === 'heldout');
    expect(heldout.length).toBeGreaterThan(0);
    expect(heldout.length).toBeLessThan(suite.length / 2);
    for (const t of suite) {
      const template = TEMPLATES.find((x) => t.id.startsWith(`${x.name}-`))!;
      expect(t.split).toBe(Number.parseInt(fnv1a(template.name), 16) % 5 === 0 ? 'heldout' : 'train');
    }
    const bySeed = new Map(draftSuite({ seed: 99, variants: 2 }).map((d) => [d.template, d.split]));
    for (const t of suite) expect(bySeed.get(t.id.replace(/-[0-9a-f]{8}$/, ''))).toBe(t.split);
    expect(splitOf('x')).toBe(splitOf('x'));
  });

  it('generates the same repositories, commits and ids on every run, cached once', async () => {
    const cacheRoot = join(dir, 'cache');
    mkdirSync(cacheRoot);
    // Two builders race for the same cache directory; both end up with the one that won.
    const [a, b] = await Promise.all([builtinSweTasks({ cacheRoot }), builtinSweTasks({ cacheRoot })]);
    expect(a.map((t) => [t.id, t.baseCommit, t.patch, t.testPatch])).toEqual(
      suite.map((t) => [t.id, t.baseCommit, t.patch, t.testPatch]),
    );
    expect(b).toEqual(a);
    expect(readdirSync(cacheRoot)).toHaveLength(1);
    expect(draftSuite().map((d) => d.id)).toEqual(suite.map((t) => t.id));
    expect(draftSuite({ seed: 7 }).map((d) => d.id)).not.toEqual(suite.map((t) => t.id));
    expect(draftSuite({ variants: 2 }).length).toBeGreaterThan(suite.length);
    expect((await sweTrack.builtinTasks()).map((t) => t.id)).toEqual(suite.map((t) => t.id));
  });

  it('reads SWE-bench style fields: lists as JSON strings, nulls, extra fields, relative repos', async () => {
    const file = writeJsonl('ok.jsonl', [
      {
        ...valid,
        FAIL_TO_PASS: '["t::a", "t::b"]',
        PASS_TO_PASS: '[]',
        patch: null,
        hints_text: '',
        version: '1.0',
      },
      '',
      { ...valid, instance_id: 'demo-2', split: 'heldout', base_commit: 'abc123', PASS_TO_PASS: ['t::c'] },
    ]);
    const tasks = await loadSweTasks(file);
    expect(tasks).toHaveLength(2);
    expect(tasks[0]).toEqual({
      id: 'demo-1',
      split: splitOf('demo-1'),
      oracle: [],
      repo: join(dir, 'repo'),
      problemStatement: 'It is broken.',
      testCmd: 'python3 run_tests.py',
      failToPass: ['t::a', 't::b'],
      passToPass: [],
    });
    expect(tasks[1]).toMatchObject({ split: 'heldout', baseCommit: 'abc123', passToPass: ['t::c'] });
  });

  it('takes a demonstration from `oracle` over the gold patch, and writes it back', async () => {
    const write = {
      content: null,
      tool_calls: [
        {
          id: 'call_1',
          type: 'function' as const,
          function: { name: 'write_file', arguments: JSON.stringify({ path: 'min', content: '110' }) },
        },
      ],
    };
    const patch = '--- a/min\n+++ b/min\n@@ -1 +1 @@\n-0\n+110\n';
    const file = writeJsonl('oracle.jsonl', [
      { ...valid, patch, oracle: [write, { content: 'Done.' }] },
      { ...valid, instance_id: 'demo-2', patch },
    ]);
    const [own, gold] = await loadSweTasks(file);
    expect(own.oracle).toEqual([write, { content: 'Done.' }]);
    expect(own.patch).toBe(patch);
    expect(JSON.parse(gold.oracle[0].tool_calls![0].function.arguments).command).toContain(patch);
    const again = join(dir, 'oracle-again.jsonl');
    await writeSweTaskFile(again, [own, gold]);
    expect(await loadSweTasks(again)).toEqual([own, gold]);
  });

  it('names the file, line and field of a bad instance', async () => {
    const at = (e: ConfigError) => e.message;
    expect(at(await loadError([valid, '{"instance_id": ']))).toMatch(/bad-\w+\.jsonl:2: not valid JSON/);
    expect(at(await loadError([valid, [1, 2]]))).toMatch(/:2: an instance must be a JSON object/);
    expect(at(await loadError([{ ...valid, test_cmd: undefined }]))).toMatch(/\.jsonl:1: field test_cmd:/);
    expect(at(await loadError([valid, { ...valid, instance_id: 'x', FAIL_TO_PASS: '[1' }]))).toMatch(
      /:2: field FAIL_TO_PASS: FAIL_TO_PASS must be a JSON array/,
    );
    expect(at(await loadError([{ ...valid, FAIL_TO_PASS: [] }]))).toMatch(
      /:1: field FAIL_TO_PASS: .*at least one/,
    );
    expect(at(await loadError([{ ...valid, PASS_TO_PASS: [3] }]))).toMatch(/:1: field PASS_TO_PASS\.0:/);
    expect(at(await loadError([{ ...valid, base_commit: '--upload-pack=x' }]))).toMatch(
      /:1: field base_commit:/,
    );
    expect(at(await loadError([{ ...valid, split: 'test' }]))).toMatch(/:1: field split:/);
    expect(at(await loadError([{ ...valid, oracle: [{ content: 'x', toolcalls: [] }] }]))).toMatch(
      /:1: field oracle\.0:.*toolcalls/,
    );
    expect(at(await loadError([{ ...valid, repo: 'nowhere' }]))).toMatch(
      /:1: field repo: .*nowhere is not a directory/,
    );
    expect(at(await loadError([valid, '', valid]))).toMatch(
      /:3: field instance_id: 'demo-1' is already used at .*:1/,
    );
    const err = await loadError([{ ...valid, problem_statement: '' }]);
    expect(err.fields.field).toBe('problem_statement');
    await expect(loadSweTasks(join(dir, 'missing.jsonl'))).rejects.toThrow(/does not exist/);
    const empty = join(dir, 'empty-dir');
    mkdirSync(empty);
    await expect(loadSweTasks(empty)).rejects.toThrow(/no \*\.jsonl/);
  });
});
