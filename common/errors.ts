/**
 * The named errors of clawray. Every error carries structured fields (ids, resource names) and
 * says whether retrying the same request can succeed. They cross the wire as `ErrorInfo`
 * (see `toErrorInfo` / `fromErrorInfo`) and become gRPC status codes only in `wire-status.ts`.
 */

export type ErrorFields = Record<string, string | number | boolean | null | undefined>;

export interface ClawrayErrorOptions {
  cause?: unknown;
  fields?: ErrorFields;
}

export class ClawrayError extends Error {
  /** True when the same request may succeed later (the caller may retry). */
  readonly retryable: boolean = false;
  readonly fields: ErrorFields;

  constructor(message: string, options: ClawrayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.fields = options.fields ?? {};
  }
}

/** A user's input is wrong: a bad option, manifest field or flag. Terminal. */
export class ConfigError extends ClawrayError {}

/** The cluster token is missing or wrong. Terminal until the token is fixed. */
export class AuthError extends ClawrayError {}

/** Nothing by that id or name exists. */
export class NotFoundError extends ClawrayError {}

/** The name is taken in its namespace. */
export class AlreadyExistsError extends ClawrayError {}

/** No node of the cluster could ever satisfy the request. Terminal. */
export class InfeasibleError extends ClawrayError {}

/** The request is feasible but did not get its resources within its timeout. */
export class SchedulingTimeoutError extends ClawrayError {
  override readonly retryable = true;
}

/** A method of a remote actor threw; `remoteName`/`remoteStack` describe the remote error. */
export class ActorError extends ClawrayError {
  readonly remoteName: string;
  readonly remoteStack: string;

  constructor(message: string, options: ClawrayErrorOptions & { remoteName: string; remoteStack: string }) {
    super(message, options);
    this.remoteName = options.remoteName;
    this.remoteStack = options.remoteStack;
  }
}

/** The actor is dead and will not come back. */
export class ActorDiedError extends ClawrayError {}

/** The actor is restarting or unreachable for now; a later call may succeed. */
export class ActorUnavailableError extends ClawrayError {
  override readonly retryable = true;
}

/** The handle already has `maxPendingCalls` calls in flight. */
export class PendingCallsLimitExceededError extends ClawrayError {
  override readonly retryable = true;
}

/** The head (or another clawray server) could not be reached. */
export class UnavailableError extends ClawrayError {
  override readonly retryable = true;
}

/** A clawray server failed in a way that is not the caller's fault. */
export class InternalError extends ClawrayError {}

const errorClasses = {
  ClawrayError,
  ConfigError,
  AuthError,
  NotFoundError,
  AlreadyExistsError,
  InfeasibleError,
  SchedulingTimeoutError,
  ActorError,
  ActorDiedError,
  ActorUnavailableError,
  PendingCallsLimitExceededError,
  UnavailableError,
  InternalError,
} as const;

export type ErrorName = keyof typeof errorClasses;

/** The wire form of an error (mirrors the `ErrorInfo` message in proto/common.proto). */
export interface ErrorInfoShape {
  name: string;
  message: string;
  stack: string;
  fieldsJson: string;
  cause?: ErrorInfoShape | null;
}

const MAX_CAUSE_DEPTH = 8;

export function toErrorInfo(err: unknown, depth = 0): ErrorInfoShape {
  if (err instanceof Error) {
    const fields: Record<string, unknown> = err instanceof ClawrayError ? { ...err.fields } : {};
    if (err instanceof ActorError) {
      fields.remoteName = err.remoteName;
      fields.remoteStack = err.remoteStack;
    }
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' || typeof code === 'number') fields.code ??= code;
    return {
      name: err.name,
      message: err.message,
      stack: err.stack ?? '',
      fieldsJson: Object.keys(fields).length > 0 ? JSON.stringify(fields) : '',
      cause: err.cause !== undefined && depth < MAX_CAUSE_DEPTH ? toErrorInfo(err.cause, depth + 1) : null,
    };
  }
  return { name: 'Error', message: String(err), stack: '', fieldsJson: '', cause: null };
}

/**
 * Rebuilds an error from its wire form: clawray's own classes come back as themselves, any
 * other error as a plain `Error` with the remote name, message and stack.
 */
export function fromErrorInfo(info: ErrorInfoShape): Error {
  const fields = info.fieldsJson ? (JSON.parse(info.fieldsJson) as ErrorFields) : {};
  const cause = info.cause?.name ? fromErrorInfo(info.cause) : undefined;
  // Names come from remote code: only our own classes, never Object.prototype's members.
  const cls = Object.hasOwn(errorClasses, info.name) ? errorClasses[info.name as ErrorName] : undefined;
  let err: Error;
  if (cls === ActorError) {
    const { remoteName, remoteStack, ...rest } = fields;
    err = new ActorError(info.message, {
      cause,
      fields: rest,
      remoteName: String(remoteName ?? 'Error'),
      remoteStack: String(remoteStack ?? ''),
    });
  } else if (cls) {
    err = new (cls as typeof ClawrayError)(info.message, { cause, fields });
  } else {
    err = new Error(info.message, cause === undefined ? undefined : { cause });
    err.name = info.name;
    if (fields.code !== undefined) (err as { code?: unknown }).code = fields.code;
  }
  if (info.stack) err.stack = info.stack;
  return err;
}

/** Wraps an error thrown by user code inside an actor so the caller gets an `ActorError`. */
export function actorErrorFrom(err: unknown, where: string): ActorError {
  const remote = err instanceof Error ? err : new Error(String(err));
  return new ActorError(`${where} threw ${remote.name}: ${remote.message}`, {
    cause: remote,
    remoteName: remote.name,
    remoteStack: remote.stack ?? '',
  });
}
