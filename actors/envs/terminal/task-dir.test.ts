import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../common/errors.js';
import { buildTerminalSuite } from './suite.js';
import { fnv1a, oracleFor, splitOfHash, type TerminalTask } from './task.js';
import { loadTerminalTasks, writeTerminalTask, writeTerminalTasks } from './task-dir.js';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'clawray-terminal-dir-test-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function taskDir(name: string, files: Record<string, string | Buffer>): Promise<string> {
  const dir = join(root, name);
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(join(dir, rel, '..'), { recursive: true });
    await writeFile(join(dir, rel), content);
  }
  return dir;
}

async function loadError(path: string): Promise<ConfigError> {
  const err = await loadTerminalTasks(path).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConfigError);
  return err as ConfigError;
}

describe('terminal task directories', () => {
  it('round-trips the built-in suite: write, load, equal', async () => {
    const suite = buildTerminalSuite();
    const dir = join(root, 'builtin');
    await writeTerminalTasks(suite, dir);
    const loaded = await loadTerminalTasks(dir);
    const byId = (ts: TerminalTask[]) => [...ts].sort((a, b) => (a.id < b.id ? -1 : 1));
    expect(byId(loaded)).toEqual(byId(suite));
    // One task directory, or its task.yaml, loads alone.
    const one = suite[0];
    expect(await loadTerminalTasks(join(dir, one.id))).toEqual([one]);
    expect(await loadTerminalTasks(join(dir, one.id, 'task.yaml'))).toEqual([one]);
    const yaml = await readFile(join(dir, one.id, 'task.yaml'), 'utf8');
    expect(yaml).toMatch(/^instruction: \|-\n {2}\S/);
    expect(yaml).toContain(`split: ${one.split}\n`);
    await expect(writeTerminalTask(one, join(dir, one.id))).rejects.toThrow(/not empty/);
  });

  it('loads a terminal-bench style task, ignoring its docker files and metadata', async () => {
    const dir = await taskDir('hello-world', {
      'task.yaml':
        'instruction: |\n  Write hello.\nauthor_name: someone\ndifficulty: easy\ntags: [a, b]\n' +
        'parser_name: pytest\nmax_agent_timeout_sec: 360.0\nmax_test_timeout_sec: 60.0\nsplit:\n',
      Dockerfile: 'FROM ubuntu\n',
      'docker-compose.yaml': 'services: {}\n',
      'run-tests.sh': '#!/bin/bash\npytest $TEST_DIR/test_outputs.py -rA\n',
      'solution.sh': 'echo hello > hello.txt\n',
      'tests/test_outputs.py': 'def test_hello():\n    pass\n',
      'tests/data/blob.bin': Buffer.from([0xff, 0x00, 0xfe]),
    });
    const [task] = await loadTerminalTasks(dir);
    expect(task).toEqual({
      id: 'hello-world',
      split: splitOfHash(fnv1a('hello-world')),
      oracle: oracleFor('echo hello > hello.txt\n'),
      instruction: 'Write hello.\n',
      runTests: '#!/bin/bash\npytest $TEST_DIR/test_outputs.py -rA\n',
      solution: 'echo hello > hello.txt\n',
      testFiles: {
        'test_outputs.py': 'def test_hello():\n    pass\n',
        'data/blob.bin': new Uint8Array([0xff, 0x00, 0xfe]),
      },
      agentTimeoutSec: 360,
      testTimeoutSec: 60,
    });
    expect(task.setup).toBeUndefined();
    expect(task.oracle[0].tool_calls?.[0].function.name).toBe('shell_exec');
  });

  it('reads a suite of task directories, skipping files and dot-directories', async () => {
    const suiteDir = join(root, 'suite');
    await taskDir('suite/b-task', {
      'task.yaml': 'instruction: B\nsplit: heldout\n',
      'run-tests.sh': 'true\n',
    });
    await taskDir('suite/a-task', {
      'task.yaml': 'instruction: A\n',
      'run-tests.sh': 'true\n',
      'setup.sh': 'x\n',
    });
    await taskDir('suite/.git', { HEAD: 'ref\n' });
    await writeFile(join(suiteDir, 'README.md'), 'tasks\n');
    await symlink(join(suiteDir, 'a-task'), join(suiteDir, 'c-link'));
    const tasks = await loadTerminalTasks(suiteDir);
    expect(tasks.map((t) => [t.id, t.split, t.setup, t.oracle])).toEqual([
      ['a-task', splitOfHash(fnv1a('a-task')), 'x\n', []],
      ['b-task', 'heldout', undefined, []],
      ['c-link', splitOfHash(fnv1a('c-link')), 'x\n', []],
    ]);
  });

  it('names the file and the field of every mistake', async () => {
    const base = { 'run-tests.sh': 'true\n' };
    let err = await loadError(await taskDir('no-instruction', { ...base, 'task.yaml': 'author: x\n' }));
    expect(err.message).toMatch(/no-instruction\/task\.yaml: instruction: /);
    expect(err.fields.file).toMatch(/no-instruction\/task\.yaml$/);

    err = await loadError(
      await taskDir('bad-split', { ...base, 'task.yaml': 'instruction: x\nsplit: test\n' }),
    );
    expect(err.message).toMatch(/bad-split\/task\.yaml: split: /);

    err = await loadError(
      await taskDir('bad-timeout', { ...base, 'task.yaml': 'instruction: x\nmax_test_timeout_sec: soon\n' }),
    );
    expect(err.message).toMatch(/bad-timeout\/task\.yaml: max_test_timeout_sec: /);

    err = await loadError(
      await taskDir('bad-parser', { ...base, 'task.yaml': 'instruction: x\nparser_name: swebench\n' }),
    );
    expect(err.message).toMatch(/bad-parser\/task\.yaml: parser_name: /);

    err = await loadError(
      await taskDir('bad-names', { ...base, 'task.yaml': 'instruction: x\ntest_names: []\n' }),
    );
    expect(err.message).toMatch(/bad-names\/task\.yaml: test_names: /);

    err = await loadError(await taskDir('blank', { ...base, 'task.yaml': 'instruction: "  "\n' }));
    expect(err.message).toMatch(/blank\/task\.yaml: instruction: must not be blank/);

    err = await loadError(
      await taskDir('bad-yaml', { ...base, 'task.yaml': 'instruction: x\n  oops: [1\n' }),
    );
    expect(err.message).toMatch(/bad-yaml\/task\.yaml:1:14: Nested mappings/);
    expect(err.fields.line).toBe(1);

    err = await loadError(await taskDir('list-yaml', { ...base, 'task.yaml': '- instruction: x\n' }));
    expect(err.message).toMatch(/list-yaml\/task\.yaml: expected a mapping/);

    err = await loadError(await taskDir('no-tests', { 'task.yaml': 'instruction: x\n' }));
    expect(err.message).toMatch(/no-tests\/run-tests\.sh: missing/);

    err = await loadError(await taskDir('bad id!', { ...base, 'task.yaml': 'instruction: x\n' }));
    expect(err.message).toMatch(/bad id!: the directory name is the task id/);

    await mkdir(join(root, 'suite-with-stray', 'stray'), { recursive: true });
    err = await loadError(join(root, 'suite-with-stray'));
    expect(err.message).toMatch(/stray\/task\.yaml: missing/);

    err = await loadError(join(root, 'nowhere'));
    expect(err.message).toMatch(/nowhere: no such file or directory/);

    await mkdir(join(root, 'empty-suite'), { recursive: true });
    err = await loadError(join(root, 'empty-suite'));
    expect(err.message).toMatch(/empty-suite: no task directories/);
  });
});
