/**
 * The named errors of clawray. Every error carries structured fields (ids, resource names) and
 * says whether retrying the same request can succeed. They cross the wire as `ErrorInfo`
 * (see `toErrorInfo` / `fromErrorInfo`) and become gRPC status codes only in `wire-status.ts`.
 *
 * Errors keep their type across processes (Temporal's failure converter is the model): every
 * `ClawrayError` subclass registers itself with `registerErrorClass` in its own module, and the
 * wire form carries the class name, the names of its ancestors, message, stack, fields, cause
 * chain and `retryable`. A receiving process that loaded the class gets an instance of it back;
 * one that did not gets an instance of the nearest ancestor it knows (at least `ClawrayError`)
 * whose `name`, fields and `retryable` are the remote ones.
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

/** A class of clawray error, as `registerErrorClass` takes it. */
// biome-ignore lint/suspicious/noExplicitAny: subclasses have constructors of their own shapes
export type ErrorClass<E extends ClawrayError = ClawrayError> = abstract new (...args: any[]) => E;

const registry = new Map<string, ErrorClass>();

/**
 * Makes `cls` come back as itself when an error of it crosses the wire into this process. Call
 * it in the class's own module right after its definition, so that any process that can import
 * the class also decodes it. On the way back the constructor is not run: an error's state is its
 * message, stack, fields, cause and `retryable` (put anything else a caller needs in `fields`).
 */
export function registerErrorClass<C extends ErrorClass>(cls: C): C {
  registry.set(cls.name, cls);
  return cls;
}

/** The class registered under `name`, if this process loaded it. */
export function registeredErrorClass(name: string): ErrorClass | undefined {
  return registry.get(name);
}

/** A user's input is wrong: a bad option, manifest field or flag. Terminal. */
export class ConfigError extends ClawrayError {}

/** The cluster token is missing or wrong. Terminal until the token is fixed. */
export class AuthError extends ClawrayError {}

/**
 * The caller has the cluster token but the request is not its to make: it names something
 * that belongs to another job or session (another job's stored log). Terminal.
 */
export class PermissionDeniedError extends ClawrayError {}

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

/**
 * A method of a remote actor threw; `remoteName`/`remoteStack` describe the remote error and
 * `cause` is that error, decoded (so `errorOfClass(err, EngineBusyError)` finds it).
 */
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

/** The cluster could hold the request, but not with what is free now. Retrying later may work. */
export class ResourcesBusyError extends ClawrayError {
  override readonly retryable = true;
}

/** The head (or another clawray server) could not be reached. */
export class UnavailableError extends ClawrayError {
  override readonly retryable = true;
}

/** A clawray server failed in a way that is not the caller's fault. */
export class InternalError extends ClawrayError {}

/**
 * A call ran past its deadline (`handle.options({ deadlineMs })`): the caller stopped waiting
 * and the callee was told to stop. Not retryable as such: the same call would take as long.
 */
export class DeadlineExceededError extends ClawrayError {}

/** A call was cancelled: its caller's AbortSignal fired, or the caller went away. */
export class CallCancelledError extends ClawrayError {}

for (const cls of [
  ClawrayError,
  ConfigError,
  AuthError,
  PermissionDeniedError,
  NotFoundError,
  AlreadyExistsError,
  InfeasibleError,
  SchedulingTimeoutError,
  ActorError,
  ActorDiedError,
  ActorUnavailableError,
  PendingCallsLimitExceededError,
  ResourcesBusyError,
  UnavailableError,
  InternalError,
  DeadlineExceededError,
  CallCancelledError,
]) {
  registerErrorClass(cls);
}

const MAX_CAUSE_DEPTH = 8;

/**
 * The first error in `err`'s cause chain (itself included) that is an instance of `cls`: how a
 * caller recognises an error that an actor method threw, which arrives wrapped in an
 * `ActorError` (`errorOfClass(err, EngineBusyError)`).
 */
