import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DO_NOTHING_ACTION } from '../track.js';
import { launchChromium, resolveChromiumPath } from './browser.js';
import { GuiEnvironment } from './env.js';
import { guiTrack } from './index.js';
import { writeGuiSuite } from './task-file.js';
import { buildGuiSuite } from './tasks.js';

const hasChromium = existsSync(resolveChromiumPath());
const suite = buildGuiSuite();

/** Episodes wait mostly on the browser, so a few environments sharing one browser run side by side. */
const PARALLEL_EPISODES = 3;

describe.skipIf(!hasChromium)('gui environment: oracles and the do-nothing agent', () => {
  let browser: Browser;
  const idle: GuiEnvironment[] = [];
  const waiting: ((env: GuiEnvironment) => void)[] = [];
  const all: GuiEnvironment[] = [];
  async function withEnv<T>(fn: (env: GuiEnvironment) => Promise<T>): Promise<T> {
    const env = idle.pop() ?? (await new Promise<GuiEnvironment>((resolve) => waiting.push(resolve)));
    try {
      return await fn(env);
    } finally {
      const next = waiting.shift();
      if (next) next(env);
      else idle.push(env);
    }
  }
  beforeAll(async () => {
    browser = await launchChromium();
    // Each environment keeps its page (isolation 'page'), so every kind of task also runs on a
    // page the previous episode used; the loaded-tasks test below opens a context per episode.
    for (let i = 0; i < PARALLEL_EPISODES; i++) {
      all.push(new GuiEnvironment({ tasks: suite, browser, isolation: 'page' }));
    }
    idle.push(...all);
  });
  afterAll(async () => {
    for (const env of all) await env.close();
    await browser?.close();
  });

  it.concurrent.for(suite.map((t) => [t.id, t.kind] as const))(
    '%s (%s): do-nothing gets −1, the oracle +1',
    async ([id], { expect }) => {
      const task = suite.find((t) => t.id === id)!;
      await withEnv(async (env) => {
        const first = await env.reset(id);
        expect(first.messages.map((m) => m.role)).toEqual(['system', 'user']);
        expect(first.text).toContain(task.instruction);
        const idleRun = await env.step(DO_NOTHING_ACTION);
        expect(idleRun).toMatchObject({
          reward: -1,
          done: true,
          info: { goalMet: false, endReason: 'answered' },
        });

        await env.reset(id);
        let last: Awaited<ReturnType<GuiEnvironment['step']>> | undefined;
        for (const [i, action] of task.oracle.entries()) {
          last = await env.step(action);
          expect(last.done).toBe(i === task.oracle.length - 1);
          if (!last.done) {
            expect(last.reward).toBe(0);
            // Every action really happened: no tool call was answered with an error.
            const answers = last.observation.messages.slice(-action.tool_calls!.length);
            for (const m of answers) expect(m.content).not.toMatch(/^Error/);
          }
        }
        expect(last!.reward).toBe(1);
        expect(last!.info).toMatchObject({
          goalMet: true,
          unmet: [],
          malformedToolCalls: 0,
          actionErrors: 0,
          truncated: false,
          endReason: 'answered',
        });
      });
    },
  );
});

describe.skipIf(!hasChromium)('gui track: loaded tasks', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'clawray-gui-env-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('runs tasks loaded from disk through the track, with its own browser, split and settings', async () => {
    await writeGuiSuite(dir, suite);
    const tasks = await guiTrack.loadTasks(dir);
    const env = guiTrack.createEnvironment(tasks, {
      split: 'heldout',
      seed: 3,
      settings: { viewport: { width: 800, height: 600 }, actionTimeoutMs: 3000 },
    });
    try {
      // reset() without an id draws from the held-out split only.
      const seen = new Set<string>();
      const heldout = tasks.filter((t) => t.split === 'heldout');
      for (let i = 0; i < heldout.length; i++) {
        const obs = await env.reset();
        const task = heldout.find((t) => obs.text.startsWith(t.instruction));
        expect(task).toBeDefined();
        seen.add(task!.id);
      }
      expect(seen.size).toBe(heldout.length);
      const task = heldout[0];
      await env.reset(task.id);
      let reward = 0;
      for (const action of task.oracle) reward = (await env.step(action)).reward;
      expect(reward).toBe(1);
    } finally {
      await env.close();
    }
  });
});
