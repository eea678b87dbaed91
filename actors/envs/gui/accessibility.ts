/**
 * The page as text: Playwright's AI-mode aria snapshot, an indented accessibility tree in which
 * every element that can receive the pointer carries a ref (`button "Submit" [ref=e12]`). Refs
 * stay with their element while its role and name do not change, so a ref from the last
 * observation still names the same element. The agent names an element by that ref, by its
 * role and accessible name as the tree prints them (`button "Submit"`), or by the name alone.
 */
import type { Locator, Page } from 'playwright-core';
import { ClawrayError, registerErrorClass } from '../../../common/errors.js';

/** One node of `ariaSnapshotJSON({ mode: 'ai' })`. */
interface AriaNode {
  role?: unknown;
  name?: unknown;
  ref?: unknown;
  children?: unknown;
}

export interface TreeOptions {
  /** Append each element's `[box=x,y,width,height]` in viewport pixels. */
  boxes?: boolean;
  timeoutMs?: number;
  /** Number refs as the episode's first document does (see RefNumbering). */
  refs?: RefNumbering;
}

export async function accessibilityTree(page: Page, options: TreeOptions = {}): Promise<string> {
  const tree = await page.ariaSnapshot({
    mode: 'ai',
    boxes: options.boxes ?? false,
    timeout: options.timeoutMs,
  });
  return options.refs ? options.refs.toAgent(tree) : tree;
}

const PRINTED_REF = /\[ref=(?:f(\d+))?e(\d+)\]/g;
const REF_PARTS = /^(?:f(\d+))?e(\d+)$/;

/**
 * Playwright numbers a page's documents: the refs of its first are `e12`, of each later one
 * `f3e12`, so that a stale ref never names an element of another document. A page kept across
 * episodes would show the agent a prefix that grows with every episode; this counts documents
 * from the episode's first instead, so an episode on a kept page reads as one on a new page
 * (and a navigation within the episode still gets its own prefix).
 */
export class RefNumbering {
  private base: number | undefined;

  /** A new episode: the next tree printed fixes its first document's number. */
  reset(): void {
    this.base = undefined;
  }

  /** Rewrites the `[ref=…]` marks of a tree as the agent sees them. */
  toAgent(text: string): string {
    return text.replace(PRINTED_REF, (mark: string, doc: string | undefined, n: string) => {
      const seq = doc === undefined ? 0 : Number(doc);
      this.base ??= seq;
      // No tree holds refs of a document older than the episode's: such a mark is page text.
      return seq < this.base ? mark : `[ref=${refOf(seq - this.base, n)}]`;
    });
  }

  /** One page ref (from the current tree) as the agent sees it. */
  agentRef(ref: string): string {
    const m = REF_PARTS.exec(ref);
    if (!m || this.base === undefined) return ref;
    return refOf((m[1] === undefined ? 0 : Number(m[1])) - this.base, m[2]);
  }

  /** The page's ref for one the agent gave; anything else is passed through. */
  toPage(ref: string): string {
    const m = REF_PARTS.exec(ref);
    if (!m || this.base === undefined) return ref;
    return refOf((m[1] === undefined ? 0 : Number(m[1])) + this.base, m[2]);
  }
}

function refOf(doc: number, n: string): string {
  return doc === 0 ? `e${n}` : `f${doc}e${n}`;
}

/** A well-formed request that names no element (or several) on the page as it is now. */
export class ElementLookupError extends ClawrayError {}
registerErrorClass(ElementLookupError);

export interface ResolvedElement {
  locator: Locator;
  ref: string;
  role: string;
  name: string;
  /** How the tree prints it: `button "Submit" [ref=e12]`. */
  label: string;
}

export type ElementSpec = { ref: string } | { role?: string; name: string };

const REF = /(?:^|\[|\bref=)((?:f\d+)?e\d+)(?:\]|$)/;
const ROLE_AND_NAME = /^(?:-\s*)?([a-z]+)\s+("(?:[^"\\]|\\.)*")/;