export function errorOfClass<E extends ClawrayError>(err: unknown, cls: ErrorClass<E>): E | undefined {
  let current = err;
  for (let depth = 0; depth <= MAX_CAUSE_DEPTH && current !== undefined && current !== null; depth++) {
    if (current instanceof cls) return current as E;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * An error's message followed by its causes' (`top: because middle: because root`), for log
 * lines: a retried call's own message often says only that something broke, its cause why.
 * Causes whose message the line already holds are skipped.
 */
export function errorChainMessage(err: unknown): string {
  const parts: string[] = [];
  let current = err;
  for (let depth = 0; depth <= MAX_CAUSE_DEPTH && current !== undefined && current !== null; depth++) {
    const message = current instanceof Error ? current.message : String(current);
    if (message && !parts.some((p) => p.includes(message))) parts.push(message);
    current = (current as { cause?: unknown }).cause;
  }
  return parts.join(': because ');
}

/**
 * Whether retrying the request that failed with `err` may succeed. The first clawray error in
 * the cause chain decides, looking through wrappers that do not know (an `ActorError` is
 * retryable when the error its method threw is); anything else is not retryable.
 */
export function isRetryable(err: unknown): boolean {
  let current = err;
  for (let depth = 0; depth <= MAX_CAUSE_DEPTH && current !== undefined && current !== null; depth++) {
    if (current instanceof ClawrayError && !(current instanceof ActorError)) return current.retryable;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** The wire form of an error (mirrors the `ErrorInfo` message in proto/common.proto). */
export interface ErrorInfoShape {
  name: string;
  message: string;
  stack: string;
  fieldsJson: string;
  cause?: ErrorInfoShape | null;
  retryable?: boolean;
  /** Names of the error's ancestor classes, nearest first, up to `ClawrayError` (clawray errors only). */
  ancestors?: string[];
}

/** Names of the classes `err`'s class extends, nearest first, through `ClawrayError`. */
function ancestorsOf(err: ClawrayError): string[] {
  const names: string[] = [];
  for (
    let proto = Object.getPrototypeOf(Object.getPrototypeOf(err));
    proto && proto !== Error.prototype;
    proto = Object.getPrototypeOf(proto)
  ) {
    const name = (proto.constructor as { name?: unknown } | undefined)?.name;
    if (typeof name === 'string' && name) names.push(name);
    if (proto === ClawrayError.prototype) break;
  }
  return names;
}

export function toErrorInfo(err: unknown, depth = 0): ErrorInfoShape {
  if (err instanceof Error) {
    const clawray = err instanceof ClawrayError;
    const fields: Record<string, unknown> = clawray ? { ...err.fields } : {};
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
      retryable: clawray ? err.retryable : false,
      ancestors: clawray ? ancestorsOf(err) : [],
    };
  }
  return {
    name: 'Error',
    message: String(err),
    stack: '',
    fieldsJson: '',
    cause: null,
    retryable: false,
    ancestors: [],
  };
}

/** The registered class an error named `name` with these ancestors comes back as. */
function decodingClass(info: ErrorInfoShape): ErrorClass | undefined {
  const own = registry.get(info.name);
  if (own) return own;
  for (const ancestor of info.ancestors ?? []) {
    const cls = registry.get(ancestor);
    if (cls) return cls;
  }
  return undefined;
}

/**
 * Rebuilds an error from its wire form: a registered clawray class comes back as itself with
 * its fields and `retryable`; a clawray error of a class this process never loaded comes back
 * as its nearest registered ancestor, carrying the remote name; any other error as a plain
 * `Error` with the remote name, message and stack.
 */
export function fromErrorInfo(info: ErrorInfoShape): Error {
  const fields = info.fieldsJson ? (JSON.parse(info.fieldsJson) as ErrorFields) : {};
  const cause = info.cause?.name ? fromErrorInfo(info.cause) : undefined;
  const cls = decodingClass(info);
  let err: Error;
  if (cls === ActorError) {
    const { remoteName, remoteStack, ...rest } = fields;
    err = new ActorError(info.message, {
      cause,
      fields: rest,
      remoteName: String(remoteName ?? 'Error'),
      remoteStack: String(remoteStack ?? ''),
    });
    err.name = info.name; // a subclass of ActorError this process never loaded keeps its name
  } else if (cls) {
    // ClawrayError's constructor with the class as new.target: a real Error of that class whose
    // own constructor (with its own signature) does not run.
    const rebuilt = Reflect.construct(ClawrayError, [info.message, { cause, fields }], cls) as ClawrayError;
    // A wire form stored before `retryable` existed keeps the base class's default (false).
    if (typeof info.retryable === 'boolean') (rebuilt as { retryable: boolean }).retryable = info.retryable;
    rebuilt.name = info.name;
    err = rebuilt;
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
