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
  CallCancelledError,
  type ClawrayError,
  ConfigError,
  DeadlineExceededError,
  fromErrorInfo,
  InfeasibleError,
  InternalError,
  NotFoundError,
  PendingCallsLimitExceededError,
  PermissionDeniedError,
  SchedulingTimeoutError,
  toErrorInfo,
  UnavailableError,
} from './errors.js';

const ERROR_TRAILER = 'clawray-error-bin';

function statusCodeOf(err: unknown): grpc.status {
  if (err instanceof ConfigError) return grpc.status.INVALID_ARGUMENT;
  if (err instanceof AuthError) return grpc.status.UNAUTHENTICATED;
  if (err instanceof PermissionDeniedError) return grpc.status.PERMISSION_DENIED;
  if (err instanceof NotFoundError) return grpc.status.NOT_FOUND;
  if (err instanceof AlreadyExistsError) return grpc.status.ALREADY_EXISTS;
  if (err instanceof InfeasibleError) return grpc.status.FAILED_PRECONDITION;
  if (err instanceof SchedulingTimeoutError || err instanceof DeadlineExceededError)
    return grpc.status.DEADLINE_EXCEEDED;
  if (err instanceof CallCancelledError) return grpc.status.CANCELLED;
  if (err instanceof PendingCallsLimitExceededError) return grpc.status.RESOURCE_EXHAUSTED;
  if (err instanceof ActorUnavailableError || err instanceof UnavailableError) return grpc.status.UNAVAILABLE;
  if (err instanceof ActorDiedError) return grpc.status.ABORTED;
  if (err instanceof ActorError) return grpc.status.UNKNOWN;
  return grpc.status.INTERNAL;
}

/** A clawray error as a gRPC status: code, message and the full error for the trailer. */
export interface WireStatus {
  code: grpc.status;
  details: string;
  /** JSON of the error's ErrorInfo, sent in the `clawray-error-bin` trailer. */
  errorTrailer: Buffer;
}

export function toWireStatus(err: unknown): WireStatus {
  return {
    code: statusCodeOf(err),
    details: err instanceof Error ? err.message : String(err),
    errorTrailer: Buffer.from(JSON.stringify(toErrorInfo(err))),
  };
}

export function toServiceError(err: unknown): Partial<grpc.ServiceError> {
  const status = toWireStatus(err);
  const metadata = new grpc.Metadata();
  metadata.set(ERROR_TRAILER, status.errorTrailer);
  return { code: status.code, details: status.details, metadata };
}

/** Turns a failed gRPC call into a clawray error; `target` names what was being called. */
export function fromServiceError(err: unknown, target: string): ClawrayError | Error {
  const se = err as Partial<grpc.ServiceError>;
  const raw = se.metadata?.get(ERROR_TRAILER)?.[0];
  return fromWireStatus(
    {
      code: se.code ?? grpc.status.UNKNOWN,
      details: se.details ?? se.message ?? '',
      errorTrailer: raw ? Buffer.from(raw as Buffer) : undefined,
    },
    target,
    err,
  );
}

export function fromWireStatus(
  status: { code: number; details: string; errorTrailer?: Buffer },
  target: string,
  cause?: unknown,
): ClawrayError | Error {
  if (status.errorTrailer && status.errorTrailer.length > 0) {
    try {
      return fromErrorInfo(JSON.parse(status.errorTrailer.toString('utf8')));
    } catch {
      // Fall through to the status code: a trailer we cannot read is as good as none.
    }
  }
  const options = {
    cause: cause ?? new Error(`${grpc.status[status.code] ?? status.code}: ${status.details}`),
    fields: { target },
  };
  switch (status.code) {
    case grpc.status.UNAVAILABLE:
    case grpc.status.DEADLINE_EXCEEDED:
    case grpc.status.CANCELLED:
      return new UnavailableError(`${target} is unavailable: ${status.details}`, options);
    case grpc.status.UNAUTHENTICATED:
      return new AuthError(status.details || 'unauthenticated', options);
    case grpc.status.PERMISSION_DENIED:
      return new PermissionDeniedError(status.details || 'permission denied', options);
    default:
      return new InternalError(`${target} failed: ${status.details}`, options);
  }
}

export { ERROR_TRAILER };
