import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Action, Observation, ToolCall } from '../environment.js';
import { DO_NOTHING_ACTION } from '../track.js';
import { launchChromium, resolveChromiumPath } from './browser.js';
import { GuiEnvironment, type GuiEnvOptions } from './env.js';
import { buildGuiSuite, type GuiTask } from './tasks.js';

const hasChromium = existsSync(resolveChromiumPath());
const suite = buildGuiSuite();

function page(id: string, body: string, goal: Record<string, unknown>): GuiTask {
  return {
    id,
    split: 'train',
    kind: 'test',
    instruction: `Test page ${id}.`,
    html: `<!doctype html><html><head><title>${id}</title><style>body { margin: 0; }</style></head><body>${body}</body></html>`,
    goal: { state: goal as GuiTask['goal']['state'] },
    oracle: [],
  };
}

const BUTTONS = page(
  'buttons',
  `<button id="b" style="position: absolute; left: 300px; top: 200px; width: 100px; height: 40px">Press me</button>
<button id="o1">OK</button><button id="o2">OK</button><button id="al">Alert</button>
<script>
const s = window.__taskState = { clicks: [] };
document.getElementById('b').addEventListener('click', (e) => s.clicks.push([e.clientX, e.clientY]));
document.getElementById('al').addEventListener('click', () => alert('Hello there'));
</script>`,
  { clicks: [[350, 220]] },
);

const KEYS = page(
  'keys',
  `<form id="f"><label>Name <input id="n" type="text"></label></form>
<select aria-label="Size" id="size"><option>Small</option><option>Medium</option><option>Large</option></select>
<script>
const s = window.__taskState = { keys: [], submitted: null, size: 'Small' };
document.getElementById('size').addEventListener('change', (e) => { s.size = e.target.value; });
const n = document.getElementById('n');
n.addEventListener('keydown', (e) => s.keys.push(e.key));
document.getElementById('f').addEventListener('submit', (e) => { e.preventDefault(); s.submitted = n.value; });
</script>`,
  { submitted: 'Ada L' },
);

const SCROLL = page(
  'scroll',
  `<div style="height: 3000px; background: linear-gradient(#fff, #036)">tall</div>
<script>
const s = window.__taskState = { scrollY: 0 };
window.addEventListener('scroll', () => { s.scrollY = Math.round(window.scrollY); });
</script>`,
  { scrollY: 700 },
);

const READY = page('ready', '<p>Ready.</p><script>window.__taskState = { ready: true };</script>', {
  ready: true,
});

function call(name: string, args: unknown, id = 'c1'): ToolCall {
  return {
    id,
    type: 'function',
    function: { name, arguments: typeof args === 'string' ? args : JSON.stringify(args) },
  };
}

function act(...calls: ToolCall[]): Action {
  return {
    content: null,
    tool_calls: calls.map((c, i) => ({ ...c, id: c.id === 'c1' ? `c${i + 1}` : c.id })),
  };
}

/** The tool answers of the last turn. */
function answers(obs: Observation, n: number): string[] {
  return obs.messages.slice(-n).map((m) => m.content ?? '');
}

function refOf(text: string, role: string, name: string): string {
  const line = text.split('\n').find((l) => l.includes(`${role} ${JSON.stringify(name)}`));
  const ref = line && /\[ref=(e\d+)\]/.exec(line);
  if (!ref) throw new Error(`no ${role} "${name}" in:\n${text}`);
  return ref[1];
}

function pngSize(png: Uint8Array): { width: number; height: number } {
  const b = Buffer.from(png);
  expect([...b.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  expect(b.subarray(12, 16).toString('latin1')).toBe('IHDR');
  return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
}

interface Proc {
  pid: number;
  ppid: number;
  state: string;
  comm: string;
}

function processes(): Proc[] {
  const out: Proc[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const m = /^(\d+) \((.*)\) (\S) (\d+)/.exec(readFileSync(`/proc/${d}/stat`, 'utf8'));
      if (m) out.push({ pid: Number(m[1]), comm: m[2], state: m[3], ppid: Number(m[4]) });
    } catch {
      // The process ended while the table was read.
    }
  }
  return out;
}

function environ(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  } catch {
    return [];
  }
}

