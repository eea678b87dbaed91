/**
 * The gui track's environment. An episode: a task page opens in a fresh browser context of a
 * headless Chromium (with `isolation: 'page'`, in the environment's kept page, cleared) → the agent sees the instruction, a screenshot (`screenshotPng`) and the
 * page's accessibility tree → each assistant turn's tool calls (click, type, key, scroll) act
 * on the page, and every turn is answered with one tool message per call, the last of which
 * also carries the page as it is now, plus a new screenshot → the episode ends when the agent
 * answers without tool calls: the evaluator reads `window.__taskState` and gives +1 when the
 * task's goal holds, else −1.
 *
 * Limits: after `maxSteps` turns the page is evaluated and the episode ends (`info.truncated`);
 * malformed calls (bad shape, unknown tool, arguments that are not JSON or do not fit the
 * tool) are answered with an error and counted, and once there are more than `maxParseErrors`
 * the episode ends with −1; calls past `maxActionsPerTurn` in one turn are refused unrun.
 *
 * One browser serves every episode of the environment (launched at the first reset unless one
 * is passed in), and one local server serves its pages; `close()` ends both.
 */

import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import { z } from 'zod';
import { ConfigError } from '../../../common/errors.js';
import { seededRandom } from '../../../common/random.js';
import type {
  Action,
  ChatMessage,
  Environment,
  Evaluation,
  Observation,
  StepResult,
  ToolMessage,
} from '../environment.js';
import { TaskDeck } from '../task-deck.js';
import { toolReply } from '../tool-calls.js';
import { ToolTurn, turnCallId } from '../tool-turn.js';
import type { Split } from '../track.js';
import { accessibilityTree, RefNumbering } from './accessibility.js';
import { ActionError, GUI_TOOL_ARGUMENTS, GUI_TOOL_SCHEMAS, performAction } from './actions.js';
import { DEFAULT_VIEWPORT, launchChromium, newEpisodeContext, type Viewport } from './browser.js';
import { checkGoal, REWARD_FAILURE, REWARD_SUCCESS, readPageState } from './goal.js';
import { PageServer } from './page-server.js';
import { buildGuiSuite, type GuiTask } from './tasks.js';

export const DEFAULT_MAX_STEPS = 30;
export const DEFAULT_MAX_PARSE_ERRORS = 5;
export const DEFAULT_MAX_ACTIONS_PER_TURN = 16;
export const DEFAULT_ACTION_TIMEOUT_MS = 5_000;
export const DEFAULT_READ_TIMEOUT_MS = 10_000;

/** The system prompt when none is set; without screenshots it does not promise any. */
export function defaultSystemPrompt(screenshots = true): string {
  return (
    'You operate a web page in a browser to complete a task. After each turn you get ' +
    (screenshots ? 'a screenshot of the viewport and ' : '') +
    "the page's accessibility tree, in which interactive elements carry refs like [ref=e12]. Act with the " +
    'tools: click an element (by ref, or by role and name such as \'button "Save"\') or a point of the ' +
    'viewport, type text, press keys, scroll. When the task is complete, reply without tool calls.'
  );
}

export const DEFAULT_SYSTEM_PROMPT = defaultSystemPrompt();

