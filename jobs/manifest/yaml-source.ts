/**
 * A YAML manifest with its source positions: the plain value to validate, and for any field
 * path the line and column it was written at, so every error can name `file:line:col`.
 *
 * The value is built from the node tree here rather than with `doc.toJS()`: that keeps
 * `__proto__` an ordinary (and then unknown) key, turns a non-scalar key or a dangling alias
 * into a positioned error instead of a thrown one, and bounds alias expansion.
 */
import {
  type Document,
  isAlias,
  isMap,
  isScalar,
  isSeq,
  LineCounter,
  type Node,
  Parser,
  parseDocument,
} from 'yaml';

export type FieldPath = readonly (string | number)[];

export interface SourcePos {
  line: number;
  col: number;
}

export interface SourceProblem extends SourcePos {
  message: string;
}

/** Alias expansion beyond this is an error: it guards against "billion laughs" documents. */
const MAX_ALIAS_EXPANSIONS = 1000;

export class YamlSource {
  private constructor(
    private readonly doc: Document.Parsed,
    private readonly lines: LineCounter,
  ) {}

  /** Parses `text`; syntax errors come back positioned, never thrown. */
  static parse(text: string): { source: YamlSource; value: unknown; problems: SourceProblem[] } {
    const lines = new LineCounter();
    const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
    const source = new YamlSource(doc, lines);
    if (doc.errors.length > 0) {
      // Only the first: after a syntax error YAML's later errors are mostly its echoes.
      const first = doc.errors[0];
      const unclosed = first.code === 'MISSING_CHAR' ? unclosedQuote(text) : undefined;
      const problem =
        unclosed !== undefined
          ? { ...source.pos(unclosed), message: 'YAML: this quoted string is never closed' }
          : first.code === 'MULTIPLE_DOCS'
            ? {
                ...source.pos(first.pos[0]),
                message: 'YAML: a second document starts here; a manifest is one document',
              }
            : { ...source.pos(first.pos[0]), message: yamlMessage(first.message) };
      return { source, value: undefined, problems: [problem] };
    }
    const problems: SourceProblem[] = [];
    const value = source.toValue(doc.contents, problems);
    return { source, value, problems };
  }

  /** Where the value at `path` was written; the deepest written ancestor when it was not. */
  locate(path: FieldPath): { pos: SourcePos; found: boolean } {
    const walked = this.walk(path);
    const node = walked.node;
    // `lr:` with nothing after it is an empty scalar sitting after the colon; the key reads better.
    const empty = isScalar(node) && node.value === null && node.range && node.range[0] === node.range[1];
    const at = empty && walked.key ? walked.key : (node ?? walked.key);
    return { pos: this.pos(at?.range?.[0] ?? 0), found: walked.depth === path.length };
  }

  /** Where the key of the last segment of `path` was written (for unknown fields). */
  locateKey(path: FieldPath): SourcePos {
    const walked = this.walk(path);
    if (walked.depth === path.length && walked.key?.range) return this.pos(walked.key.range[0]);
    return this.locate(path).pos;
  }

  /** Whether the document itself holds a value at `path`. */
  has(path: FieldPath): boolean {
    return this.walk(path).depth === path.length;
  }

  private pos(offset: number): SourcePos {
    const { line, col } = this.lines.linePos(offset);
    return { line, col };
  }

  private walk(path: FieldPath): { node: Node | null; key?: Node; depth: number } {
    let node = this.resolve(this.doc.contents);
    let key: Node | undefined;
    let depth = 0;
    for (const segment of path) {
      if (isMap(node)) {
        const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value ?? '') === String(segment));
        if (!pair) break;
        key = pair.key as Node;
        node = this.resolve(pair.value as Node | null);
      } else if (isSeq(node) && typeof segment === 'number' && segment < node.items.length) {
        key = undefined;
        node = this.resolve(node.items[segment] as Node | null);
      } else {
        break;
      }
      depth++;
    }
    return { node, key, depth };
  }

  private resolve(node: Node | null | undefined): Node | null {
    let n: Node | null | undefined = node;
    for (let hops = 0; isAlias(n) && hops < 100; hops++) n = n.resolve(this.doc) as Node | undefined;
    return n ?? null;
  }

  private toValue(root: Node | null, problems: SourceProblem[]): unknown {
    let expansions = 0;
    const inProgress = new Set<Node>();
    const visit = (node: Node | null): unknown => {
      if (node === null) return null;
      if (isAlias(node)) {
        const target = node.resolve(this.doc) as Node | undefined;
        if (!target) return fail(node, `the alias *${node.source} has no anchor &${node.source} before it`);
        if (++expansions > MAX_ALIAS_EXPANSIONS) return fail(node, 'too many alias expansions');
        if (inProgress.has(target))
          return fail(node, `the alias *${node.source} refers to a node that contains it`);
        return visit(target);
      }
      if (isScalar(node)) return node.value;
      inProgress.add(node);
      try {
        if (isSeq(node)) return node.items.map((item) => visit(item as Node | null));
        if (isMap(node)) {
          const out: Record<string, unknown> = {};
          for (const pair of node.items) {
            const keyNode = pair.key as Node | null;
            if (keyNode !== null && !isScalar(keyNode)) {
              fail(keyNode, 'a key must be a plain name, not a list or mapping');
              continue;
            }
            const name = String(keyNode?.value ?? '');
            // defineProperty: a `__proto__` key must stay data, not replace the prototype.
            Object.defineProperty(out, name, {
              value: visit(pair.value as Node | null),
              enumerable: true,
              writable: true,
              configurable: true,
            });
          }
          return out;
        }
        return fail(node, 'unsupported YAML node');
      } finally {
        inProgress.delete(node);
      }
    };
    const fail = (node: Node, message: string): undefined => {
      problems.push({ ...this.pos(node.range?.[0] ?? 0), message });
      return undefined;
    };
    return visit(root);
  }
}

/**
 * Where an unclosed quoted string starts: yaml reports the end of the file, which is rarely
 * near the mistake.
 */
function unclosedQuote(text: string): number | undefined {
  let found: number | undefined;
  const visit = (token: unknown) => {
    if (found !== undefined || token === null || typeof token !== 'object') return;
    const t = token as { type?: string; offset?: number; source?: string } & Record<string, unknown>;
    if (t.type === 'double-quoted-scalar' || t.type === 'single-quoted-scalar') {
      const quote = t.type === 'double-quoted-scalar' ? '"' : "'";
      const src = (t.source ?? '').trimEnd();
      const closed =
        src.length >= 2 && src.endsWith(quote) && !(quote === '"' && /(^|[^\\])(\\\\)*\\"$/.test(src));
      if (!closed) found = t.offset;
      return;
    }
    for (const key of ['start', 'key', 'sep', 'value', 'items', 'end']) {
      const child = t[key];
      if (Array.isArray(child)) child.forEach(visit);
      else visit(child);
    }
  };
  for (const token of new Parser().parse(text)) visit(token);
  return found;
}

/** yaml's message without its " at line 3, column 1" tail (the position is printed first). */
function yamlMessage(message: string): string {
  const first = message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
  return `YAML: ${first.charAt(0).toLowerCase()}${first.slice(1)}`;
}
