/**
 * The actor side of per-call cancellation: each call an actor process runs gets a `CallScope`,
 * cancelled when the caller's cancel frame arrives (its AbortSignal fired or its deadline
 * passed) or when the caller's stream goes away (the caller died or closed its client). The
 * method reads it with `callSignal()`, which finds the scope through AsyncLocalStorage, so
 * nothing needs to be threaded through the method's arguments.
 *
 * Costs: a scope is a small object per call; its AbortController is made only when the method
 * asks for the signal. AsyncLocalStorage adds tens of nanoseconds to a sync method and a few
 * hundred to an async one (Node 20's promise hooks), far below the cost of a call.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { CallCancelledError, type ClawrayError, DeadlineExceededError } from '../common/errors.js';

export class CallScope {
  private controller?: AbortController;
  private reason?: ClawrayError;
  /** The call has replied: its signal is no longer handed out (work it left behind is not the call). */
  finished = false;

  constructor(
    readonly method: string,
    readonly callId: number,
  ) {}

  get cancelled(): boolean {
    return this.reason !== undefined;
  }

  /** Why the call was cancelled, once it was. */
  get cancelReason(): ClawrayError | undefined {
    return this.reason;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.reason) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  cancel(reason: ClawrayError): void {
    if (this.reason || this.finished) return;
    this.reason = reason;
    this.controller?.abort(reason);
  }
}

/** Why a scope is cancelled, as the error its signal's `reason` carries. */
export function cancelError(
  why: 'caller' | 'deadline' | 'caller-gone',
  scope: { method: string; callId: number },
  actorId: string,
): ClawrayError {
  const fields = { actorId, method: scope.method, callId: scope.callId, reason: why };
  switch (why) {
    case 'deadline':
      return new DeadlineExceededError(`the caller's deadline for ${scope.method} passed`, { fields });
    case 'caller':
      return new CallCancelledError(`the caller cancelled ${scope.method}`, { fields });
    default:
      return new CallCancelledError(`the caller of ${scope.method} went away`, { fields });
  }
}

const storage = new AsyncLocalStorage<CallScope>();

/** Runs `fn` with `scope` as the current call (what `callSignal()` sees, across awaits). */
export function runInScope<R>(scope: CallScope, fn: () => R): R {
  return storage.run(scope, fn);
}

/**
 * Inside an actor method: the AbortSignal of the call being served. It aborts when the caller
 * cancels the call (`handle.options({ signal })`), when the call's deadline passes
 * (`handle.options({ deadlineMs })`), or when the caller goes away; its `reason` is a
 * `CallCancelledError` or `DeadlineExceededError`. Undefined outside an actor call (a method
 * called directly, code that outlives its call).
 *
 *   async generate(request) { return this.model.generate({ ...request, signal: callSignal() }); }
 */
export function callSignal(): AbortSignal | undefined {
  const scope = storage.getStore();
  return scope && !scope.finished ? scope.signal : undefined;
}