export const guiSettingsSchema = z.strictObject({
  /** The Chromium executable (default: CLAWRAY_CHROMIUM_PATH, else /usr/bin/chromium). */
  chromiumPath: z.string().min(1).optional(),
  viewport: z
    .strictObject({
      width: z.number().int().min(320).max(3840),
      height: z.number().int().min(240).max(2160),
    })
    .optional(),
  maxSteps: z.number().int().min(1).max(1000).optional(),
  maxParseErrors: z.number().int().min(0).max(1000).optional(),
  maxActionsPerTurn: z.number().int().min(1).max(200).optional(),
  /** How long one action may wait for its element to be actionable (visible, enabled, uncovered). */
  actionTimeoutMs: z.number().int().min(100).max(120_000).optional(),
  /** How long reading the page (tree, state, screenshot) may take before it counts as hung. */
  readTimeoutMs: z.number().int().min(100).max(120_000).optional(),
  /** How long a task page may take to load. */
  loadTimeoutMs: z.number().int().min(100).max(120_000).optional(),
  launchTimeoutMs: z.number().int().min(1_000).max(300_000).optional(),
  /** Attach a screenshot to every observation (default true). */
  screenshots: z.boolean().optional(),
  /** Print each element's box `[box=x,y,w,h]` in the tree, for text-only agents that click points. */
  boxes: z.boolean().optional(),
  /**
   * What each episode starts in. 'context' (default): a new browser context, hence a new
   * renderer process (about 0.3 s of CPU an episode). 'page': the environment's one page is
   * kept, and between episodes everything a page can leave behind is cleared (cookies, the
   * task origin's storage of every kind, sessionStorage, other windows, the back/forward
   * history); a page that crashed or wandered off the task server is replaced by a new context.
   */
  isolation: z.enum(['context', 'page']).optional(),
  systemPrompt: z.string().min(1).optional(),
});

export type GuiSettings = z.infer<typeof guiSettingsSchema>;

