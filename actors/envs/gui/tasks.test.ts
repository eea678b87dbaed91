import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../common/errors.js';
import { parseElementSpec } from './accessibility.js';
import { GUI_TOOL_ARGUMENTS, isGuiToolName } from './actions.js';
import { launchChromium } from './browser.js';
import { GUI_TASK_KINDS } from './drafts.js';
import { GuiEnvironment, parseGuiSettings } from './env.js';
import { checkGoal, jsonEqual } from './goal.js';
import { guiTrack } from './index.js';
import { loadGuiTasks, writeGuiSuite } from './task-file.js';
import { buildGuiSuite, guiSplitOf, guiTaskSplit } from './tasks.js';

const suite = buildGuiSuite();

describe('gui task suite', () => {
  it('is deterministic, with unique ids, every kind and disjoint, non-empty splits', async () => {
    expect(buildGuiSuite()).toEqual(suite);
    expect(await guiTrack.builtinTasks()).toEqual(suite);
    expect(suite.length).toBeGreaterThanOrEqual(15);
    expect(suite.length).toBeLessThanOrEqual(24);
    expect(new Set(suite.map((t) => t.id)).size).toBe(suite.length);
    expect(new Set(suite.map((t) => t.instruction)).size).toBe(suite.length);
    expect([...new Set(suite.map((t) => t.kind))].sort()).toEqual([...GUI_TASK_KINDS].sort());
    const train = guiTaskSplit('train');
    const heldout = guiTaskSplit('heldout');
    expect(train.length).toBeGreaterThan(0);
    expect(heldout.length).toBeGreaterThan(0);
    expect(train.length + heldout.length).toBe(suite.length);
    for (const t of suite) expect(t.split).toBe(guiSplitOf(t.instruction));
    // A task's split does not depend on how many others were generated.
    const bigger = new Map(buildGuiSuite({ perKind: 5 }).map((t) => [t.id, t.split]));
    for (const t of suite) if (bigger.has(t.id)) expect(bigger.get(t.id)).toBe(t.split);
    expect(buildGuiSuite({ seed: 7 }).map((t) => t.id)).not.toEqual(suite.map((t) => t.id));
  });

  it('gives every task a well-formed oracle that ends with an answer, some of it by coordinates', () => {
    let byPoint = 0;
    for (const task of suite) {
      expect(task.oracle.length).toBeGreaterThanOrEqual(2);
      expect(task.oracle.at(-1)!.tool_calls).toBeUndefined();
      for (const action of task.oracle.slice(0, -1)) {
        expect(action.tool_calls!.length).toBeGreaterThan(0);
        for (const call of action.tool_calls!) {
          const name = call.function.name;
          expect(isGuiToolName(name)).toBe(true);
          const args = JSON.parse(call.function.arguments);
          expect(GUI_TOOL_ARGUMENTS[name as keyof typeof GUI_TOOL_ARGUMENTS].safeParse(args).success).toBe(
            true,
          );
          if (name === 'click' && 'x' in args) byPoint++;
        }
      }
      expect(task.html).toContain('window.__taskState');
      expect(Object.keys(task.goal.state).length).toBeGreaterThan(0);
    }
    expect(byPoint).toBeGreaterThanOrEqual(3);
  });
});

describe('gui goal and element names', () => {
  it('compares JSON values structurally and names the unmet keys', () => {
    expect(jsonEqual({ a: [1, { b: 'x' }], c: null }, { c: null, a: [1, { b: 'x' }] })).toBe(true);
    expect(jsonEqual([1, 2], [2, 1])).toBe(false);
    expect(jsonEqual({ a: 1 }, { a: 1, b: undefined })).toBe(false);
    expect(jsonEqual(1, '1')).toBe(false);
    const goal = { state: { submitted: true, form: { n: 3 } } };
    expect(checkGoal({ submitted: true, form: { n: 3 }, extra: 1 }, goal)).toEqual({ met: true, unmet: [] });
    expect(checkGoal({ submitted: true, form: { n: 4 } }, goal)).toEqual({ met: false, unmet: ['form'] });
    expect(checkGoal(null, goal)).toEqual({ met: false, unmet: ['submitted', 'form'] });
  });

  it('reads refs, role-and-name pairs and bare names', () => {
    expect(parseElementSpec('e12')).toEqual({ ref: 'e12' });
    expect(parseElementSpec('[ref=e7]')).toEqual({ ref: 'e7' });
    expect(parseElementSpec('ref=f1e3')).toEqual({ ref: 'f1e3' });
    expect(parseElementSpec('- button "Place order" [ref=e26] [cursor=pointer]')).toEqual({ ref: 'e26' });
    expect(parseElementSpec('button "Place order"')).toEqual({ role: 'button', name: 'Place order' });
    expect(parseElementSpec('textbox "Say \\"hi\\""')).toEqual({ role: 'textbox', name: 'Say "hi"' });
    expect(parseElementSpec('"Gift wrap"')).toEqual({ name: 'Gift wrap' });
    expect(parseElementSpec('  Gift   wrap ')).toEqual({ name: 'Gift wrap' });
    expect(parseElementSpec('Tree e5 view')).toEqual({ name: 'Tree e5 view' });
  });
});

