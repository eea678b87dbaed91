/**
 * The task directory of examples/gui/rl.yaml: the shipped files are what make-tasks.mjs writes, the
 * track's loader reads them with the splits the example's claims rest on (clean demonstrations of
 * "Set the width/height", half-wrong demonstrations of "Make it wider/taller", held-out tasks of
 * the RL phrasings only), and in the real environment, with the example's settings, a clean
 * demonstration scores +1, the unreliable demonstrator's wrong field −1 and doing nothing −1.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveChromiumPath } from '../../actors/envs/gui/browser.js';
import { GuiEnvironment } from '../../actors/envs/gui/env.js';
import { loadGuiTasks } from '../../actors/envs/gui/task-file.js';
import { DO_NOTHING_ACTION } from '../../actors/envs/track.js';
import { packageRoot } from '../../common/package-root.js';
import { loadManifest } from '../../jobs/manifest/load.js';

const here = join(packageRoot(), 'examples', 'gui');
const dir = mkdtempSync(join(tmpdir(), 'clawray-gui-tasks-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const fieldOf = (arguments_: string) => (JSON.parse(arguments_) as { element: string }).element;

describe('examples/gui/make-tasks.mjs', () => {
  it('writes the shipped task directory, deterministically', () => {
    const out = join(dir, 'tasks');
    execFileSync(process.execPath, [join(here, 'make-tasks.mjs'), '--out', out]);
    const files = ['tasks.jsonl', ...readdirSync(join(here, 'tasks', 'pages')).map((f) => `pages/${f}`)];
    expect(readdirSync(join(out, 'pages')).length).toBe(files.length - 1);
    for (const file of files) {
      expect(readFileSync(join(out, file), 'utf8')).toBe(readFileSync(join(here, 'tasks', file), 'utf8'));
    }
  });

  it('demonstrates width and height cleanly, wider and taller in both fields, and holds out only RL tasks', async () => {
    const tasks = await loadGuiTasks(join(here, 'tasks'));
    const demos = tasks.filter((t) => t.oracle.length > 0);
    const rl = tasks.filter((t) => t.oracle.length === 0);
    expect(demos.every((t) => t.split === 'train' && t.oracle.length === 1)).toBe(true);
    expect(new Set(rl.map((t) => t.kind))).toEqual(new Set(['wider', 'taller']));
    const heldout = tasks.filter((t) => t.split === 'heldout');
    expect(heldout.length).toBeGreaterThanOrEqual(30);
    expect(heldout.every((t) => t.oracle.length === 0)).toBe(true);
    // Every instruction ends in " to NNN." (the copy sits at a fixed distance from the prompt's end).
    expect(tasks.every((t) => / to \d{3}\.$/.test(t.instruction))).toBe(true);
    const right = { width: 'Width', height: 'Height', wider: 'Width', taller: 'Height' } as const;
    const demoField = (t: (typeof demos)[number]) =>
      fieldOf(t.oracle[0].tool_calls![0].function.arguments) === right[t.kind as keyof typeof right];
    expect(demos.filter((t) => t.kind === 'width' || t.kind === 'height').every(demoField)).toBe(true);
    for (const kind of ['wider', 'taller']) {
      const noisy = demos.filter((t) => t.kind === kind);
      expect(noisy.length).toBeGreaterThan(0);
      expect(noisy.filter(demoField).length * 2).toBe(noisy.length);
      // Each of its requests twice, typed once into each field: no number predicts the field.
      const fields = new Map<string, string[]>();
      for (const t of noisy) {
        const field = fieldOf(t.oracle[0].tool_calls![0].function.arguments);
        fields.set(t.instruction, [...(fields.get(t.instruction) ?? []), field]);
      }
      expect([...fields.values()].every((f) => f.sort().join() === 'Height,Width')).toBe(true);
    }
  });

  it.skipIf(!existsSync(resolveChromiumPath()))(
    "scores demonstrations in the real environment with the example's settings",
    async () => {
      const manifest = await loadManifest(join(here, 'rl.yaml'));
      const tasks = await loadGuiTasks(join(here, 'tasks'));
      const env = new GuiEnvironment({ tasks, ...(manifest.spec.env!.settings as object) });
      try {
        const pick = (kind: string, good: boolean) =>
          tasks.find(
            (t) =>
              t.kind === kind &&
              t.oracle.length > 0 &&
              (fieldOf(t.oracle[0].tool_calls![0].function.arguments) ===
                (kind === 'width' || kind === 'wider' ? 'Width' : 'Height')) ===
                good,
          )!;
        // One turn: the environment's step limit (maxSteps 1) ends the episode and scores the page.
        for (const [task, reward] of [
          [pick('width', true), 1],
          [pick('height', true), 1],
          [pick('taller', false), -1],
        ] as const) {
          await env.reset(task.id);
          const r = await env.step(task.oracle[0]);
          expect({ id: task.id, done: r.done, reward: r.reward }).toEqual({
            id: task.id,
            done: true,
            reward,
          });
        }
        await env.reset(pick('wider', true).id);
        expect((await env.step(DO_NOTHING_ACTION)).reward).toBe(-1);
      } finally {
        await env.close();
      }
    },
  );
});
