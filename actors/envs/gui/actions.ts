/**
 * The agent's hands: four OpenAI function tools — click (an element or a point), type, key and
 * scroll — with the zod schemas that decide whether a call is well formed, and their effect on
 * the page. A well-formed call that cannot be carried out (no such element, a disabled control,
 * a point outside the viewport) fails with an ActionError, which the agent reads as the tool's
 * answer; it is not a parse error.
 */
import type { Page } from 'playwright-core';
import { z } from 'zod';
import { ClawrayError, registerErrorClass } from '../../../common/errors.js';
import type { ToolSchema } from '../environment.js';
import {
  ElementLookupError,
  type RefNumbering,
  type ResolvedElement,
  resolveElement,
} from './accessibility.js';
import type { Viewport } from './browser.js';

const ELEMENT_DESCRIPTION =
  'The element: its ref from the accessibility tree (e.g. "e12"), or its role and accessible name as ' +
  'the tree prints them (e.g. \'button "Submit"\'), or its accessible name alone.';

export const GUI_TOOL_SCHEMAS: readonly ToolSchema[] = [
  {
    type: 'function',
    function: {
      name: 'click',
      description:
        'Click an element (give `element`) or a point of the viewport in CSS pixels from its top-left corner ' +
        '(give `x` and `y`, e.g. read from the screenshot).',
      parameters: {
        type: 'object',
        properties: {
          element: { type: 'string', description: ELEMENT_DESCRIPTION },
          x: { type: 'number', description: 'Horizontal position in the viewport, in pixels.' },
          y: { type: 'number', description: 'Vertical position in the viewport, in pixels.' },
        },
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'type',
      description:
        'Type text. With `element`, the text replaces the content of that field (or picks that option of a ' +
        'select); without, the keys go to the focused element.',
      parameters: {
        type: 'object',
        properties: {
          text: { type: 'string', description: 'The text to type.' },
          element: { type: 'string', description: ELEMENT_DESCRIPTION },
        },
        required: ['text'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'key',
      description:
        'Press a key or a chord on the focused element, e.g. "Enter", "Tab", "Escape", "ArrowDown", "PageDown", ' +
        '"Control+A".',
      parameters: {
        type: 'object',
        properties: {
          key: { type: 'string', description: 'The key, as in "Enter" or "Shift+Tab".' },
          times: { type: 'integer', minimum: 1, maximum: 50, description: 'How many presses (default 1).' },
        },
        required: ['key'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'scroll',
      description:
        'Turn the mouse wheel over a point (default: the middle of the viewport): positive `dy` scrolls down, ' +
        'positive `dx` right, in pixels. Scrolls whatever scrollable area is under that point.',
      parameters: {
        type: 'object',
        properties: {
          dy: { type: 'number', description: 'Vertical scroll in pixels.' },
          dx: { type: 'number', description: 'Horizontal scroll in pixels (default 0).' },
          x: { type: 'number', description: 'Where the pointer is, horizontally.' },
          y: { type: 'number', description: 'Where the pointer is, vertically.' },
        },
        required: ['dy'],
        additionalProperties: false,
      },
    },
  },
];

const coordinate = z.number().finite();
const elementSpec = z.string().trim().min(1).max(500);

export const GUI_TOOL_ARGUMENTS = {
  click: z
    .strictObject({ element: elementSpec.optional(), x: coordinate.optional(), y: coordinate.optional() })
    .refine(
      (a) => (a.element !== undefined) !== (a.x !== undefined || a.y !== undefined),
      'give either element, or x and y',
    )
    .refine((a) => (a.x === undefined) === (a.y === undefined), 'give both x and y'),
  type: z.strictObject({ text: z.string().max(5000), element: elementSpec.optional() }),
  key: z.strictObject({
    key: z.string().trim().min(1).max(64),
    times: z.number().int().min(1).max(50).optional(),
  }),
  scroll: z
    .strictObject({
      dy: z.number().finite().min(-100_000).max(100_000),
      dx: z.number().finite().min(-100_000).max(100_000).optional(),
      x: coordinate.optional(),
      y: coordinate.optional(),
    })
    .refine((a) => (a.x === undefined) === (a.y === undefined), 'give both x and y, or neither'),
} as const;

export type GuiToolName = keyof typeof GUI_TOOL_ARGUMENTS;
export type GuiToolArguments = { [K in GuiToolName]: z.infer<(typeof GUI_TOOL_ARGUMENTS)[K]> };

export function isGuiToolName(name: string): name is GuiToolName {
  return Object.hasOwn(GUI_TOOL_ARGUMENTS, name);
}

/** An action the page could not carry out (an agent's mistake: the episode goes on). */
export class ActionError extends ClawrayError {}
registerErrorClass(ActionError);

export interface ActionContext {
  viewport: Viewport;
  /** How long an action may wait for its element to become actionable. */
  timeoutMs: number;
  /** How long reading the page (the tree an element is looked up in) may take. */
  readTimeoutMs: number;
  /** The episode's ref numbering (refs the agent gives and labels it reads). */
  refs?: RefNumbering;
}

/**
 * Playwright's errors end with a call log of what the action was waiting for; the last line that
 * names the element's state (not enabled, covered by another element…) is what the agent needs.
 */
function reason(e: unknown): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the call log is coloured with ANSI escapes.
  const message = (e instanceof Error ? e.message : String(e)).replace(/\u001b\[[0-9;]*m/g, '');
  const lines = message.split('\n').map((l) => l.trim());
  const head = lines[0].replace(/^[a-zA-Z.]+: /, '');
  const why = lines
    .filter((l) =>
      /element is|intercepts pointer events|not (?:enabled|visible|stable|editable)|detached/.test(l),
    )
    .at(-1);
  if (!why) return head;
  const text = why.replace(/^- /, '');
  return `${head} (${text.length > 200 ? `${text.slice(0, 200)}…` : text})`;
}

async function resolve(page: Page, spec: string, ctx: ActionContext): Promise<ResolvedElement> {
  try {
    return await resolveElement(page, spec, ctx.readTimeoutMs, ctx.refs);
  } catch (e) {
    if (e instanceof ElementLookupError) throw new ActionError(e.message);
    throw e;
  }
}

function checkPoint(x: number, y: number, ctx: ActionContext): void {
  const { width, height } = ctx.viewport;
  if (x < 0 || y < 0 || x >= width || y >= height) {
    throw new ActionError(`(${x}, ${y}) is outside the ${width}×${height} viewport`);
  }
}

/** Carries out one validated call and returns what the agent is told. */
export async function performAction<K extends GuiToolName>(
  page: Page,
  name: K,
  args: GuiToolArguments[K],
  ctx: ActionContext,
): Promise<string> {
  switch (name) {
    case 'click': {
      const a = args as GuiToolArguments['click'];
      if (a.element !== undefined) {
        const el = await resolve(page, a.element, ctx);
        try {
          await el.locator.click({ timeout: ctx.timeoutMs });
        } catch (e) {
          throw new ActionError(`could not click ${el.label}: ${reason(e)}`);
        }
        return `Clicked ${el.label}.`;
      }
      const [x, y] = [a.x!, a.y!];
      checkPoint(x, y, ctx);
      await page.mouse.click(x, y);
      return `Clicked at (${x}, ${y}).`;
    }
    case 'type': {
      const a = args as GuiToolArguments['type'];
      if (a.element === undefined) {
        await page.keyboard.type(a.text);
        return `Typed ${JSON.stringify(a.text)} into the focused element.`;
      }
      const el = await resolve(page, a.element, ctx);
      try {
        const tag = await el.locator.evaluate((node: { tagName: string }) => node.tagName, undefined, {
          timeout: ctx.readTimeoutMs,
        });
        if (tag === 'SELECT') {
          await el.locator.selectOption({ label: a.text }, { timeout: ctx.timeoutMs });
          return `Selected ${JSON.stringify(a.text)} in ${el.label}.`;
        }
        await el.locator.fill(a.text, { timeout: ctx.timeoutMs });
      } catch (e) {
        throw new ActionError(`could not type into ${el.label}: ${reason(e)}`);
      }
      return `Typed ${JSON.stringify(a.text)} into ${el.label}.`;
    }
    case 'key': {
      const a = args as GuiToolArguments['key'];
      const times = a.times ?? 1;
      try {
        for (let i = 0; i < times; i++) await page.keyboard.press(a.key);
      } catch (e) {
        throw new ActionError(`could not press ${JSON.stringify(a.key)}: ${reason(e)}`);
      }
      return times === 1 ? `Pressed ${a.key}.` : `Pressed ${a.key} ${times} times.`;
    }
    case 'scroll': {
      const a = args as GuiToolArguments['scroll'];
      const x = a.x ?? Math.floor(ctx.viewport.width / 2);
      const y = a.y ?? Math.floor(ctx.viewport.height / 2);
      checkPoint(x, y, ctx);
      await page.mouse.move(x, y);
      await page.mouse.wheel(a.dx ?? 0, a.dy);
      return `Scrolled by (${a.dx ?? 0}, ${a.dy}) at (${x}, ${y}).`;
    }
  }
  throw new ActionError(`unknown tool ${String(name)}`);
}