function descendants(root: number): Proc[] {
  const all = processes();
  const found: Proc[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const parent = queue.shift()!;
    for (const p of all) {
      if (p.ppid === parent) {
        found.push(p);
        queue.push(p.pid);
      }
    }
  }
  return found;
}

describe.skipIf(!hasChromium)('gui environment: actions, observations and limits', () => {
  let browser: Browser;
  const envs: GuiEnvironment[] = [];
  const make = (options: GuiEnvOptions = {}) => {
    const env = new GuiEnvironment({ tasks: [...suite, BUTTONS, KEYS, SCROLL, READY], browser, ...options });
    envs.push(env);
    return env;
  };
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    for (const env of envs) await env.close();
    await browser?.close();
  });

  it('clicks by coordinates and by ref, and evaluates mid-episode', async () => {
    const env = make();
    const first = await env.reset('buttons');
    expect((await env.evaluate()).reward).toBe(-1);
    let r = await env.step(act(call('click', { x: 10, y: 590 })));
    expect(answers(r.observation, 1)[0]).toMatch(/^Clicked at \(10, 590\)\./);
    expect((await env.evaluate()).info.state).toEqual({ clicks: [] });
    r = await env.step(act(call('click', { x: 350, y: 220 })));
    const mid = await env.evaluate();
    expect(mid).toMatchObject({ reward: 1, info: { goalMet: true, state: { clicks: [[350, 220]] } } });
    expect(r.done).toBe(false);
    // A second click by ref (from the tree the agent saw) changes the state past the goal.
    const ref = refOf(first.text, 'button', 'Press me');
    r = await env.step(act(call('click', { element: ref })));
    expect(answers(r.observation, 1)[0]).toMatch(
      new RegExp(`^Clicked button "Press me" \\[ref=${ref}\\]\\.`),
    );
    expect((await env.evaluate()).reward).toBe(-1);
    const end = await env.step(DO_NOTHING_ACTION);
    expect(end).toMatchObject({ reward: -1, done: true });
    expect((await env.evaluate()).reward).toBe(-1);
    await expect(env.step(DO_NOTHING_ACTION)).rejects.toThrow(/after the episode ended/);
  });

  it('types into fields, presses keys and scrolls', async () => {
    const env = make();
    await env.reset('keys');
    let r = await env.step(
      act(
        call('type', { element: 'textbox "Name"', text: 'Ada X' }),
        call('key', { key: 'Backspace' }),
        call('type', { text: 'L' }),
      ),
    );
    expect(answers(r.observation, 3)[0]).toMatch(/^Typed "Ada X" into textbox "Name" \[ref=e\d+\]\./);
    expect(r.observation.text).toContain('textbox "Name"');
    expect(r.observation.text).toMatch(/textbox "Name" \[active\] \[ref=e\d+\]: Ada L/);
    r = await env.step(act(call('key', { key: 'NoSuchKey' }), call('key', { key: 'Enter' })));
    expect(answers(r.observation, 2)[0]).toMatch(/^Error: could not press "NoSuchKey"/);
    expect(r.info.actionErrors).toBe(1);
    const ev = await env.evaluate();
    expect(ev.reward).toBe(1);
    expect(ev.info.state).toMatchObject({ submitted: 'Ada L', keys: ['Backspace', 'L', 'Enter'] });
    // Typing into a native select picks the option with that label.
    r = await env.step(act(call('type', { element: 'combobox "Size"', text: 'Large' })));
    expect(answers(r.observation, 1)[0]).toMatch(/^Selected "Large" in combobox "Size" \[ref=e\d+\]\./);
    expect((await env.evaluate()).info.state).toMatchObject({ size: 'Large' });

    const before = await env.reset('scroll');
    expect(before.text).toContain('scrolled to (0, 0) of 800×3000');
    r = await env.step(act(call('scroll', { dy: 700 })));
    expect(answers(r.observation, 1)[0]).toContain('scrolled to (0, 700)');
    expect(Buffer.from(r.observation.screenshotPng!).equals(Buffer.from(before.screenshotPng!))).toBe(false);
    expect((await env.step(DO_NOTHING_ACTION)).reward).toBe(1);

    // The terms page: the wheel over the terms box scrolls the box, which enables its checkbox.
    const terms = suite.find((t) => t.kind === 'terms')!;
    await env.reset(terms.id);
    r = await env.step(act(call('scroll', { x: 400, y: 295, dy: 5000 })));
    expect((await env.evaluate()).info.state).toMatchObject({ readToEnd: true });
    expect(r.observation.text).not.toMatch(/checkbox "I have read and agree to the terms" \[disabled\]/);
  });

  it('returns a PNG screenshot of the viewport and a tree of the interactive elements', async () => {
    const checkout = suite.find((t) => t.instruction.startsWith('Fill in the checkout form'))!;
    const obs = await make().reset(checkout.id);
    expect(pngSize(obs.screenshotPng!)).toEqual({ width: 800, height: 600 });
    for (const el of [
      'textbox "Full name"',
      'combobox "Country"',
      'spinbutton "Quantity"',
      'checkbox "Gift wrap"',
      'radio "Standard" [checked]',
      'radio "Express"',
      'radio "Overnight"',
      'button "Place order"',
    ]) {
      expect(obs.text).toMatch(new RegExp(`${el.replace(/[[\]]/g, '\\$&')} \\[ref=e\\d+\\]`));
    }
    expect(obs.tools.map((t) => t.function.name)).toEqual(['click', 'type', 'key', 'scroll']);
    expect(obs.messages[1]).toEqual({ role: 'user', content: obs.text });

    const small = make({ viewport: { width: 640, height: 480 }, boxes: true });
    const smallObs = await small.reset(checkout.id);
    expect(pngSize(smallObs.screenshotPng!)).toEqual({ width: 640, height: 480 });
    expect(smallObs.text).toMatch(
      /button "Place order" \[ref=e\d+\] \[cursor=pointer\] \[box=\d+,\d+,\d+,\d+\]/,
    );
    const r = await small.step(act(call('click', { x: 700, y: 10 })));
    expect(answers(r.observation, 1)[0]).toMatch(/^Error: \(700, 10\) is outside the 640×480 viewport/);

    const blind = make({ screenshots: false });
    const blindObs = await blind.reset(checkout.id);
    expect(blindObs.screenshotPng).toBeUndefined();
    expect(blindObs.messages[0].content).not.toContain('screenshot');
    expect(obs.messages[0].content).toContain('screenshot');
  });

  it('answers element lookups that fail and clicks on disabled controls with errors', async () => {
    const env = make({ actionTimeoutMs: 1000 });
    await env.reset('buttons');
    const r = await env.step(
      act(
        call('click', { element: 'OK' }),
        call('click', { element: 'button "Nope"' }),
        call('click', { element: 'e999' }),
        call('type', { element: 'button "Press me"', text: 'x' }),
      ),
    );
    const [ambiguous, missing, stale, notField] = answers(r.observation, 4);
    expect(ambiguous).toMatch(
      /^Error: "OK" matches 2 elements \(button "OK" \[ref=e\d+\], button "OK" \[ref=e\d+\]\)/,
    );
    expect(missing).toMatch(/^Error: no element named "button \\"Nope\\"" on the page now/);
    expect(stale).toMatch(/^Error: no element \[ref=e999\] on the page now/);
    expect(notField).toMatch(/^Error: could not type into button "Press me" \[ref=e\d+\]/);
    expect(r.info).toMatchObject({ actionErrors: 4, malformedToolCalls: 0, toolCalls: 4 });

    const terms = suite.find((t) => t.kind === 'terms')!;
    await env.reset(terms.id);
    const blocked = await env.step(
      act(call('click', { element: 'checkbox "I have read and agree to the terms"' })),
    );
    expect(answers(blocked.observation, 1)[0]).toMatch(
      /^Error: could not click checkbox "I have read and agree to the terms" \[ref=e\d+\]: Timeout 1000ms exceeded/,
    );
    expect(blocked.info).toMatchObject({ actionErrors: 1, malformedToolCalls: 0 });
  });

  it("tells the agent about the page's own alert dialogs, which it dismisses", async () => {
    const env = make();
    await env.reset('buttons');
    const r = await env.step(act(call('click', { element: 'Alert' }), call('click', { x: 350, y: 220 })));
    const [alerted, clicked] = answers(r.observation, 2);
    expect(alerted).toBe(
      'Clicked button "Alert" [ref=e5].\nThe page opened a dialog (alert) saying "Hello there"; it was dismissed.',
    );
    expect(clicked).toMatch(/^Clicked at \(350, 220\)/);
    expect((await env.evaluate()).reward).toBe(1);
  });

  it('answers malformed calls with errors and ends the episode past maxParseErrors', async () => {
    const env = make();
    await env.reset('buttons');
    const r = await env.step({
      content: null,
      tool_calls: [
        call('click', '{"x": 1,'),
        call('drag', { x: 1 }),
        { id: '', type: 'function', function: { name: 'click' } } as unknown as ToolCall,
        call('click', { element: 'OK', x: 3, y: 4 }, 'c4'),
        call('scroll', { dy: 'down' }, 'c5'),
        call('click', { x: 350, y: 220 }, 'c6'),
      ],
    });
    const texts = answers(r.observation, 6);
    expect(texts[0]).toBe('Error: malformed tool call: the arguments of click are not valid JSON');
    expect(texts[1]).toMatch(
      /^Error: malformed tool call: unknown tool 'drag'; the tools are click, type, key, scroll/,
    );
    expect(texts[2]).toMatch(/^Error: malformed tool call: a tool call needs an id/);
    expect(texts[3]).toMatch(
      /^Error: malformed tool call: bad arguments for click: .*give either element, or x and y/,
    );
    expect(texts[4]).toMatch(/^Error: malformed tool call: bad arguments for scroll: dy: /);
    expect(texts[5]).toMatch(/^Clicked at \(350, 220\)/);
    expect(r.observation.messages.at(-4)).toMatchObject({ role: 'tool', tool_call_id: 'call_invalid_1_2' });
    expect(r).toMatchObject({ done: false, info: { malformedToolCalls: 5, toolCalls: 6 } });

    const strict = make({ maxParseErrors: 1 });
    await strict.reset('ready');
    expect((await strict.evaluate()).reward).toBe(1);
    const end = await strict.step(
      act(call('click', '{'), call('click', 'nope'), call('key', { key: 'Tab' })),
    );
    expect(end).toMatchObject({
      done: true,
      reward: -1,
      info: { endReason: 'max_parse_errors', goalMet: true },
    });
    const texts2 = answers(end.observation, 3);
    expect(texts2[1]).toMatch(/Too many malformed tool calls/);
    expect(texts2[2]).toBe('Error: not run; the episode ended.');
  });

  it('ends at maxSteps with the page evaluated, and refuses calls past maxActionsPerTurn', async () => {
    const env = make({ maxSteps: 2, maxActionsPerTurn: 2 });
    await env.reset('buttons');
    let r = await env.step(act(call('click', { x: 350, y: 220 })));
    expect(r.done).toBe(false);
    r = await env.step(act(call('key', { key: 'Tab' })));
    expect(r).toMatchObject({
      done: true,
      reward: 1,
      info: { truncated: true, endReason: 'max_steps', turns: 2 },
    });

    await env.reset('buttons');
    r = await env.step(
      act(call('key', { key: 'Tab' }), call('key', { key: 'Tab' }), call('click', { x: 350, y: 220 })),
    );
    expect(answers(r.observation, 3)[2]).toMatch(/^Error: not run; at most 2 actions per turn\./);
    expect(r.info.overBudgetToolCalls).toBe(1);
    r = await env.step(act(call('key', { key: 'Tab' })));
    expect(r).toMatchObject({ done: true, reward: -1, info: { truncated: true } });
  });

  it('keeps pages off every origin but the task server', async () => {
    const seen: string[] = [];
    const outside: Server = createServer((req, res) => {
      seen.push(req.url ?? '');
      res.end('outside');
    });
    let connections = 0;
    outside.on('connection', () => connections++);
    await new Promise<void>((resolve) => outside.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(outside.address() as AddressInfo).port}`;
    try {
      const probe = page(
        'network',
        `<a href="${origin}/navigate">Leave</a>
<script>
const s = window.__taskState = { own: 'pending', outside: 'pending', internet: 'pending' };
const probe = (key, url) => fetch(url).then(() => { s[key] = 'reached'; }, () => { s[key] = 'blocked'; });
probe('own', location.href);
probe('outside', ${JSON.stringify(`${origin}/fetch`)});
probe('internet', 'https://example.com/');
new Image().src = ${JSON.stringify(`${origin}/image.png`)};
</script>`,
        { own: 'reached', outside: 'blocked', internet: 'blocked' },
      );
      const env = make({ tasks: [probe] });
      await env.reset('network');
      let state: unknown;
      for (let i = 0; i < 50; i++) {
        state = (await env.evaluate()).info.state;
        if (!JSON.stringify(state).includes('pending')) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(state).toEqual({ own: 'reached', outside: 'blocked', internet: 'blocked' });
      // A link is a navigation, which the page's CSP does not cover: the context's fence stops it.
      const left = await env.step(act(call('click', { element: 'link "Leave"' })));
      expect(left.observation.text).toContain('ERR_BLOCKED_BY_CLIENT');
      await expect(env.page!.goto(`${origin}/direct`)).rejects.toThrow(/ERR_BLOCKED_BY_CLIENT/);
      // Not even a connection: Chromium's speculative preconnects go to the task server's proxy.
      expect(seen).toEqual([]);
      expect(connections).toBe(0);
    } finally {
      outside.closeAllConnections();
      await new Promise((resolve) => outside.close(resolve));
    }
  });

  it('refuses to step before reset, to reach unknown tasks and to go on after a page that never loads', async () => {
    const hung = page('hung', '<script>for (;;) {}</script>', { never: true });
    const env = make({ tasks: [hung, READY], loadTimeoutMs: 1000 });
    await expect(env.step(DO_NOTHING_ACTION)).rejects.toThrow(/before reset/);
    await expect(env.evaluate()).rejects.toThrow(/before reset/);
    await expect(env.reset('no-such-task')).rejects.toThrow(/no task 'no-such-task'/);
    await expect(env.reset('hung')).rejects.toThrow(/Timeout 1000ms exceeded/);
    await expect(env.step(DO_NOTHING_ACTION)).rejects.toThrow(/before reset/);
    await env.reset('ready');
    expect((await env.step(DO_NOTHING_ACTION)).reward).toBe(1);
  });
});

describe.skipIf(!hasChromium)('gui environment: close()', () => {
  it('leaves no Chromium process behind', async () => {
    // The browser's process tree, plus what left it (the crash handler daemonizes, its parent
    // becomes init) and is found by a mark in the environment it inherited.
    const mark = `CLAWRAY_GUI_TEST_MARK=${randomUUID()}`;
    const [key, value] = mark.split('=');
    process.env[key] = value;
    const env = new GuiEnvironment({ tasks: [READY] });
    await env.reset('ready');
    delete process.env[key];
    const tree = descendants(process.pid).filter((p) => p.comm.includes('chrom') && p.state !== 'Z');
    const marked = processes().filter((p) => p.state !== 'Z' && environ(p.pid).includes(mark));
    expect(tree.length).toBeGreaterThan(0);
    const chromium = [...new Map([...tree, ...marked].map((p) => [p.pid, p])).values()];
    const origin = env.origin!;
    await env.close();
    let alive: Proc[] = [];
    for (let i = 0; i < 50; i++) {
      const live = new Map(processes().map((p) => [p.pid, p]));
      alive = chromium.filter((p) => live.get(p.pid) && live.get(p.pid)!.state !== 'Z');
      if (alive.length === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(alive).toEqual([]);
    expect(descendants(process.pid).filter((p) => p.comm.includes('chrom') && p.state !== 'Z')).toEqual([]);
    // The page server is closed too.
    await expect(fetch(`${origin}/tasks/ready`)).rejects.toThrow();
    await expect(env.reset('ready')).rejects.toThrow(/closed/);
    await env.close();
  });
});
