import { describe, expect, it } from 'vitest';
import {
  ActorDiedError,
  ActorError,
  ActorUnavailableError,
  AlreadyExistsError,
  AuthError,
  actorErrorFrom,
  CallCancelledError,
  ClawrayError,
  ConfigError,
  DeadlineExceededError,
  errorChainMessage,
  errorOfClass,
  fromErrorInfo,
  InfeasibleError,
  InternalError,
  isRetryable,
  NotFoundError,
  PendingCallsLimitExceededError,
  PermissionDeniedError,
  registerErrorClass,
  registeredErrorClass,
  SchedulingTimeoutError,
  toErrorInfo,
  UnavailableError,
} from './errors.js';

/** Every plain (non-ActorError) class and whether it is retryable. */
const plainClasses: Array<[typeof ClawrayError, boolean]> = [
  [ClawrayError, false],
  [ConfigError, false],
  [AuthError, false],
  [PermissionDeniedError, false],
  [NotFoundError, false],
  [AlreadyExistsError, false],
  [InfeasibleError, false],
  [SchedulingTimeoutError, true],
  [ActorDiedError, false],
  [ActorUnavailableError, true],
  [PendingCallsLimitExceededError, true],
  [UnavailableError, true],
  [InternalError, false],
  [DeadlineExceededError, false],
  [CallCancelledError, false],
];

/** Through JSON, as the wire would carry it. */
const overTheWire = (err: unknown): Error => fromErrorInfo(JSON.parse(JSON.stringify(toErrorInfo(err))));

describe('ClawrayError classes', () => {
  it.each(plainClasses)('%o names itself and carries fields', (cls, retryable) => {
    const err = new cls('msg', { fields: { id: 'x' } });
    expect(err).toBeInstanceOf(ClawrayError);
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe(cls.name);
    expect(err.retryable).toBe(retryable);
    expect(err.fields).toEqual({ id: 'x' });
  });

  it('defaults fields to {} and has no cause unless given', () => {
    const err = new ConfigError('x');
    expect(err.fields).toEqual({});
    expect(err.cause).toBeUndefined();
    expect('cause' in err).toBe(false);
  });
});

