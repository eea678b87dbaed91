/**
 * Where a package's symlinks lead, worked out from the package alone. A symlink checked on its
 * own can look harmless and still leave the package through another one (`d/e/up -> ../..`,
 * then `b -> d/e/up/../x`), and a dangling one cannot be checked on the disk at all: it resolves
 * to nothing at unpack time and to whatever is created there later. So every target is resolved
 * lexically, component by component, following the package's own symlinks the way the kernel
 * would; a symlink is refused when that walk leaves the package root, starts at `/`, or loops.
 * The packer and the unpacker share this, so a package the CLI makes is one every worker takes.
 */
import { ConfigError, registerErrorClass } from '../../common/errors.js';

/** As the kernel's ELOOP limit: more links than this in one resolution is a loop. */
export const MAX_LINK_HOPS = 40;

/** A symlink in a working-directory package leads outside it (or loops). */
export class UnsafeSymlinkError extends ConfigError {}
registerErrorClass(UnsafeSymlinkError);

export interface LinkProblem {
  /** The refused symlink, relative to the package root. */
  path: string;
  target: string;
  why: 'absolute' | 'outside' | 'loop';
  /** The links followed, `path -> target` each, the refused one first. */
  chain: string[];
}

/** `why` in words, for messages. */
export function describeProblem(p: LinkProblem): string {
  const via = p.chain.length > 1 ? ` (through ${p.chain.slice(1).join(', ')})` : '';
  const what =
    p.why === 'absolute'
      ? 'an absolute path'
      : p.why === 'loop'
        ? `a loop of more than ${MAX_LINK_HOPS} links`
        : 'a path outside the package';
  return `${p.path} -> ${p.target} resolves to ${what}${via}`;
}

/** The symlinks of one package, by `/`-separated path relative to its root. */
export class PackageLinks {
  private readonly links = new Map<string, string>();

  add(path: string, target: string): void {
    this.links.set(path, target);
  }

  get size(): number {
    return this.links.size;
  }

  paths(): IterableIterator<string> {
    return this.links.keys();
  }

  target(path: string): string | undefined {
    return this.links.get(path);
  }

  /** Every symlink that leads outside the package, in the order they were added. */
  problems(): LinkProblem[] {
    const out: LinkProblem[] = [];
    for (const path of this.links.keys()) {
      const problem = this.check(path);
      if (problem) out.push(problem);
    }
    return out;
  }

  /** Why the symlink at `path` leads outside, or undefined when it stays inside. */
  check(path: string): LinkProblem | undefined {
    const target = this.links.get(path);
    if (target === undefined) return undefined;
    const chain = [`${path} -> ${target}`];
    const problem = (why: LinkProblem['why']): LinkProblem => ({ path, target, why, chain });
    // `dir` is where resolution stands (components below the root); `pending` what is left to
    // walk, next component last so that splicing a link's target in is a push.
    const dir = parentParts(path);
    const pending: string[] = [];
    let hops = 1;
    const enter = (t: string): boolean => {
      if (t.startsWith('/')) return false;
      pending.push(...t.split('/').reverse());
      return true;
    };
    if (!enter(target)) return problem('absolute');
    while (pending.length > 0) {
      const part = pending.pop()!;
      if (part === '' || part === '.') continue;
      if (part === '..') {
        if (dir.length === 0) return problem('outside');
        dir.pop();
        continue;
      }
      const here = dir.length === 0 ? part : `${dir.join('/')}/${part}`;
      const next = this.links.get(here);
      if (next === undefined) {
        // A directory, a file or nothing yet: the walk goes on lexically, as it would once
        // something is created there (anything but a symlink, which the package cannot hold
        // without listing it here).
        dir.push(part);
        continue;
      }
      if (++hops > MAX_LINK_HOPS) return problem('loop');
      chain.push(`${here} -> ${next}`);
      // A link's target is relative to the directory holding the link, which is `dir`.
      if (!enter(next)) return problem('absolute');
    }
    return undefined;
  }
}

function parentParts(path: string): string[] {
  const parts = path.split('/');
  parts.pop();
  return parts;
}
