/**
 * How the RL job tells "a peer went away" from "the work itself failed". A dead or restarting
 * actor, an unreachable node and a broken connection are ordinary events: the loops retry the
 * work elsewhere (or later). Anything else (an error thrown by an environment or a judge, a
 * configuration mistake) is the work's own failure.
 */
import {
  ActorDiedError,
  ActorError,
  ActorUnavailableError,
  ClawrayError,
  UnavailableError,
} from '../../common/errors.js';

const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'ERR_HTTP2_STREAM_CANCEL',
]);

/** True when `err` (or an error in its cause chain) says an actor or its node is gone. */
export function isPeerLoss(err: unknown, depth = 0): boolean {
  if (!(err instanceof Error) || depth > 8) return false;
  if (
    err instanceof ActorDiedError ||
    err instanceof ActorUnavailableError ||
    err instanceof UnavailableError
  )
    return true;
  // A collective member whose peer died reports it as its own error, wrapped by the call.
  if (err instanceof ActorError && ['CollectiveError', 'ActorDiedError'].includes(err.remoteName))
    return true;
  if (err.name === 'CollectiveError') return true;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
  if (err instanceof ClawrayError && err.retryable) return true;
  return isPeerLoss(err.cause, depth + 1);
}

export const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