describe('toErrorInfo / fromErrorInfo', () => {
  it.each(plainClasses)(
    'round trips %o with class, message, fields, retryable and stack',
    (cls, retryable) => {
      const original = new cls(`a ${cls.name} happened`, {
        fields: { actorId: 'a1', count: 3, ok: true, none: null },
      });
      const back = overTheWire(original);
      expect(back).toBeInstanceOf(cls);
      expect(back.constructor).toBe(cls);
      expect(back.name).toBe(cls.name);
      expect(back.message).toBe(`a ${cls.name} happened`);
      expect((back as ClawrayError).fields).toEqual({ actorId: 'a1', count: 3, ok: true, none: null });
      expect((back as ClawrayError).retryable).toBe(retryable);
      expect(back.stack).toBe(original.stack);
    },
  );

  it('writes an empty fieldsJson when there are no fields', () => {
    expect(toErrorInfo(new NotFoundError('gone')).fieldsJson).toBe('');
    expect((overTheWire(new NotFoundError('gone')) as NotFoundError).fields).toEqual({});
  });

  it('round trips ActorError with remoteName and remoteStack, not leaking them into fields', () => {
    const original = new ActorError('Foo.bar threw RangeError: nope', {
      remoteName: 'RangeError',
      remoteStack: 'RangeError: nope\n    at bar',
      fields: { actorId: 'a1' },
    });
    const info = toErrorInfo(original);
    expect(JSON.parse(info.fieldsJson)).toEqual({
      actorId: 'a1',
      remoteName: 'RangeError',
      remoteStack: 'RangeError: nope\n    at bar',
    });
    const back = overTheWire(original) as ActorError;
    expect(back).toBeInstanceOf(ActorError);
    expect(back.message).toBe('Foo.bar threw RangeError: nope');
    expect(back.remoteName).toBe('RangeError');
    expect(back.remoteStack).toBe('RangeError: nope\n    at bar');
    expect(back.fields).toEqual({ actorId: 'a1' });
    expect(back.retryable).toBe(false);
  });

  it('rebuilds an ActorError with defaults when remote info is missing', () => {
    const back = fromErrorInfo({ name: 'ActorError', message: 'm', stack: '', fieldsJson: '' }) as ActorError;
    expect(back).toBeInstanceOf(ActorError);
    expect(back.remoteName).toBe('Error');
    expect(back.remoteStack).toBe('');
  });

  it('round trips a cause chain', () => {
    const root = new TypeError('root cause');
    const middle = new NotFoundError('middle', { cause: root, fields: { id: 'm' } });
    const top = new UnavailableError('top', { cause: middle });
    const back = overTheWire(top);
    expect(back).toBeInstanceOf(UnavailableError);
    const c1 = back.cause as NotFoundError;
    expect(c1).toBeInstanceOf(NotFoundError);
    expect(c1.message).toBe('middle');
    expect(c1.fields).toEqual({ id: 'm' });
    const c2 = c1.cause as Error;
    expect(c2).toBeInstanceOf(Error);
    expect(c2.name).toBe('TypeError');
    expect(c2.message).toBe('root cause');
    expect(c2.cause).toBeUndefined();
  });

  it('stops a cause chain at a bounded depth (including a cycle)', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b; // cycle
    let info = toErrorInfo(b);
    let depth = 0;
    while (info.cause) {
      info = info.cause;
      depth++;
    }
    expect(depth).toBeGreaterThan(0);
    expect(depth).toBeLessThanOrEqual(10);
  });

  it('turns a non-Error cause into an Error with its string form', () => {
    const back = overTheWire(new InternalError('x', { cause: 'plain string' }));
    expect((back.cause as Error).message).toBe('plain string');
  });

  it('brings a non-clawray error back as a plain Error with its name, message and stack', () => {
    const original = new TypeError('not a function');
    const back = overTheWire(original);
    expect(back).toBeInstanceOf(Error);
    expect(back).not.toBeInstanceOf(TypeError);
    expect(back).not.toBeInstanceOf(ClawrayError);
    expect(back.name).toBe('TypeError');
    expect(back.message).toBe('not a function');
    expect(back.stack).toBe(original.stack);
  });

  it('keeps a code property of a non-clawray error (string or number)', () => {
    const sys = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    expect((overTheWire(sys) as { code?: unknown }).code).toBe('ECONNREFUSED');
    const numeric = Object.assign(new Error('grpc'), { code: 14 });
    expect((overTheWire(numeric) as { code?: unknown }).code).toBe(14);
    expect('code' in overTheWire(new Error('no code'))).toBe(false);
  });

  it('keeps a code property of a clawray error in its fields', () => {
    const err = Object.assign(new InternalError('x'), { code: 'E_X' });
    const back = overTheWire(err) as InternalError;
    expect(back).toBeInstanceOf(InternalError);
    expect(back.fields.code).toBe('E_X');
  });

  it('turns a thrown non-Error into an Error with its string form', () => {
    expect(toErrorInfo('oops')).toEqual({
      name: 'Error',
      message: 'oops',
      stack: '',
      fieldsJson: '',
      cause: null,
      retryable: false,
      ancestors: [],
    });
    expect(toErrorInfo(42).message).toBe('42');
    const back = fromErrorInfo(toErrorInfo({ toString: () => 'custom' }));
    expect(back.message).toBe('custom');
  });

  it('accepts a wire form without cause or stack', () => {
    const back = fromErrorInfo({
      name: 'ConfigError',
      message: 'bad',
      stack: '',
      fieldsJson: '{"field":"x"}',
    });
    expect(back).toBeInstanceOf(ConfigError);
    expect((back as ConfigError).fields).toEqual({ field: 'x' });
    expect(back.cause).toBeUndefined();
    expect(typeof back.stack).toBe('string');
  });

  // Error names come from remote user code; Object.prototype's member names must not match a class.
  it.each(['toString', 'constructor', 'hasOwnProperty', 'valueOf'])(
    'brings back a remote error named %s as a plain Error with that name',
    (name) => {
      const back = fromErrorInfo({ name, message: 'weird', stack: '', fieldsJson: '', cause: null });
      expect(back).toBeInstanceOf(Error);
      expect(back.name).toBe(name);
      expect(back.message).toBe('weird');
    },
  );
});

