/**
 * User code named in a manifest (slime's `--custom-*-path`): `./plugins/reward.js` or
 * `./plugins/reward.js#myReward`, resolved against the job's working dir and imported once.
 */
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError } from './errors.js';

/** `path#name` → the absolute path and the export (default: `default`). */
export function pluginLocation(spec: string, baseDir: string): { path: string; exportName: string } {
  const hash = spec.lastIndexOf('#');
  const file = hash < 0 ? spec : spec.slice(0, hash);
  const exportName = hash < 0 ? 'default' : spec.slice(hash + 1);
  return { path: isAbsolute(file) ? file : resolve(baseDir, file), exportName };
}

/** Imports the module and returns its export, which must be a function. */
export async function loadPluginFunction<F extends (...args: never[]) => unknown>(
  spec: string,
  baseDir: string,
  what: string,
): Promise<F> {
  const { path, exportName } = pluginLocation(spec, baseDir);
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  } catch (err) {
    throw new ConfigError(`${what} plugin ${spec}: cannot import ${path}: ${(err as Error).message}`, {
      cause: err,
      fields: { plugin: what, path },
    });
  }
  const fn = mod[exportName];
  if (typeof fn !== 'function') {
    throw new ConfigError(
      `${what} plugin ${spec}: ${path} has no function export '${exportName}' (exports: ${Object.keys(mod).join(', ') || 'none'})`,
      { fields: { plugin: what, path } },
    );
  }
  return fn as F;
}
