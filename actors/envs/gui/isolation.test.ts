import { existsSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Action } from '../environment.js';
import { DO_NOTHING_ACTION } from '../track.js';
import { RefNumbering } from './accessibility.js';
import { launchChromium, resolveChromiumPath } from './browser.js';
import { GuiEnvironment } from './env.js';
import type { GuiTask } from './tasks.js';

const hasChromium = existsSync(resolveChromiumPath());

/** Leaves behind everything a page can: cookie, storage of each kind, a window, history entries. */
const LITTER = `<!doctype html><title>litter</title><p>litter</p><script>
  document.cookie = 'left=1; max-age=3600';
  localStorage.setItem('left', '1');
  sessionStorage.setItem('left', '1');
  indexedDB.open('left-db', 1).onupgradeneeded = (e) => e.target.result.createObjectStore('s');
  caches.open('left-cache').catch(() => {});
  history.pushState({}, '', location.pathname + '#2');
  history.pushState({}, '', location.pathname + '#3');
  if (!window.opener) window.open(location.pathname + '?popup');
  window.__taskState = { done: true };
</script>`;

/** Reports what a fresh page would see; its goal is a clean slate. */
const INSPECT = `<!doctype html><title>inspect</title><p>inspect</p><script>
  window.__taskState = { pending: true };
  (async () => {
    const dbs = await indexedDB.databases();
    const cacheNames = await caches.keys().catch(() => []);
    window.__taskState = {
      cookie: document.cookie,
      local: localStorage.length,
      session: sessionStorage.length,
      databases: dbs.length,
      caches: cacheNames.length,
    };
  })();
</script>`;

const CLEAN = { cookie: '', local: 0, session: 0, databases: 0, caches: 0 };

function task(id: string, html: string, goal: Record<string, unknown>): GuiTask {
  return {
    id,
    kind: 'page',
    split: 'train',
    instruction: `Look at ${id}.`,
    html,
    goal: { state: goal as GuiTask['goal']['state'] },
    oracle: [],
  };
}

const BUTTON = task(
  'button',
  `<!doctype html><title>button</title><div><button onclick="window.__taskState = { pressed: true }">Press</button></div>
   <script>window.__taskState = { pressed: false };</script>`,
  { pressed: true },
);

function press(ref: string): Action {
  return {
    content: null,
    tool_calls: [
      {
        id: 'call_0',
        type: 'function',
        function: { name: 'click', arguments: JSON.stringify({ element: ref }) },
      },
    ],
  };
}

const TASKS = [task('litter', LITTER, { done: true }), task('inspect', INSPECT, CLEAN)];

