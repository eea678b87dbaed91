/**
 * How the RL job tells "a peer went away" from "the work itself failed". A dead or restarting
 * actor, an unreachable node and a broken connection are ordinary events: the loops retry the
 * work elsewhere (or later). Anything else (an error thrown by an environment or a judge, a
 * configuration mistake) is the work's own failure.
 */
import { ActorDiedError, ActorError, ActorUnavailableError, UnavailableError } from '../../common/errors.js';

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
  // Not every retryable error: a busy engine (EngineBusyError) or an exhausted env pool is
  // alive and says "later", which its caller answers (a 429, a wait), not the failover.
  return isPeerLoss(err.cause, depth + 1);
}
