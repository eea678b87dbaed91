/**
 * Module-resolution hooks (Node's `module.register`) that let a job's Node processes import
 * `clawray` wherever their scripts live: an entrypoint run without a working dir, or a script
 * outside it, finds no `node_modules/clawray` above it, and ESM ignores NODE_PATH. A bare
 * `clawray` or `clawray/…` that Node cannot resolve from the importing file is resolved as the
 * clawray install running the job resolves itself (a package self-reference), so its `exports`
 * apply unchanged. A clawray the script can reach on its own (its own dependency) wins.
 *
 * This file runs on Node's hooks thread; it is loaded by `clawray-import.ts`.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export interface HooksData {
  /** The clawray package root (the folder with its package.json). */
  packageRoot: string;
}

interface ResolveContext {
  conditions: string[];
  importAttributes?: Record<string, string>;
  parentURL?: string;
}

interface ResolveResult {
  url: string;
  format?: string | null;
  shortCircuit?: boolean;
}

type NextResolve = (specifier: string, context?: ResolveContext) => Promise<ResolveResult>;

let selfURL = '';

export async function initialize(data: HooksData): Promise<void> {
  selfURL = pathToFileURL(join(data.packageRoot, 'package.json')).href;
}

export async function resolve(
  specifier: string,
  context: ResolveContext,
  nextResolve: NextResolve,
): Promise<ResolveResult> {
  try {
    return await nextResolve(specifier, context);
  } catch (err) {
    const isClawray = specifier === 'clawray' || specifier.startsWith('clawray/');
    if (!isClawray || !selfURL || (err as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw err;
    return nextResolve(specifier, { ...context, parentURL: selfURL });
  }
}