function normalize(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** Reads `e12`, `[ref=e12]`, `button "Submit" [ref=e12]`, `button "Submit"`, `"Submit"` or `Submit`. */
export function parseElementSpec(spec: string): ElementSpec {
  const text = spec.trim();
  const ref = REF.exec(text);
  if (ref) return { ref: ref[1] };
  const roleName = ROLE_AND_NAME.exec(text);
  if (roleName) {
    let name: string;
    try {
      name = JSON.parse(roleName[2]) as string;
    } catch {
      name = roleName[2].slice(1, -1);
    }
    return { role: roleName[1], name: normalize(name) };
  }
  if (text.length >= 2 && text.startsWith('"') && text.endsWith('"')) {
    return { name: normalize(text.slice(1, -1)) };
  }
  return { name: normalize(text) };
}

interface Candidate {
  ref: string;
  role: string;
  name: string;
}

function collect(value: unknown, out: Candidate[]): void {
  if (Array.isArray(value)) {
    for (const v of value) collect(v, out);
    return;
  }
  if (value === null || typeof value !== 'object') return;
  const node = value as AriaNode;
  if (typeof node.ref === 'string' && typeof node.role === 'string') {
    out.push({ ref: node.ref, role: node.role, name: typeof node.name === 'string' ? node.name : '' });
  }
  collect(node.children, out);
}

export function labelOf(c: { role: string; name: string; ref: string }): string {
  return `${c.role}${c.name ? ` ${JSON.stringify(c.name)}` : ''} [ref=${c.ref}]`;
}

/**
 * Finds the one element `spec` names in the page's current accessibility tree. With `refs`,
 * the refs the agent gives and the labels it gets back are in the episode's numbering.
 */
export async function resolveElement(
  page: Page,
  spec: string,
  timeoutMs?: number,
  refs?: RefNumbering,
): Promise<ResolvedElement> {
  const parsed = parseElementSpec(spec);
  const shownRef = (ref: string) => (refs ? refs.agentRef(ref) : ref);
  const label = (c: Candidate) => labelOf({ ...c, ref: shownRef(c.ref) });
  // A fresh snapshot: getByRef resolves against the latest one, and it is what names are matched in.
  const nodes: Candidate[] = [];
  collect(await page.ariaSnapshotJSON({ mode: 'ai', timeout: timeoutMs }), nodes);
  let found: Candidate[];
  if ('ref' in parsed) {
    const pageRef = refs ? refs.toPage(parsed.ref) : parsed.ref;
    found = nodes.filter((n) => n.ref === pageRef);
    if (found.length === 0) {
      throw new ElementLookupError(
        `no element [ref=${parsed.ref}] on the page now; refs come from the latest accessibility tree`,
      );
    }
  } else {
    const roleOk = (n: Candidate) => parsed.role === undefined || n.role === parsed.role;
    found = nodes.filter((n) => roleOk(n) && normalize(n.name) === parsed.name);
    if (found.length === 0) {
      const lower = parsed.name.toLowerCase();
      found = nodes.filter((n) => roleOk(n) && normalize(n.name).toLowerCase() === lower);
    }
    if (found.length === 0 && parsed.role === undefined && /^[a-z]+$/.test(parsed.name)) {
      found = nodes.filter((n) => n.role === parsed.name);
    }
    if (found.length === 0) {
      throw new ElementLookupError(
        `no element named ${JSON.stringify(spec.trim())} on the page now; use a [ref=…] or a role and ` +
          'name as the accessibility tree prints them',
      );
    }
    if (found.length > 1) {
      const listed = found.slice(0, 8).map(label).join(', ');
      throw new ElementLookupError(
        `${JSON.stringify(spec.trim())} matches ${found.length} elements (${listed}${found.length > 8 ? ', …' : ''}); ` +
          'name one by its ref',
      );
    }
  }
  const [hit] = found;
  return {
    locator: page.getByRef(hit.ref),
    ref: shownRef(hit.ref),
    role: hit.role,
    name: hit.name,
    label: label(hit),
  };
}
