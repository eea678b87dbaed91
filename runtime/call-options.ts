/**
 * Per-call options (grpc-js's deadlines and cancellation are the model), given to
 * `handle.options({ deadlineMs, signal })` and validated there, once, so the call path trusts
 * them. A separate `.options()` view rather than a trailing argument of `call`: a trailing
 * `{ deadlineMs }` could not be told apart from a method whose last argument is an object.
 */
import { ConfigError } from '../common/errors.js';

export interface CallOptions {
  /**
   * Milliseconds each call may take, counted from when it is made. When they pass, the call
   * rejects with `DeadlineExceededError` and the actor's method sees its signal abort.
   */
  deadlineMs?: number;
  /** Aborting it rejects the call with `CallCancelledError` and aborts the method's signal. */
  signal?: AbortSignal;
}

const KNOWN = new Set(['deadlineMs', 'signal']);

/** Checks options as a user wrote them; returns a copy without the keys that were undefined. */
export function compileCallOptions(options: CallOptions): CallOptions {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigError('call options must be an object like { deadlineMs, signal }');
  }
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key)) {
      throw new ConfigError(`unknown call option '${key}': the call options are deadlineMs and signal`, {
        fields: { field: key },
      });
    }
  }
  const out: CallOptions = {};
  const { deadlineMs, signal } = options;
  if (deadlineMs !== undefined) {
    // setTimeout caps at 2^31-1 ms; a longer deadline would fire at once.
    if (typeof deadlineMs !== 'number' || !(deadlineMs > 0) || deadlineMs > 2 ** 31 - 1) {
      throw new ConfigError(
        `deadlineMs must be a number of milliseconds > 0 and ≤ ${2 ** 31 - 1} (got ${String(deadlineMs)})`,
        { fields: { field: 'deadlineMs' } },
      );
    }
    out.deadlineMs = deadlineMs;
  }
  if (signal !== undefined) {
    if (!(signal instanceof AbortSignal)) {
      throw new ConfigError('signal must be an AbortSignal', { fields: { field: 'signal' } });
    }
    out.signal = signal;
  }
  return out;
}
