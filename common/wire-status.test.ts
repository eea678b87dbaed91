import { Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import {
  ActorDiedError,
  ActorError,
  ActorUnavailableError,
  AlreadyExistsError,
  AuthError,
  CallCancelledError,
  ClawrayError,
  ConfigError,
  DeadlineExceededError,
  InfeasibleError,
  InternalError,
  NotFoundError,
  PendingCallsLimitExceededError,
  PermissionDeniedError,
  SchedulingTimeoutError,
  UnavailableError,
} from './errors.js';
import { fromServiceError, toServiceError } from './wire-status.js';

const cases: Array<[string, () => Error, status]> = [
  [
    'ConfigError',
    () => new ConfigError('bad option', { fields: { field: 'numGpus' } }),
    status.INVALID_ARGUMENT,
  ],
  ['AuthError', () => new AuthError('wrong token'), status.UNAUTHENTICATED],
  ['PermissionDeniedError', () => new PermissionDeniedError('not yours'), status.PERMISSION_DENIED],
  ['NotFoundError', () => new NotFoundError('no actor', { fields: { actorId: 'a1' } }), status.NOT_FOUND],
  ['AlreadyExistsError', () => new AlreadyExistsError('taken'), status.ALREADY_EXISTS],
  ['InfeasibleError', () => new InfeasibleError('no node has 9 GPUs'), status.FAILED_PRECONDITION],
  ['SchedulingTimeoutError', () => new SchedulingTimeoutError('waited too long'), status.DEADLINE_EXCEEDED],
  [
    'PendingCallsLimitExceededError',
    () => new PendingCallsLimitExceededError('too many calls'),
    status.RESOURCE_EXHAUSTED,
  ],
  ['ActorUnavailableError', () => new ActorUnavailableError('restarting'), status.UNAVAILABLE],
  ['UnavailableError', () => new UnavailableError('head down'), status.UNAVAILABLE],
  ['ActorDiedError', () => new ActorDiedError('dead'), status.ABORTED],
  [
    'ActorError',
    () => new ActorError('A.b threw TypeError: x', { remoteName: 'TypeError', remoteStack: 'stack' }),
    status.UNKNOWN,
  ],
  ['InternalError', () => new InternalError('oops'), status.INTERNAL],
  [
    'DeadlineExceededError',
    () => new DeadlineExceededError('too slow', { fields: { deadlineMs: 5 } }),
    status.DEADLINE_EXCEEDED,
  ],
  ['CallCancelledError', () => new CallCancelledError('cancelled'), status.CANCELLED],
  ['ClawrayError', () => new ClawrayError('generic'), status.INTERNAL],
  ['TypeError', () => new TypeError('plain'), status.INTERNAL],
];

/** What the client side sees: a ServiceError with the code, details and trailers. */
function asServiceError(err: unknown): Partial<ServiceError> {
  const se = toServiceError(err);
  return { ...se, message: `${se.code} ${status[se.code!]}: ${se.details}` };
}

describe('toServiceError', () => {
  it.each(cases)('maps %s to its status code with the message as details', (_name, make, code) => {
    const err = make();
    const se = toServiceError(err);
    expect(se.code).toBe(code);
    expect(se.details).toBe(err.message);
    expect(se.metadata).toBeInstanceOf(Metadata);
    expect(se.metadata!.get('clawray-error-bin')).toHaveLength(1);
  });

  it('maps a thrown non-Error to INTERNAL with its string form', () => {
    const se = toServiceError('just a string');
    expect(se.code).toBe(status.INTERNAL);
    expect(se.details).toBe('just a string');
  });
});

describe('fromServiceError with the trailer', () => {
  it.each(cases.filter(([name]) => name !== 'TypeError'))(
    'rebuilds %s as the same class with message and fields',
    (name, make) => {
      const original = make() as ClawrayError;
      const back = fromServiceError(asServiceError(original), 'head');
      expect(back.constructor.name).toBe(name);
      expect(back).toBeInstanceOf(original.constructor);
      expect(back.message).toBe(original.message);
      expect((back as ClawrayError).fields).toEqual(original.fields);
      expect((back as ClawrayError).retryable).toBe(original.retryable);
    },
  );

  it('keeps ActorError remote info', () => {
    const back = fromServiceError(
      asServiceError(new ActorError('A.b threw', { remoteName: 'RangeError', remoteStack: 'RangeError: x' })),
      'actor',
    ) as ActorError;
    expect(back).toBeInstanceOf(ActorError);
    expect(back.remoteName).toBe('RangeError');
    expect(back.remoteStack).toBe('RangeError: x');
  });

  it('rebuilds a non-clawray error as a plain Error with its name', () => {
    const back = fromServiceError(asServiceError(new TypeError('plain')), 'head');
    expect(back).not.toBeInstanceOf(ClawrayError);
    expect(back.name).toBe('TypeError');
    expect(back.message).toBe('plain');
  });

  it('falls back to the status code when the trailer cannot be read', () => {
    const metadata = new Metadata();
    metadata.set('clawray-error-bin', Buffer.from('not json{'));
    const back = fromServiceError({ code: status.UNAVAILABLE, details: 'down', metadata }, 'head');
    expect(back).toBeInstanceOf(UnavailableError);
  });
});

describe('fromServiceError without a trailer', () => {
  it.each([status.UNAVAILABLE, status.DEADLINE_EXCEEDED, status.CANCELLED])(
    'turns status %s into a retryable UnavailableError naming the target',
    (code) => {
      const raw = { code, details: 'connection refused', message: 'x', metadata: new Metadata() };
      const back = fromServiceError(raw, 'head at 10.0.0.1:6380') as UnavailableError;
      expect(back).toBeInstanceOf(UnavailableError);
      expect(back.retryable).toBe(true);
      expect(back.message).toBe('head at 10.0.0.1:6380 is unavailable: connection refused');
      expect(back.fields).toEqual({ target: 'head at 10.0.0.1:6380' });
      expect(back.cause).toBe(raw);
    },
  );

  it('turns UNAUTHENTICATED into an AuthError', () => {
    const back = fromServiceError(
      { code: status.UNAUTHENTICATED, details: 'bad token' },
      'head',
    ) as AuthError;
    expect(back).toBeInstanceOf(AuthError);
    expect(back.retryable).toBe(false);
    expect(back.message).toBe('bad token');
    expect(back.fields).toEqual({ target: 'head' });
  });

  it('turns UNAUTHENTICATED without details into an AuthError saying unauthenticated', () => {
    expect(fromServiceError({ code: status.UNAUTHENTICATED }, 'head').message).toBe('unauthenticated');
  });

  it.each([status.INTERNAL, status.UNKNOWN, status.NOT_FOUND, status.INVALID_ARGUMENT, status.UNIMPLEMENTED])(
    'turns status %s into an InternalError naming the target',
    (code) => {
      const back = fromServiceError({ code, details: 'went wrong' }, 'worker w1') as InternalError;
      expect(back).toBeInstanceOf(InternalError);
      expect(back.retryable).toBe(false);
      expect(back.message).toBe('worker w1 failed: went wrong');
      expect(back.fields).toEqual({ target: 'worker w1' });
    },
  );

  it('uses the message when there are no details', () => {
    const back = fromServiceError(
      Object.assign(new Error('socket hang up'), { code: status.INTERNAL }),
      'head',
    );
    expect(back.message).toBe('head failed: socket hang up');
  });

  it('handles something that is not a ServiceError at all', () => {
    const back = fromServiceError(new Error('weird'), 'head');
    expect(back).toBeInstanceOf(InternalError);
    expect(back.message).toContain('head failed');
  });
});