describe('actorErrorFrom', () => {
  it('wraps an Error, naming where and what it was', () => {
    const cause = new RangeError('too big');
    const err = actorErrorFrom(cause, 'Counter.inc');
    expect(err).toBeInstanceOf(ActorError);
    expect(err.message).toBe('Counter.inc threw RangeError: too big');
    expect(err.remoteName).toBe('RangeError');
    expect(err.remoteStack).toBe(cause.stack);
    expect(err.cause).toBe(cause);
    expect(err.retryable).toBe(false);
  });

  it('keeps the name of a custom error class', () => {
    class QuotaError extends Error {
      override name = 'QuotaError';
    }
    const err = actorErrorFrom(new QuotaError('over quota'), 'A.b');
    expect(err.remoteName).toBe('QuotaError');
    expect(err.message).toBe('A.b threw QuotaError: over quota');
  });

  it('wraps a thrown non-Error value', () => {
    const err = actorErrorFrom('just text', 'A.b');
    expect(err.message).toBe('A.b threw Error: just text');
    expect(err.remoteName).toBe('Error');
    expect((err.cause as Error).message).toBe('just text');
  });

  it('survives the wire with its remote info and cause', () => {
    const back = overTheWire(actorErrorFrom(new TypeError('x is not a function'), 'A.b')) as ActorError;
    expect(back).toBeInstanceOf(ActorError);
    expect(back.remoteName).toBe('TypeError');
    expect(back.remoteStack).toContain('x is not a function');
    expect((back.cause as Error).name).toBe('TypeError');
  });
});

describe('the error class registry', () => {
  it('has every class of common registered under its name', () => {
    for (const [cls] of plainClasses) expect(registeredErrorClass(cls.name)).toBe(cls);
    expect(registeredErrorClass('ActorError')).toBe(ActorError);
    expect(registeredErrorClass('NoSuchError')).toBeUndefined();
  });

  it('brings a registered subclass back as itself, with fields, retryable and its own name', () => {
    class QuotaExceededError extends ClawrayError {
      override readonly retryable = true;
    }
    registerErrorClass(QuotaExceededError);
    const back = overTheWire(new QuotaExceededError('over quota', { fields: { quota: 5 } }));
    expect(back).toBeInstanceOf(QuotaExceededError);
    expect(back.name).toBe('QuotaExceededError');
    expect((back as QuotaExceededError).retryable).toBe(true);
    expect((back as QuotaExceededError).fields).toEqual({ quota: 5 });
  });

  it('does not run the constructor of a class with its own signature, and keeps its state', () => {
    class RankError extends ClawrayError {
      constructor(rank: number) {
        super(`rank ${rank} failed`, { fields: { rank } });
      }
    }
    registerErrorClass(RankError);
    const back = overTheWire(new RankError(3)) as RankError;
    expect(back).toBeInstanceOf(RankError);
    expect(back.message).toBe('rank 3 failed');
    expect(back.fields).toEqual({ rank: 3 });
  });

  it('carries the names of the ancestor classes, nearest first', () => {
    class Deep extends ConfigError {}
    expect(toErrorInfo(new Deep('x')).ancestors).toEqual(['ConfigError', 'ClawrayError']);
    expect(toErrorInfo(new ClawrayError('x')).ancestors).toEqual([]);
    expect(toErrorInfo(new TypeError('x')).ancestors).toEqual([]);
  });

  it('brings an unregistered subclass back as its nearest registered ancestor with the remote name', () => {
    // Never registered: as if the receiving process never loaded the module that defines it.
    class LocalOnlyBusyError extends UnavailableError {}
    class LocalOnlyFullError extends ConfigError {}
    class LocalOnlyRetryable extends ClawrayError {
      override readonly retryable = true;
    }
    const busy = overTheWire(new LocalOnlyBusyError('busy', { fields: { queue: 9 } })) as ClawrayError;
    expect(busy).toBeInstanceOf(UnavailableError);
    expect(busy.name).toBe('LocalOnlyBusyError');
    expect(busy.retryable).toBe(true);
    expect(busy.fields).toEqual({ queue: 9 });
    const full = overTheWire(new LocalOnlyFullError('full')) as ClawrayError;
    expect(full).toBeInstanceOf(ConfigError);
    expect(full.name).toBe('LocalOnlyFullError');
    const plain = overTheWire(new LocalOnlyRetryable('later', { fields: { id: 'a' } })) as ClawrayError;
    expect(plain.constructor).toBe(ClawrayError);
    expect(plain.name).toBe('LocalOnlyRetryable');
    expect(plain.retryable).toBe(true);
    expect(plain.fields).toEqual({ id: 'a' });
  });

  it('keeps the retryable the sender had, even where it differs from the class default', () => {
    const info = { ...toErrorInfo(new ConfigError('x')), retryable: true };
    expect((fromErrorInfo(JSON.parse(JSON.stringify(info))) as ConfigError).retryable).toBe(true);
    const old = toErrorInfo(new UnavailableError('x'));
    delete old.retryable; // a wire form written before the field existed
    expect((fromErrorInfo(old) as ClawrayError).retryable).toBe(false);
  });

  it('round trips a typed cause chain inside an ActorError', () => {
    const thrown = new SchedulingTimeoutError('no room', { fields: { waitedMs: 10 } });
    const back = overTheWire(actorErrorFrom(thrown, 'Engine.generate')) as ActorError;
    expect(back).toBeInstanceOf(ActorError);
    expect(back.remoteName).toBe('SchedulingTimeoutError');
    const cause = back.cause as SchedulingTimeoutError;
    expect(cause).toBeInstanceOf(SchedulingTimeoutError);
    expect(cause.retryable).toBe(true);
    expect(cause.fields).toEqual({ waitedMs: 10 });
  });
});