/** Validates track settings; a mistake is a ConfigError naming the field. */
export function parseGuiSettings(raw: unknown): GuiSettings {
  const parsed = guiSettingsSchema.safeParse(raw ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const keys = issue.code === 'unrecognized_keys' ? issue.keys : [];
  const field = [...issue.path.map(String), ...keys].join('.') || '(settings)';
  throw new ConfigError(`gui settings: ${field}: ${issue.message}`, { fields: { field } });
}

export interface GuiEnvOptions extends GuiSettings {
  /** The tasks episodes draw from (default: the built-in suite). */
  tasks?: GuiTask[];
  /** Restrict the default draw to one split ('all' by default); reset(taskId) reaches any task. */
  split?: Split | 'all';
  /** Seed of the order in which reset() without an id walks the tasks. */
  seed?: number;
  /** A browser to share (e.g. across a pool's environments); it is not closed by close(). */
  browser?: Browser;
}

export type GuiEndReason = 'answered' | 'max_steps' | 'max_parse_errors';

export type GuiInfo = {
  taskId: string;
  kind: string;
  turns: number;
  /** Tool calls the agent made (well-formed or not). */
  toolCalls: number;
  malformedToolCalls: number;
  /** Well-formed calls the page could not carry out (no such element, disabled, out of view…). */
  actionErrors: number;
  /** Calls refused because the turn had used up `maxActionsPerTurn`. */
  overBudgetToolCalls: number;
  /** The step limit ended the episode before the agent did. */
  truncated: boolean;
  endReason?: GuiEndReason;
  /** The goal held when the page was last evaluated. */
  goalMet: boolean;
  /** Goal keys whose page value differed at the last evaluation. */
  unmet: string[];
  /** `window.__taskState` as the last evaluation read it. */
  state?: unknown;
  /** Why the page could not be read (it crashed, navigated away, hung). */
  evaluationError?: string;
};

/** Settles the page after an action: two frames, so layout, scroll and handlers have run. */
const SETTLE =
  'new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve(true))))';

export class GuiEnvironment implements Environment<GuiInfo> {
  readonly tasks: GuiTask[];
  private readonly deck: TaskDeck<GuiTask>;
  private readonly settings: Required<Omit<GuiSettings, 'chromiumPath'>> & { chromiumPath?: string };
  private readonly sharedBrowser: Browser | undefined;
  private readonly toolTurn: ToolTurn<typeof GUI_TOOL_ARGUMENTS, 'malformedToolCalls'>;
  private started: Promise<{ browser: Browser; server: PageServer }> | undefined;
  private ownBrowser: Browser | undefined;
  private server: PageServer | undefined;
  private context: BrowserContext | undefined;
  private livePage: Page | undefined;
  private task: GuiTask | undefined;
  private messages: ChatMessage[] = [];
  private info: GuiInfo | undefined;
  private pageNotes: string[] = [];
  private done = false;
  private closed = false;
  private crashed = false;
  private cdp: Promise<CDPSession> | undefined;
  private readonly refs = new RefNumbering();

  constructor(options: GuiEnvOptions = {}) {
    const { tasks, split = 'all', seed, browser, ...rest } = options;
    const s = parseGuiSettings(rest);
    this.tasks = tasks ?? buildGuiSuite();
    this.deck = new TaskDeck('gui', this.tasks, split, seededRandom(seed ?? 0));
    this.settings = {
      chromiumPath: s.chromiumPath,
      viewport: s.viewport ?? DEFAULT_VIEWPORT,
      maxSteps: s.maxSteps ?? DEFAULT_MAX_STEPS,
      maxParseErrors: s.maxParseErrors ?? DEFAULT_MAX_PARSE_ERRORS,
      maxActionsPerTurn: s.maxActionsPerTurn ?? DEFAULT_MAX_ACTIONS_PER_TURN,
      actionTimeoutMs: s.actionTimeoutMs ?? DEFAULT_ACTION_TIMEOUT_MS,
      readTimeoutMs: s.readTimeoutMs ?? DEFAULT_READ_TIMEOUT_MS,
      loadTimeoutMs: s.loadTimeoutMs ?? 15_000,
      launchTimeoutMs: s.launchTimeoutMs ?? 30_000,
      screenshots: s.screenshots ?? true,
      boxes: s.boxes ?? false,
      isolation: s.isolation ?? 'context',
      systemPrompt: s.systemPrompt ?? defaultSystemPrompt(s.screenshots ?? true),
    };
    const maxParseErrors = this.settings.maxParseErrors;
    this.toolTurn = new ToolTurn({
      env: 'gui',
      tools: GUI_TOOL_ARGUMENTS,
      maxParseErrors,
      parseErrorCount: 'malformedToolCalls',
      // Only the call that passes the limit says so; the ones before it are answered plainly.
      malformedNote: (left) =>
        left < 0 ? `\n\nToo many malformed tool calls (more than ${maxParseErrors}); the episode ends.` : '',
    });
    this.sharedBrowser = browser;
  }

  get currentTask(): GuiTask | undefined {
    return this.task;
  }

  /** The live page of the current episode (for inspection; acting on it bypasses the episode's accounting). */
  get page(): Page | undefined {
    return this.livePage;
  }

  get viewport(): Viewport {
    return { ...this.settings.viewport };
  }

  /** The task server's origin, once the first episode has started it. */
  get origin(): string | undefined {
    return this.server?.origin;
  }

  async reset(taskId?: string): Promise<Observation> {
    if (this.closed) throw new Error('gui env: closed');
    const task = this.deck.draw(taskId);
    const { browser, server } = await this.start();
    const reused = this.settings.isolation === 'page' && (await this.clearForNextEpisode(server));
    if (!reused) await this.endContext();
    this.task = task;
    this.done = false;
    this.pageNotes = [];
    this.refs.reset();
    this.info = {
      taskId: task.id,
      kind: task.kind,
      turns: 0,
      toolCalls: 0,
      malformedToolCalls: 0,
      actionErrors: 0,
      overBudgetToolCalls: 0,
      truncated: false,
      goalMet: false,
      unmet: Object.keys(task.goal.state),
    };
    try {
      const page = reused && this.livePage ? this.livePage : await this.openContext(browser, server);
      return await this.openTask(task, page, server);
    } catch (e) {
      // No half-open episode: step() and evaluate() refuse until a reset succeeds.
      await this.endContext();
      this.info = undefined;
      this.task = undefined;
      throw e;
    }
  }

  private async openContext(browser: Browser, server: PageServer): Promise<Page> {
    const context = await newEpisodeContext(browser, server.origin, this.settings.viewport);
    this.context = context;
    context.setDefaultTimeout(this.settings.actionTimeoutMs);
    context.setDefaultNavigationTimeout(this.settings.loadTimeoutMs);
    const page = await context.newPage();
    this.livePage = page;
    // A page's own alert/confirm/prompt would block it; dismiss and tell the agent what it said.
    page.on('dialog', (dialog) => {
      this.pageNotes.push(
        `The page opened a dialog (${dialog.type()}) saying ${JSON.stringify(dialog.message())}; it was dismissed.`,
      );
      dialog.dismiss().catch(() => {});
    });
    page.on('crash', () => {
      this.crashed = true;
      this.pageNotes.push('The page crashed.');
    });
    this.crashed = false;
    return page;
  }

  private async openTask(task: GuiTask, page: Page, server: PageServer): Promise<Observation> {
    const url = server.publish(task.id, task.html);
    await page.goto(url, { waitUntil: 'load', timeout: this.settings.loadTimeoutMs });
    if (this.settings.isolation === 'page') await this.forgetHistory(page);
    await this.settle(page);
    const notes = this.pageNotes
      .splice(0)
      .map((n) => `\n${n}`)
      .join('');
    const content = `${task.instruction}\n\n${await this.describePage(page)}${notes}`;
    this.messages = [
      { role: 'system', content: this.settings.systemPrompt },
      { role: 'user', content },
    ];
    return this.observation(content, await this.screenshot(page));
  }

  /**
   * Makes the kept page as good as a new one for the next episode, or says it cannot (false:
   * the caller opens a new context). sessionStorage lives in the tab, so the page clears it
   * itself while it is still on the task origin; the origin's other storage and the cookies
   * are cleared through the browser, and windows the last episode opened are closed.
   */
  private async clearForNextEpisode(server: PageServer): Promise<boolean> {
    const context = this.context;
    const page = this.livePage;
    if (!context || !page || page.isClosed() || this.crashed) return false;
    let onOrigin = false;
    try {
      onOrigin = new URL(page.url()).origin === server.origin;
    } catch {}
    if (!onOrigin) return false;
    try {
      await withTimeout(
        (async () => {
          for (const other of context.pages()) if (other !== page) await other.close();
          await page.evaluate('sessionStorage.clear()');
          await (await this.devtools(page)).send('Storage.clearDataForOrigin', {
            origin: server.origin,
            storageTypes: 'all',
          });
          await context.clearCookies();
        })(),
        this.settings.readTimeoutMs,
        'clearing the page for the next episode',
      );
      return true;
    } catch {
      return false;
    }
  }

  /** The back/forward list would otherwise lead to the last episode's page. */
  private async forgetHistory(page: Page): Promise<void> {
    await (await this.devtools(page)).send('Page.resetNavigationHistory');
  }

  /** The kept page's DevTools session, opened once per page. */
  private devtools(page: Page): Promise<CDPSession> {
    this.cdp ??= page.context().newCDPSession(page);
    return this.cdp;
  }

  async step(action: Action): Promise<StepResult<GuiInfo>> {
    if (this.closed) throw new Error('gui env: closed');
    const info = this.info;
    const page = this.livePage;
    if (!info || !page) throw new Error('gui env: step() before reset()');
    if (this.done) throw new Error('gui env: step() after the episode ended; reset() first');
    const rawCalls = this.toolTurn.open(action, this.messages);
    info.turns++;

    if (rawCalls.length === 0) return this.finish(page, 'answered', '');

    const results: ToolMessage[] = [];
    let ranThisTurn = 0;
    for (const [n, raw] of rawCalls.entries()) {
      const { message, ran } = await this.answerCall(page, raw, n, ranThisTurn);
      if (ran) ranThisTurn++;
      results.push(message);
      if (this.toolTurn.limitPassed(info)) break;
    }
    if (this.toolTurn.limitPassed(info)) {
      // The last answer, the call that passed the limit, says the episode ends (malformedNote).
      // Every call gets an answer, including the ones the stop left unrun.
      for (const raw of rawCalls.slice(results.length)) {
        results.push(this.reply(raw, results.length, 'Error: not run; the episode ended.'));
      }
      this.messages.push(...results);
      return this.finish(page, 'max_parse_errors', results.map((r) => r.content).join('\n\n'));
    }
    await this.settle(page);
    const view = await this.describePage(page);
    results[results.length - 1].content += `\n\n${view}`;
    this.messages.push(...results);
    const text = results.map((r) => r.content).join('\n\n');
    if (info.turns >= this.settings.maxSteps) {
      info.truncated = true;
      return this.finish(page, 'max_steps', text);
    }
    return {
      observation: this.observation(text, await this.screenshot(page)),
      reward: 0,
      done: false,
      info: this.snapshotInfo(),
    };
  }

  async evaluate(): Promise<Evaluation<GuiInfo>> {
    if (this.closed) throw new Error('gui env: closed');
    const page = this.livePage;
    if (!this.info || !page) throw new Error('gui env: evaluate() before reset()');
    const reward = await this.score(page);
    return { reward, info: this.snapshotInfo() };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.endContext();
    const started = this.started;
    this.started = undefined;
    await started?.catch(() => undefined);
    await this.ownBrowser?.close().catch(() => {});
    this.ownBrowser = undefined;
    await this.server?.close().catch(() => {});
    this.server = undefined;
    this.task = undefined;
    this.messages = [];
  }

  private start(): Promise<{ browser: Browser; server: PageServer }> {
    // A browser that died (crash, OOM kill) is replaced rather than failing every later episode.
    if (this.started && this.ownBrowser && !this.ownBrowser.isConnected()) this.started = undefined;
    this.started ??= (async () => {
      this.server ??= await PageServer.start();
      let browser = this.sharedBrowser;
      if (!browser) {
        this.ownBrowser = await launchChromium({
          chromiumPath: this.settings.chromiumPath,
          timeoutMs: this.settings.launchTimeoutMs,
        });
        browser = this.ownBrowser;
      }
      return { browser, server: this.server };
    })();
    const started = this.started;
    started.catch(() => {
      if (this.started === started) this.started = undefined;
    });
    return started;
  }

  private async endContext(): Promise<void> {
    const context = this.context;
    this.context = undefined;
    this.cdp = undefined;
    this.livePage = undefined;
    await context?.close().catch(() => {});
  }

  private reply(raw: unknown, n: number, content: string, name?: string): ToolMessage {
    return toolReply(turnCallId(raw, this.info?.turns ?? 0, n), content, name);
  }

  private async answerCall(
    page: Page,
    raw: unknown,
    n: number,
    ranThisTurn: number,
  ): Promise<{ message: ToolMessage; ran: boolean }> {
    const info = this.info!;
    const read = this.toolTurn.read(raw, turnCallId(raw, info.turns, n), info);
    if (!read.ok) return { message: read.reply, ran: false };
    const call = read.call;
    const name = call.name;
    if (ranThisTurn >= this.settings.maxActionsPerTurn) {
      info.overBudgetToolCalls++;
      return {
        message: this.reply(
          raw,
          n,
          `Error: not run; at most ${this.settings.maxActionsPerTurn} actions per turn.`,
          name,
        ),
        ran: false,
      };
    }
    const ctx = {
      viewport: this.settings.viewport,
      timeoutMs: this.settings.actionTimeoutMs,
      readTimeoutMs: this.settings.readTimeoutMs,
      refs: this.refs,
    };
    let content: string;
    try {
      content = await performAction(page, call.name, call.args, ctx);
    } catch (e) {
      if (!(e instanceof ActionError)) {
        // The page itself failed (crashed, closed, navigated mid-action): the agent sees why.
        content = `Error: ${name} failed: ${(e as Error).message.split('\n')[0]}`;
      } else {
        content = `Error: ${e.message}`;
      }
      info.actionErrors++;
    }
    if (this.pageNotes.length > 0) content += `\n${this.pageNotes.splice(0).join('\n')}`;
    return { message: this.reply(raw, n, content, name), ran: true };
  }

  private async finish(page: Page, reason: GuiEndReason, text: string): Promise<StepResult<GuiInfo>> {
    const info = this.info!;
    info.endReason = reason;
    let reward = await this.score(page);
    if (reason === 'max_parse_errors') reward = REWARD_FAILURE;
    this.done = true;
    return {
      observation: this.observation(text, await this.screenshot(page)),
      reward,
      done: true,
      info: this.snapshotInfo(),
    };
  }

  /** Reads the page state and scores it; a page that cannot be read scores −1. */
  private async score(page: Page): Promise<number> {
    const info = this.info!;
    const task = this.task!;
    try {
      const state = await withTimeout(
        readPageState(page),
        this.settings.readTimeoutMs,
        'reading the page state',
      );
      const check = checkGoal(state, task.goal);
      info.state = state;
      info.goalMet = check.met;
      info.unmet = check.unmet;
      delete info.evaluationError;
    } catch (e) {
      info.state = undefined;
      info.goalMet = false;
      info.unmet = Object.keys(task.goal.state);
      info.evaluationError = (e as Error).message.split('\n')[0];
    }
    return info.goalMet ? REWARD_SUCCESS : REWARD_FAILURE;
  }

  private async settle(page: Page): Promise<void> {
    try {
      await page.waitForLoadState('load', { timeout: this.settings.loadTimeoutMs });
      await withTimeout(page.evaluate(SETTLE), this.settings.readTimeoutMs, 'settling the page');
    } catch {
      // A page that navigated, crashed or hangs is described (or fails to be) as it is.
    }
  }

  private async describePage(page: Page): Promise<string> {
    const { width, height } = this.settings.viewport;
    try {
      const geometry = (await withTimeout(
        page.evaluate(
          'JSON.stringify([document.title, Math.round(scrollX), Math.round(scrollY), ' +
            'document.documentElement.scrollWidth, document.documentElement.scrollHeight])',
        ),
        this.settings.readTimeoutMs,
        'reading the page',
      )) as string;
      const [title, sx, sy, pw, ph] = JSON.parse(geometry) as [string, number, number, number, number];
      const tree = await accessibilityTree(page, {
        boxes: this.settings.boxes,
        timeoutMs: this.settings.readTimeoutMs,
        refs: this.refs,
      });
      return (
        `Page ${JSON.stringify(title)}: viewport ${width}×${height} px, scrolled to (${sx}, ${sy}) ` +
        `of ${pw}×${ph}. Accessibility tree:\n${tree}`
      );
    } catch (e) {
      return `The page cannot be read: ${(e as Error).message.split('\n')[0]}`;
    }
  }

  private async screenshot(page: Page): Promise<Uint8Array | undefined> {
    if (!this.settings.screenshots) return undefined;
    try {
      const png = await page.screenshot({
        type: 'png',
        animations: 'disabled',
        timeout: this.settings.readTimeoutMs,
      });
      return new Uint8Array(png.buffer, png.byteOffset, png.byteLength);
    } catch {
      return undefined;
    }
  }

  private observation(text: string, screenshotPng: Uint8Array | undefined): Observation {
    const observation: Observation = { messages: [...this.messages], text, tools: [...GUI_TOOL_SCHEMAS] };
    if (screenshotPng) observation.screenshotPng = screenshotPng;
    return observation;
  }

  private snapshotInfo(): GuiInfo {
    const info = this.info!;
    return { ...info, unmet: [...info.unmet] };
  }
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  // The loser of the race must not surface later as an unhandled rejection.
  promise.catch(() => {});
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms ${what}`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
