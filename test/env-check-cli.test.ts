import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildTaskSuite } from '../actors/envs/toolcall/tasks.js';
import { distEntry } from '../common/package-root.js';

function clawray(args: string[]) {
  const result = spawnSync(process.execPath, [distEntry('cli/main'), ...args], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('clawray env check', () => {
  const dir = mkdtempSync(join(tmpdir(), 'clawray-env-check-cli-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('validates the held-out toolcall suite and prints one JSON object', () => {
    const r = clawray(['env', 'check', 'toolcall', '--split', 'heldout', '--json', '--parallel', '2']);
    expect(r.stderr).toMatch(/checking toolcall \d+\/\d+/);
    expect(r.code).toBe(0);
    const summary = JSON.parse(r.stdout);
    const heldout = buildTaskSuite().filter((t) => t.split === 'heldout');
    expect(summary).toMatchObject({
      track: 'toolcall',
      tasks: heldout.length,
      ok: heldout.length,
      failed: 0,
    });
    expect(summary.results.map((x: { taskId: string }) => x.taskId)).toEqual(heldout.map((t) => t.id));
  });

  it('prints the table and exits 1 when a task is broken', () => {
    const [good] = buildTaskSuite().filter((t) => t.kind === 'arithmetic');
    const file = join(dir, 'tasks.jsonl');
    writeFileSync(
      file,
      `${[
        { id: 'good', question: good.question, answer: good.answer, oracle: good.oracle },
        { id: 'wrong', question: good.question, answer: '-1', oracle: good.oracle },
        { id: 'bare', question: 'What is 2+2?', answer: '4' },
      ]
        .map((t) => JSON.stringify(t))
        .join('\n')}\n`,
    );
    const r = clawray(['env', 'check', 'toolcall', '--tasks', file]);
    expect(r.code).toBe(1);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^TASK\s+SPLIT\s+ORACLE\s+NOTHING\s+CHECK$/);
    expect(lines[1]).toMatch(/^good\s+\w+\s+1\s+-1\s+ok$/);
    expect(lines[2]).toMatch(/^wrong\s+\w+\s+-1\s+-1\s+FAILED: oracle reward -1, expected 1$/);
    expect(lines[3]).toMatch(/^bare\s+\w+\s+-\s+-1\s+FAILED: no oracle$/);
    expect(lines[4]).toMatch(/^3 tasks \(train \d, heldout \d\): 1 ok, 2 failed$/);
  });

  it('reports mistakes in one line with exit status 2', () => {
    const bad = join(dir, 'bad.jsonl');
    writeFileSync(bad, '{"question": "q", "answer": 1, "colour": "red"}\n');
    for (const [args, message] of [
      [
        ['env', 'check', 'chess'],
        /^clawray: unknown track 'chess'; the tracks are toolcall, terminal, swe, gui\n$/,
      ],
      [['env', 'check', 'toolcall', '--tasks', bad], /^clawray: .*bad\.jsonl:1: .*colour/],
      [
        ['env', 'check', 'toolcall', '--split', 'test'],
        /^clawray: --split expects train or heldout, got 'test'\n$/,
      ],
    ] as const) {
      const r = clawray([...args]);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(r.code).toBe(2);
    }
  });
});