describe('gui settings', () => {
  it('validates settings and names the field', () => {
    expect(parseGuiSettings({ viewport: { width: 640, height: 480 }, maxSteps: 3 })).toEqual({
      viewport: { width: 640, height: 480 },
      maxSteps: 3,
    });
    expect(() => parseGuiSettings({ viewport: { width: 10, height: 480 } })).toThrow(/viewport\.width/);
    expect(() => parseGuiSettings({ maxSteps: 0 })).toThrow(ConfigError);
    expect(() => parseGuiSettings({ maxStep: 3 })).toThrow(/maxStep/);
    expect(() => guiTrack.createEnvironment(suite, { settings: { chromiumPath: 7 } })).toThrow(
      /chromiumPath/,
    );
    expect(() =>
      guiTrack.createEnvironment(suite, { split: 'heldout', settings: { maxParseErrors: -1 } }),
    ).toThrow(/maxParseErrors/);
    expect(() => new GuiEnvironment({ tasks: [] })).toThrow(ConfigError);
  });

  it('reports a missing browser as a ConfigError that says how to install one', async () => {
    await expect(launchChromium({ chromiumPath: '/nonexistent/chromium' })).rejects.toThrow(
      /apt-get install chromium.*chromiumPath/,
    );
    const env = guiTrack.createEnvironment(suite, { settings: { chromiumPath: '/nonexistent/chromium' } });
    await expect(env.reset()).rejects.toBeInstanceOf(ConfigError);
    await env.close();
  });
});

describe('gui task files', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'clawray-gui-tasks-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('round-trips the built-in suite through the on-disk format', async () => {
    const suiteDir = join(dir, 'suite');
    const file = await writeGuiSuite(suiteDir);
    expect(file).toBe(join(suiteDir, 'tasks.jsonl'));
    expect((await readFile(file, 'utf8')).trim().split('\n')).toHaveLength(suite.length);
    expect(await loadGuiTasks(suiteDir)).toEqual(suite);
    expect(await guiTrack.loadTasks(file)).toEqual(suite);
  });

  async function taskDir(name: string, lines: string[], pages: Record<string, string> = {}): Promise<string> {
    const d = join(dir, name);
    await mkdir(join(d, 'pages'), { recursive: true });
    for (const [path, html] of Object.entries(pages)) await writeFile(join(d, path), html);
    await writeFile(join(d, 'tasks.jsonl'), lines.join('\n'));
    return d;
  }

  const page = { 'pages/p.html': '<script>window.__taskState = { done: false };</script>' };
  const line = (extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      page: 'pages/p.html',
      instruction: 'Press it.',
      goal: { state: { done: true } },
      ...extra,
    });

  it('fills in ids, kinds and splits the way the built-in suite does', async () => {
    const d = await taskDir(
      'defaults',
      [line(), '', line({ id: 'custom-1', kind: 'form', split: 'heldout' })],
      page,
    );
    const [a, b] = await loadGuiTasks(d);
    expect(a).toMatchObject({
      kind: 'page',
      split: guiSplitOf('Press it.'),
      oracle: [],
      instruction: 'Press it.',
    });
    expect(a.id).toMatch(/^gui-page-[0-9a-f]{8}$/);
    expect(a.html).toBe(page['pages/p.html']);
    expect(b).toMatchObject({ id: 'custom-1', kind: 'form', split: 'heldout' });
  });

  it('names the file, line and field of a mistake', async () => {
    const cases: [string, string[], RegExp][] = [
      ['badjson', [line(), '{"page": '], /badjson\/tasks\.jsonl:2: not valid JSON/],
      ['nogoal', [JSON.stringify({ page: 'pages/p.html', instruction: 'x' })], /tasks\.jsonl:1: goal: /],
      [
        'emptygoal',
        [line({ goal: { state: {} } })],
        /:1: goal\.state: a goal must name at least one state key/,
      ],
      ['unknownkey', [line({ reward: 1 })], /:1: reward: /],
      ['badsplit', [line({ split: 'test' })], /:1: split: /],
      [
        'badoracle',
        [line({ oracle: [{ tool_calls: [{ id: 'c', type: 'function', function: { name: 'click' } }] }] })],
        /:1: oracle\.0\.tool_calls\.0\.function\.arguments: /,
      ],
      ['nopage', [line({ page: 'pages/missing.html' })], /:1: page: cannot read .*missing\.html \(ENOENT\)/],
      ['escape', [line({ page: '../defaults/pages/p.html' })], /:1: page: must be a relative path inside/],
      [
        'dup',
        [line({ id: 'same' }), line({ id: 'same' })],
        /:2: id: duplicate id 'same' \(first on line 1\)/,
      ],
      ['badid', [line({ id: '-x' })], /:1: id: /],
      ['empty', ['', '  '], /empty\/tasks\.jsonl: no tasks/],
    ];
    for (const [name, lines, pattern] of cases) {
      const d = await taskDir(name, lines, page);
      const err = await loadGuiTasks(d).catch((e: unknown) => e);
      expect(err, name).toBeInstanceOf(ConfigError);
      expect((err as Error).message, name).toMatch(pattern);
    }
    await expect(loadGuiTasks(join(dir, 'nowhere'))).rejects.toThrow(/nowhere: no such file or directory/);
    await mkdir(join(dir, 'nofile'));
    await expect(loadGuiTasks(join(dir, 'nofile'))).rejects.toThrow(
      /nofile\/tasks\.jsonl: cannot read it \(ENOENT\)/,
    );
  });
});
