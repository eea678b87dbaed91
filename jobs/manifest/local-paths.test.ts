import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { loadManifest } from './load.js';
import { checkLocalPaths, localPaths, makerOf, makeScripts, missingLocalPaths } from './local-paths.js';

const root = mkdtempSync(join(tmpdir(), 'clawray-local-paths-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A folder holding `files` and a manifest `job.yaml` of `spec` (YAML lines under spec:). */
function jobDir(name: string, spec: string[], files: Record<string, string> = {}): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(join(dir, file, '..'), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  writeFileSync(
    join(dir, 'job.yaml'),
    [
      'apiVersion: clawray.dev/v1',
      'kind: RLJob',
      'metadata: { name: j }',
      'spec:',
      ...spec.map((l) => `  ${l}`),
      '',
    ].join('\n'),
  );
  return dir;
}

const MAKE_TASKS = '#!/usr/bin/env node\n/**\n * Writes ./tasks.\n * @writes ./tasks\n */\nconsole.log(1);\n';

/** The ConfigError `checkLocalPaths` throws for the job in `dir`, or undefined. */
async function refusal(dir: string, o: { workingDir?: string; cwd?: string; set?: string[] } = {}) {
  const file = join(dir, 'job.yaml');
  const m = await loadManifest(file, { set: o.set ?? [] });
  try {
    checkLocalPaths(m, { file, workingDir: o.workingDir ?? dir, cwd: o.cwd ?? root });
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
}

describe('checkLocalPaths', () => {
  it('refuses a missing ./tasks in one line naming the field, the path and the make command', async () => {
    const dir = jobDir(
      'terminal',
      [
        'track: terminal',
        'method: rl',
        'model: { path: ./model, init: { preset: tiny } }',
        'env: { tasks: ./tasks }',
      ],
      {
        'make-tasks.mjs': MAKE_TASKS,
      },
    );
    const err = await refusal(dir);
    expect(err?.message).toBe(
      `${join(dir, 'job.yaml')}:8:17: spec.env.tasks ./tasks does not exist; make it with: node terminal/make-tasks.mjs`,
    );
    expect(err?.message).not.toContain('\n');
    expect(err?.fields).toMatchObject({
      field: 'spec.env.tasks',
      path: join(dir, 'tasks'),
      make: join(dir, 'make-tasks.mjs'),
    });
    // Made: nothing to say.
    mkdirSync(join(dir, 'tasks'));
    expect(await refusal(dir)).toBeUndefined();
  });

  it('refuses a missing model.path without init, naming the base script; with init a missing path is fine', async () => {
    const dir = jobDir(
      'personal',
      [
        'track: personal',
        'method: opd',
        'model: { path: ./base }',
        'user: { preference: name:Sam }',
        'judge: { backend: reaction }',
      ],
      {
        'make-base.mjs': '/**\n * Builds the base.\n * @writes ./base\n */\n',
        'make-other.mjs': '// @writes ./elsewhere\n',
      },
    );
    expect((await refusal(dir))?.message).toMatch(
      /job\.yaml:\d+:\d+: spec\.model\.path \.\/base does not exist; make it with: node personal\/make-base\.mjs$/,
    );
    // A --set override is named as such.
    expect((await refusal(dir, { set: ['spec.model.path=./other'] }))?.message).toBe(
      `${join(dir, 'job.yaml')} (--set spec.model.path=./other): spec.model.path ./other does not exist`,
    );
    expect(await refusal(dir, { set: ['spec.model.init={ preset: tiny }'] })).toBeUndefined();
  });

  it('resolves in the working dir the job runs in, and lists every other missing path on the same line', async () => {
    const dir = jobDir(
      'wd/jobs',
      [
        'track: toolcall',
        'method: rl',
        'model: { path: ./model, chatTemplate: ./template.jinja }',
        'env: { tasks: ./tasks.jsonl }',
        'plugins: { reward: ./plugins/reward.js#score }',
      ],
      { 'model/config.json': '{}', 'tasks.jsonl': '' },
    );
    const wd = join(root, 'wd');
    const err = await refusal(dir, { workingDir: wd });
    // Relative to the working dir, not the manifest's folder: ./model is not in wd.
    expect(err?.message).toMatch(
      new RegExp(
        `^.*job\\.yaml:\\d+:\\d+: spec\\.model\\.path \\./model does not exist in the working dir ${wd}; also missing: spec\\.model\\.chatTemplate \\./template\\.jinja, spec\\.env\\.tasks \\./tasks\\.jsonl, spec\\.plugins\\.reward \\./plugins/reward\\.js#score$`,
      ),
    );
    // In the manifest's own folder only the template and the plugin are missing.
    expect(missingLocalPaths(await loadManifest(join(dir, 'job.yaml')), dir).map((p) => p.field)).toEqual([
      'spec.model.chatTemplate',
      'spec.plugins.reward',
    ]);
  });

  it('checks no builtin, URI or absolute value, nor a judge model that is a name at an endpoint', async () => {
    const dir = jobDir('remote', [
      'track: toolcall',
      'method: rl',
      `model: { path: ${join(root, 'nowhere')}, chatTemplate: 'builtin:compact-tools' }`,
      'env: { tasks: builtin }',
      'judge: { backend: llm, baseURL: http://127.0.0.1:1/v1, model: some/hub-model }',
    ]);
    const m = await loadManifest(join(dir, 'job.yaml'));
    expect(localPaths(m, dir)).toEqual([]);
    expect(await refusal(dir)).toBeUndefined();
    // In-job judge engines serve judge.model from disk; an onnx-prm classifier too.
    const judged = jobDir('judged', [
      'track: toolcall',
      'method: rl',
      'model: { path: ./m, init: { preset: tiny } }',
      'judge: { backend: onnx-prm, model: ./prm }',
    ]);
    expect((await refusal(judged))?.message).toMatch(/spec\.judge\.model \.\/prm does not exist$/);
  });
});

describe('make scripts', () => {
  it('declare what they write with @writes lines, relative to themselves', () => {
    const dir = join(root, 'scripts');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'make-two.mjs'), '/**\n * @writes ./tasks.jsonl ./repo\n */\n');
    writeFileSync(join(dir, 'make-none.mjs'), '// writes nothing it says\n');
    writeFileSync(join(dir, 'other.mjs'), '// @writes ./ignored\n');
    const scripts = makeScripts(dir);
    expect(scripts).toEqual([
      { script: join(dir, 'make-none.mjs'), writes: [] },
      { script: join(dir, 'make-two.mjs'), writes: [join(dir, 'tasks.jsonl'), join(dir, 'repo')] },
    ]);
    // The path itself, a file inside what it writes, or a folder it writes into.
    expect(makerOf(join(dir, 'repo'), scripts)).toBe(join(dir, 'make-two.mjs'));
    expect(makerOf(join(dir, 'repo', 'min'), scripts)).toBe(join(dir, 'make-two.mjs'));
    expect(makerOf(join(dir, 'repository'), scripts)).toBeUndefined();
    expect(makeScripts(join(root, 'no-such-dir'))).toEqual([]);
  });

  it("the examples' make scripts say what their manifests need", () => {
    const examples = resolve(import.meta.dirname, '../../examples');
    const maker = (dir: string, path: string) =>
      makerOf(join(examples, dir, path), makeScripts(join(examples, dir)));
    expect(maker('terminal', 'tasks')).toBe(join(examples, 'terminal', 'make-tasks.mjs'));
    expect(maker('personal', 'base')).toBe(join(examples, 'personal', 'make-base.mjs'));
    expect(maker('gui', 'tasks')).toBe(join(examples, 'gui', 'make-tasks.mjs'));
    expect(maker('swe', 'repo')).toBe(join(examples, 'swe', 'make-tasks.mjs'));
    expect(maker('toolcall', 'verb-tasks.jsonl')).toBe(join(examples, 'toolcall', 'make-verb-tasks.mjs'));
    expect(maker('toolcall', 'tasks.jsonl')).toBe(join(examples, 'toolcall', 'make-tasks.mjs'));
  });
});
