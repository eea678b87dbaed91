/**
 * Every ClawrayError subclass defined outside common/ registers itself in its own module and
 * round-trips by name: class, message, fields, retryable and cause chain, alone and inside the
 * ActorError an actor method's error arrives in.
 */
import { describe, expect, it } from 'vitest';
import { CollectiveError } from '../actors/collective/errors.js';
import { LeaseBusyError, LeaseNotFoundError, PoolExhaustedError } from '../actors/envs/env-pool.js';
import { ElementLookupError } from '../actors/envs/gui/accessibility.js';
import { ActionError } from '../actors/envs/gui/actions.js';
import { ChatEndpointError } from '../actors/envs/personal/user-session.js';
import { GitError } from '../actors/envs/swe/git.js';
import { CalculatorError } from '../actors/envs/toolcall/calculator.js';
import {
  ContextLengthError,
  EngineBusyError,
  GenerationAbortedError,
} from '../actors/rollout/rollout-engine.js';
import { ContextLengthError as ContextLengthErrorOfActor } from '../actors/rollout/rollout-engine-actor.js';
import {
  ActorError,
  actorErrorFrom,
  type ClawrayError,
  type ErrorClass,
  errorOfClass,
  fromErrorInfo,
  isRetryable,
  NotFoundError,
  registeredErrorClass,
  toErrorInfo,
} from '../common/errors.js';
import { TarFormatError } from '../jobs/package/tar.js';
import { PackageTooLargeError } from '../jobs/package/working-dir.js';

const overTheWire = (err: unknown): Error => fromErrorInfo(JSON.parse(JSON.stringify(toErrorInfo(err))));

const classes: Array<[ErrorClass, boolean, Record<string, string | number>]> = [
  [CollectiveError, false, { rank: 1, groupName: 'trainers' }],
  [EngineBusyError, true, { queue: 1024 }],
  [GenerationAbortedError, false, {}],
  [ContextLengthError, false, { promptTokens: 1100, maxContext: 1024 }],
  [LeaseNotFoundError, false, { leaseId: 'l-1' }],
  [PoolExhaustedError, true, { parallel: 4 }],
  [LeaseBusyError, false, { leaseId: 'l-2' }],
  [PackageTooLargeError, false, { bytes: 1e9 }],
  [CalculatorError, false, {}],
  [ActionError, false, { ref: 'e12' }],
  [ElementLookupError, false, { ref: 'e13' }],
  [TarFormatError, false, { entry: 'a/b' }],
];

describe('error classes registered in their own modules', () => {
  it('keeps the actor module exporting the same ContextLengthError', () => {
    expect(ContextLengthErrorOfActor).toBe(ContextLengthError);
  });

  it.each(classes)(
    '%o is registered and round trips with fields, retryable and cause',
    (cls, retryable, fields) => {
      expect(registeredErrorClass(cls.name)).toBe(cls);
      const Ctor = cls as unknown as new (m: string, o: object) => ClawrayError;
      const original = new Ctor(`a ${cls.name}`, {
        fields,
        cause: new NotFoundError('root', { fields: { id: 'r' } }),
      });
      expect(original.retryable).toBe(retryable);
      const back = overTheWire(original) as ClawrayError;
      expect(back).toBeInstanceOf(cls);
      expect(back.constructor).toBe(cls);
      expect(back.name).toBe(cls.name);
      expect(back.message).toBe(`a ${cls.name}`);
      expect(back.fields).toEqual(fields);
      expect(back.retryable).toBe(retryable);
      expect(back.stack).toBe(original.stack);
      expect(back.cause).toBeInstanceOf(NotFoundError);
      expect((back.cause as NotFoundError).fields).toEqual({ id: 'r' });

      // As an actor method's error: wrapped in ActorError, found again by class, retryable kept.
      const wrapped = overTheWire(actorErrorFrom(original, 'Actor.method'));
      expect(wrapped).toBeInstanceOf(ActorError);
      expect((wrapped as ActorError).remoteName).toBe(cls.name);
      const found = errorOfClass(wrapped, cls);
      expect(found).toBeInstanceOf(cls);
      expect(found?.fields).toEqual(fields);
      expect(isRetryable(wrapped)).toBe(retryable);
    },
  );

  it('keeps its parent class for a subclass (ContextLengthError is a ConfigError; LeaseNotFoundError a NotFoundError)', () => {
    expect(overTheWire(new LeaseNotFoundError('gone'))).toBeInstanceOf(NotFoundError);
    expect(toErrorInfo(new ContextLengthError('long')).ancestors).toEqual(['ConfigError', 'ClawrayError']);
  });
});

describe("environments' errors with constructors of their own", () => {
  it('GitError and ChatEndpointError keep their class, fields and retryable', () => {
    const git = overTheWire(new GitError(['apply', 'x.patch'], 1, 'error: patch failed')) as GitError;
    expect(git).toBeInstanceOf(GitError);
    expect(git.fields).toMatchObject({ args: 'apply x.patch', exitCode: 1, stderr: 'error: patch failed' });
    const busy = overTheWire(new ChatEndpointError(429, 'rate limited')) as ChatEndpointError;
    expect(busy).toBeInstanceOf(ChatEndpointError);
    expect(busy.retryable).toBe(true);
    expect(busy.fields.status).toBe(429);
    expect((overTheWire(new ChatEndpointError(400, 'bad')) as ChatEndpointError).retryable).toBe(false);
  });
});
