/**
 * The gitignore subset used to leave files out of a working-directory package: `*`, `?`, `[...]`,
 * `**`, a leading `/` or an inner `/` to anchor at the root, a trailing `/` for directories only,
 * `#` comments, `!` to take a path back, and `\` to escape any of those. As in git, the last
 * pattern that matches wins, and nothing under an excluded directory can be taken back (the walk
 * never enters it).
 */

interface Rule {
  regex: RegExp;
  negate: boolean;
  dirOnly: boolean;
}

export class IgnoreRules {
  private readonly rules: Rule[] = [];

  constructor(patterns: Iterable<string> = []) {
    this.add(patterns);
  }

  /** Adds patterns after the ones already held, so they win over them. */
  add(patterns: Iterable<string>): this {
    for (const line of patterns) {
      const rule = parseRule(line);
      if (rule) this.rules.push(rule);
    }
    return this;
  }

  /** Adds the lines of an ignore file's text. */
  addText(text: string): this {
    return this.add(text.split('\n'));
  }

  /** Whether `path` (relative to the root, `/`-separated) is left out. */
  ignores(path: string, isDir: boolean): boolean {
    for (let i = this.rules.length - 1; i >= 0; i--) {
      const rule = this.rules[i];
      if (rule.dirOnly && !isDir) continue;
      if (rule.regex.test(path)) return !rule.negate;
    }
    return false;
  }
}

function parseRule(line: string): Rule | undefined {
  let p = line.endsWith('\r') ? line.slice(0, -1) : line;
  // Trailing spaces are dropped unless escaped, as git does; leading ones are part of the name.
  p = p.replace(/(?<!\\) +$/, '');
  if (p === '' || p.startsWith('#')) return undefined;
  let negate = false;
  if (p.startsWith('!')) {
    negate = true;
    p = p.slice(1);
  }
  let dirOnly = false;
  if (p.endsWith('/') && !p.endsWith('\\/')) {
    dirOnly = true;
    p = p.replace(/\/+$/, '');
  }
  if (p === '') return undefined;
  // A slash anywhere but at the end ties the pattern to the root; without one it matches a name
  // at any depth.
  const anchored = p.includes('/');
  if (p.startsWith('/')) p = p.slice(1);
  const prefix = anchored ? '^' : '^(?:.*/)?';
  let regex: RegExp;
  try {
    regex = new RegExp(`${prefix}${globToRegex(p)}$`, 'su');
  } catch {
    // A class git would accept but a RegExp does not (a reversed range): match the text as is.
    regex = new RegExp(`${prefix}${[...p].map(escapeRegex).join('')}$`, 'su');
  }
  return { regex, negate, dirOnly };
}

function globToRegex(glob: string): string {
  let out = '';
  let i = 0;
  while (i < glob.length) {
    const c = glob[i];
    if (c === '*') {
      if (glob[i + 1] === '*') {
        const atStart = i === 0 || glob[i - 1] === '/';
        const atEnd = i + 2 === glob.length || glob[i + 2] === '/';
        if (atStart && atEnd) {
          if (i + 2 === glob.length) {
            // `x/**`: everything inside x (x itself is matched by its own name only).
            out += '.*';
            i += 2;
          } else {
            // `**/`: zero or more whole directories.
            out += '(?:[^/]*/)*';
            i += 3;
          }
          continue;
        }
      }
      out += '[^/]*';
      i++;
    } else if (c === '?') {
      out += '[^/]';
      i++;
    } else if (c === '[') {
      const cls = readClass(glob, i);
      if (cls) {
        out += cls.regex;
        i = cls.end;
      } else {
        out += '\\[';
        i++;
      }
    } else if (c === '\\' && i + 1 < glob.length) {
      out += escapeRegex(glob[i + 1]);
      i += 2;
    } else {
      out += escapeRegex(c);
      i++;
    }
  }
  return out;
}

/** A `[...]` class starting at `start`, or undefined when it is not closed (then `[` is literal). */
function readClass(glob: string, start: number): { regex: string; end: number } | undefined {
  let i = start + 1;
  let negate = false;
  if (glob[i] === '!' || glob[i] === '^') {
    negate = true;
    i++;
  }
  let body = '';
  let first = true;
  while (i < glob.length) {
    const c = glob[i];
    if (c === ']' && !first) {
      // A class never matches the separator, negated or not.
      return { regex: negate ? `[^/${body}]` : `(?!/)[${body}]`, end: i + 1 };
    }
    if (c === '\\' && i + 1 < glob.length) {
      body += escapeClassChar(glob[i + 1], true);
      i += 2;
    } else {
      body += escapeClassChar(c, false);
      i++;
    }
    first = false;
  }
  return undefined;
}

/** A character inside a class; an escaped `-` is a dash, not a range. */
function escapeClassChar(c: string, escaped: boolean): string {
  if (c === '-') return escaped ? '\\-' : '-';
  return c === '\\' || c === ']' || c === '[' || c === '^' ? `\\${c}` : c;
}

function escapeRegex(c: string): string {
  return /[.*+?^${}()|[\]\\/]/.test(c) ? `\\${c}` : c;
}