describe('errorOfClass', () => {
  it('finds the class in the error or its cause chain', () => {
    const busy = new UnavailableError('busy');
    const wrapped = actorErrorFrom(busy, 'A.b');
    expect(errorOfClass(busy, UnavailableError)).toBe(busy);
    expect(errorOfClass(wrapped, UnavailableError)).toBe(busy);
    expect(errorOfClass(new Error('outer', { cause: wrapped }), UnavailableError)).toBe(busy);
    expect(errorOfClass(wrapped, ActorError)).toBe(wrapped);
    expect(errorOfClass(wrapped, ConfigError)).toBeUndefined();
    expect(errorOfClass(undefined, ConfigError)).toBeUndefined();
    expect(errorOfClass('text', ConfigError)).toBeUndefined();
  });

  it('finds a subclass by its parent', () => {
    class TooLong extends ConfigError {}
    const err = new TooLong('x');
    expect(errorOfClass(actorErrorFrom(err, 'A.b'), ConfigError)).toBe(err);
  });

  it('stops on a cause cycle', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b;
    expect(errorOfClass(a, ConfigError)).toBeUndefined();
  });
});

describe('isRetryable', () => {
  it.each(plainClasses)('is the class default for %o', (cls, retryable) => {
    expect(isRetryable(new cls('x'))).toBe(retryable);
  });

  it('looks through an ActorError to the error the method threw', () => {
    expect(isRetryable(actorErrorFrom(new UnavailableError('x'), 'A.b'))).toBe(true);
    expect(isRetryable(actorErrorFrom(new ConfigError('x'), 'A.b'))).toBe(false);
    expect(isRetryable(actorErrorFrom(new TypeError('x'), 'A.b'))).toBe(false);
    expect(isRetryable(overTheWire(actorErrorFrom(new UnavailableError('x'), 'A.b')))).toBe(true);
  });

  it('looks through plain errors but lets the first clawray error decide', () => {
    expect(isRetryable(new Error('outer', { cause: new UnavailableError('x') }))).toBe(true);
    // Dead for good, whatever the connection error underneath said.
    expect(isRetryable(new ActorDiedError('dead', { cause: new UnavailableError('x') }))).toBe(false);
    expect(isRetryable(new TypeError('x'))).toBe(false);
    expect(isRetryable('text')).toBe(false);
    expect(isRetryable(undefined)).toBe(false);
  });
});

describe('errorChainMessage', () => {
  it('follows the cause chain, skipping messages the line already holds', () => {
    const root = new Error('actor host 127.0.0.1:5 stopped answering pings');
    const middle = new UnavailableError('stream closed', { cause: root });
    const top = new ActorUnavailableError('actor a became unavailable', { cause: middle });
    expect(errorChainMessage(top)).toBe(
      'actor a became unavailable: because stream closed: because actor host 127.0.0.1:5 stopped answering pings',
    );
    expect(errorChainMessage(new UnavailableError('x: stream closed', { cause: middle }))).toBe(
      'x: stream closed: because actor host 127.0.0.1:5 stopped answering pings',
    );
    expect(errorChainMessage('plain')).toBe('plain');
  });
});
