/**
 * What an actor runs: a module and the name of a class it exports. The actor host imports the
 * module and reads `module[className]` (runtime/host-main.ts), so the class name is an
 * export name and never a path. One check for both edges, the SDK's `createActor` and the
 * head's CreateActor (a client that is not the SDK reaches the head directly), so they refuse
 * the same requests with the same words.
 */
import { ConfigError, registerErrorClass } from './errors.js';
import { isSystemModule, systemModuleProblem } from './system-modules.js';

/** Longer export names than this are not names people write. */
export const MAX_CLASS_NAME_CHARS = 256;
/** PATH_MAX: no module specifier longer than a path can be imported. */
export const MAX_MODULE_CHARS = 4096;

/** An actor's module or class name was refused (INVALID_ARGUMENT on the wire). */
export class InvalidActorClassError extends ConfigError {}
registerErrorClass(InvalidActorClassError);

/** An ECMAScript identifier: what `export class Name` and `export default` (`default`) give. */
const IDENTIFIER = /^[\p{ID_Start}$_][\p{ID_Continue}$\u200C\u200D]*$/u;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
const CONTROL = /[\u0000-\u001f\u007f]/;

export const CLASS_NAME_RULE = `a JavaScript identifier of at most ${MAX_CLASS_NAME_CHARS} characters naming a class the module exports (\`default\` for its default export)`;
export const MODULE_RULE =
  'a file: URL, a node: module, a registered clawray: module, or a package name with an optional subpath (the SDK turns a path into a file: URL)';

/** Returns `className` when it is an export name; throws InvalidActorClassError naming the field. */
export function checkActorClassName(className: string): string {
  if (className.length > MAX_CLASS_NAME_CHARS || !IDENTIFIER.test(className)) {
    throw new InvalidActorClassError(
      `invalid actor className ${JSON.stringify(clip(className))}: use ${CLASS_NAME_RULE}`,
      { fields: { field: 'className', className: clip(className) } },
    );
  }
  return className;
}

/** Returns `module` when the actor host can import it as given; throws InvalidActorClassError. */
export function checkActorModule(module: string): string {
  const why = moduleProblem(module);
  if (why) {
    throw new InvalidActorClassError(
      `invalid actor module ${JSON.stringify(clip(module))}: ${why}; use ${MODULE_RULE}`,
      { fields: { field: 'module', module: clip(module) } },
    );
  }
  return module;
}

function moduleProblem(module: string): string | undefined {
  if (module === '') return 'it is empty';
  if (module.length > MAX_MODULE_CHARS) return `it is longer than ${MAX_MODULE_CHARS} characters`;
  if (CONTROL.test(module)) return 'it holds a control character';
  if (module.startsWith('file:')) {
    try {
      return new URL(module).pathname ? undefined : 'the file: URL names no file';
    } catch {
      return 'it is not a valid file: URL';
    }
  }
  if (module.startsWith('node:')) return module.length > 5 ? undefined : 'it names no node: module';
  if (isSystemModule(module)) return systemModuleProblem(module);
  // A package name (`name`, `@scope/name`) and a subpath: resolved from the actor's working
  // directory, so a path here (relative to which machine?) or a `..` in it is refused.
  if (module.startsWith('/') || module.startsWith('.')) {
    return 'a path is not sent as is (relative to which machine?)';
  }
  if (module.includes('\\')) return 'it holds a backslash';
  const parts = module.split('/');
  if (parts.some((p) => p === '' || p === '.' || p === '..')) {
    return "it has an empty, '.' or '..' path segment";
  }
  if (parts[0].startsWith('@') && parts.length < 2) return 'a scoped package needs @scope/name';
  return undefined;
}

/** Values in messages stay short: a refused 1 MB class name is not echoed whole. */
function clip(value: string): string {
  return value.length > 200 ? `${value.slice(0, 200)}…` : value;
}
