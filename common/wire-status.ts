/**
 * The one place where clawray errors become gRPC statuses and back. The full error travels in
 * the `clawray-error-bin` trailer so the other side rebuilds the same class with its fields.
 */
import * as grpc from '@grpc/grpc-js';
import {
  ActorDiedError,
  ActorError,
  ActorUnavailableError,
  AlreadyExistsError,
  AuthError,
  type ClawrayError,
  ConfigError,
  fromErrorInfo,
  InfeasibleError,
  InternalError,
  NotFoundError,
  PendingCallsLimitExceededError,
  SchedulingTimeoutError,
  toErrorInfo,
  UnavailableError,
} from './errors.js';

const ERROR_TRAILER = 'clawray-error-bin';

function statusCodeOf(err: unknown): grpc.status {
  if (err instanceof ConfigError) return grpc.status.INVALID_ARGUMENT;
  if (err instanceof AuthError) return grpc.status.UNAUTHENTICATED;
  if (err instanceof NotFoundError) return grpc.status.NOT_FOUND;
  if (err instanceof AlreadyExistsError) return grpc.status.ALREADY_EXISTS;
  if (err instanceof InfeasibleError) return grpc.status.FAILED_PRECONDITION;
  if (err instanceof SchedulingTimeoutError) return grpc.status.DEADLINE_EXCEEDED;
  if (err instanceof PendingCallsLimitExceededError) return grpc.status.RESOURCE_EXHAUSTED;
  if (err instanceof ActorUnavailableError || err instanceof UnavailableError) return grpc.status.UNAVAILABLE;
  if (err instanceof ActorDiedError) return grpc.status.ABORTED;
  if (err instanceof ActorError) return grpc.status.UNKNOWN;
  return grpc.status.INTERNAL;
}

export function toServiceError(err: unknown): Partial<grpc.ServiceError> {
  const metadata = new grpc.Metadata();
  metadata.set(ERROR_TRAILER, Buffer.from(JSON.stringify(toErrorInfo(err))));
  const message = err instanceof Error ? err.message : String(err);
  return { code: statusCodeOf(err), details: message, metadata };
}

/** Turns a failed gRPC call into a clawray error; `target` names what was being called. */
export function fromServiceError(err: unknown, target: string): ClawrayError | Error {
  const se = err as Partial<grpc.ServiceError>;
  const raw = se.metadata?.get(ERROR_TRAILER)?.[0];
  if (raw) {
    try {
      return fromErrorInfo(JSON.parse(Buffer.from(raw as Buffer).toString('utf8')));
    } catch {
      // Fall through to the status code: a trailer we cannot read is as good as none.
    }
  }
  switch (se.code) {
    case grpc.status.UNAVAILABLE:
    case grpc.status.DEADLINE_EXCEEDED:
    case grpc.status.CANCELLED:
      return new UnavailableError(`${target} is unavailable: ${se.details ?? se.message}`, {
        cause: err,
        fields: { target },
      });
    case grpc.status.UNAUTHENTICATED:
      return new AuthError(se.details ?? 'unauthenticated', { cause: err, fields: { target } });
    default:
      return new InternalError(`${target} failed: ${se.details ?? se.message}`, {
        cause: err,
        fields: { target },
      });
  }
}
