import { describe, expect, it } from 'vitest';
import { EngineBusyError } from '../../actors/rollout/rollout-engine.js';
import {
  ActorDiedError,
  ActorError,
  ActorUnavailableError,
  ConfigError,
  UnavailableError,
} from '../../common/errors.js';
import { isPeerLoss } from './failures.js';

const wrapped = (cause: Error) =>
  new ActorError(`generate threw ${cause.name}`, { cause, remoteName: cause.name, remoteStack: '' });

describe('isPeerLoss', () => {
  it('is a dead, restarting or unreachable actor, a broken ring or connection', () => {
    expect(isPeerLoss(new ActorDiedError('gone'))).toBe(true);
    expect(isPeerLoss(new ActorUnavailableError('restarting'))).toBe(true);
    expect(isPeerLoss(new UnavailableError('head down'))).toBe(true);
    expect(isPeerLoss(new ActorError('x', { remoteName: 'CollectiveError', remoteStack: '' }))).toBe(true);
    expect(isPeerLoss(Object.assign(new Error('reset'), { code: 'ECONNRESET' }))).toBe(true);
    expect(isPeerLoss(wrapped(new UnavailableError('judge endpoint down')))).toBe(true);
  });

  it('is not a busy engine, a mistake or a bug: those are answered, not failed over', () => {
    expect(isPeerLoss(wrapped(new EngineBusyError('queue full')))).toBe(false);
    expect(isPeerLoss(wrapped(new ConfigError('prompt too long')))).toBe(false);
    expect(isPeerLoss(new TypeError('undefined is not a function'))).toBe(false);
    expect(isPeerLoss('a string')).toBe(false);
  });
});