describe.skipIf(!hasChromium)('gui environment: what an episode inherits from the last one', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  async function inspectAfterLitter(env: GuiEnvironment): Promise<unknown> {
    await env.reset('litter');
    await expect.poll(() => env.page?.context().pages().length).toBe(2);
    expect((await env.step(DO_NOTHING_ACTION)).reward).toBe(1);
    await env.reset('inspect');
    await expect.poll(async () => (await env.evaluate()).info.state).not.toEqual({ pending: true });
    return (await env.evaluate()).info.state;
  }

  it.for(['context', 'page'] as const)(
    'isolation %s: nothing the last page left is visible',
    async (isolation) => {
      const env = new GuiEnvironment({ tasks: TASKS, browser, isolation, screenshots: false });
      try {
        expect(await inspectAfterLitter(env)).toEqual(CLEAN);
        expect(env.page?.context().pages()).toHaveLength(1);
        // And again: the second round starts from the cleared page, not from a new one.
        expect(await inspectAfterLitter(env)).toEqual(CLEAN);
        // The back button does not lead to the last episode's page.
        await env.page?.goBack();
        expect(env.page?.url()).not.toMatch(/litter/);
      } finally {
        await env.close();
      }
    },
  );

  it('isolation page: an episode on the kept page reads and acts as on a new page', async () => {
    const fresh = new GuiEnvironment({ tasks: [BUTTON], browser, screenshots: false });
    const kept = new GuiEnvironment({
      tasks: [BUTTON],
      browser,
      isolation: 'page',
      screenshots: false,
      maxSteps: 1,
    });
    try {
      const first = await fresh.reset('button');
      const ref = /button "Press" \[ref=(e\d+)\]/.exec(first.text)?.[1];
      expect(ref).toBeDefined();
      for (let round = 0; round < 3; round++) {
        expect((await kept.reset('button')).text).toBe(first.text);
        const pressed = await kept.step(press(ref!));
        expect(pressed.observation.text).toMatch(new RegExp(`^Clicked button "Press" \\[ref=${ref}\\]\\.`));
        expect(pressed.reward).toBe(1);
      }
      // A ref of another document than the episode's is refused, as it is on a new page.
      await kept.reset('button');
      const stale = await kept.step(press(`f1${ref}`));
      expect(stale.observation.text).toMatch(/no element \[ref=f1e\d+\]/);
      expect(stale.reward).toBe(-1);
    } finally {
      await fresh.close();
      await kept.close();
    }
  });

  it('isolation page keeps the page between episodes, and replaces one that is gone', async () => {
    const env = new GuiEnvironment({ tasks: TASKS, browser, isolation: 'page', screenshots: false });
    try {
      await env.reset('inspect');
      const first = env.page;
      await env.reset('inspect');
      expect(env.page).toBe(first);
      await first?.close();
      await env.reset('inspect');
      expect(env.page).not.toBe(first);
      expect(env.page?.isClosed()).toBe(false);
      await expect.poll(async () => (await env.evaluate()).reward).toBe(1);
    } finally {
      await env.close();
    }
  });

  it('isolation page: a page that hung or left the task server is replaced by a new context', async () => {
    const HUNG = task(
      'hung',
      `<!doctype html><title>hung</title><script>setTimeout(() => { for (;;) {} }, 50);</script>`,
      { done: true },
    );
    const AWAY = task(
      'away',
      `<!doctype html><title>away</title><script>setTimeout(() => { location.href = 'about:blank'; }, 0);</script>`,
      { done: true },
    );
    const env = new GuiEnvironment({
      tasks: [HUNG, AWAY, ...TASKS],
      browser,
      isolation: 'page',
      screenshots: false,
      readTimeoutMs: 1_000,
    });
    try {
      for (const id of ['hung', 'away']) {
        await env.reset(id);
        const before = env.page;
        if (id === 'away') await expect.poll(() => env.page?.url()).toBe('about:blank');
        expect((await env.step(DO_NOTHING_ACTION)).reward).toBe(-1);
        await env.reset('inspect');
        expect(env.page).not.toBe(before);
        await expect.poll(async () => (await env.evaluate()).info.state).toEqual(CLEAN);
      }
    } finally {
      await env.close();
    }
  });

  it('refuses an isolation it does not know, by name', () => {
    expect(() => new GuiEnvironment({ tasks: TASKS, isolation: 'tab' as 'page' })).toThrow(/isolation/);
  });
});

describe('RefNumbering', () => {
  it("counts documents from the episode's first", () => {
    const refs = new RefNumbering();
    expect(refs.toPage('e2')).toBe('e2');
    expect(refs.toAgent('- textbox "Width" [ref=f2e2]\n- paragraph [ref=f3e4]: "[ref=e9]"')).toBe(
      '- textbox "Width" [ref=e2]\n- paragraph [ref=f1e4]: "[ref=e9]"',
    );
    expect(refs.toPage('e2')).toBe('f2e2');
    expect(refs.toPage('f1e4')).toBe('f3e4');
    expect(refs.toPage('Width')).toBe('Width');
    expect(refs.agentRef('f3e4')).toBe('f1e4');
    refs.reset();
    expect(refs.toAgent('[ref=e1]')).toBe('[ref=e1]');
    expect(refs.toPage('f1e1')).toBe('f1e1');
  });
});
