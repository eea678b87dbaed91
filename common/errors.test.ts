import { describe, expect, it } from 'vitest';
import {
  ActorDiedError,
  ActorError,
  ActorUnavailableError,
  AlreadyExistsError,
  AuthError,
  actorErrorFrom,
  ClawrayError,
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

/** Every plain (non-ActorError) class and whether it is retryable. */
const plainClasses: Array<[typeof ClawrayError, boolean]> = [
  [ClawrayError, false],
  [ConfigError, false],
  [AuthError, false],
  [NotFoundError, false],
  [AlreadyExistsError, false],
  [InfeasibleError, false],
  [SchedulingTimeoutError, true],
  [ActorDiedError, false],
  [ActorUnavailableError, true],
  [PendingCallsLimitExceededError, true],
  [UnavailableError, true],
  [InternalError, false],
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
