/**
 * Ids that become file and directory names: a submission id names the job's log file on its
 * node (`logs/jobs/ID.N.log`), its RL checkpoint folder (`checkpoint.dir/ID`) and its stored
 * log's keys; a package hash names the folder a working dir is unpacked into. One rule for all
 * of them, checked where they enter (CLI flags, the head's RPCs), so `..` or `a/b` never
 * reaches a `path.join`.
 */
import { ConfigError, registerErrorClass } from './errors.js';

/** The longest id that may become a path component (a file name is at most 255 bytes). */
export const MAX_PATH_ID_CHARS = 128;

const PATH_ID = /^[A-Za-z0-9._-]+$/;

/** The rule, as refusals state it. */
export const PATH_ID_RULE = `1-${MAX_PATH_ID_CHARS} letters, digits, '.', '_' or '-', and not '.' or '..'`;

/** An id that would become a path component was refused (INVALID_ARGUMENT on the wire). */
export class InvalidIdError extends ConfigError {}
registerErrorClass(InvalidIdError);

/** Whether `id` is safe as one path component: `[A-Za-z0-9._-]{1,128}`, not `.` or `..`. */
export function isPathId(id: string): boolean {
  return id.length <= MAX_PATH_ID_CHARS && PATH_ID.test(id) && id !== '.' && id !== '..';
}

/**
 * Returns `id` when it is a safe path component, else throws InvalidIdError naming `field`
 * (how the user gave it: `--submission-id`, `submission_id`, `CLAWRAY_JOB_ID`) and the rule.
 */
export function checkPathId(id: string, field: string): string {
  if (isPathId(id)) return id;
  const shown =
    id.length > 200 ? `${JSON.stringify(id.slice(0, 200))}… (${id.length} characters)` : JSON.stringify(id);
  throw new InvalidIdError(`invalid ${field} ${shown}: it becomes a file name, so use ${PATH_ID_RULE}`, {
    fields: { field, id: id.slice(0, 200) },
  });
}
