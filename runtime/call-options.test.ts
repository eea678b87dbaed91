import { describe, expect, it } from 'vitest';
import { ConfigError } from '../common/errors.js';
import { compileCallOptions } from './call-options.js';

describe('compileCallOptions', () => {
  it('keeps a deadline and a signal', () => {
    const signal = new AbortController().signal;
    expect(compileCallOptions({ deadlineMs: 250, signal })).toEqual({ deadlineMs: 250, signal });
  });

  it('drops keys given as undefined (`{ signal: request.signal }` with no signal)', () => {
    expect(compileCallOptions({ signal: undefined, deadlineMs: undefined })).toEqual({});
  });

  it.each([0, -5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31, '10'])(
    'refuses deadlineMs %s',
    (deadlineMs) => {
      const err = (() => {
        try {
          compileCallOptions({ deadlineMs: deadlineMs as number });
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).fields).toEqual({ field: 'deadlineMs' });
    },
  );

  it('refuses a signal that is not an AbortSignal, and unknown options', () => {
    expect(() => compileCallOptions({ signal: { aborted: false } as never })).toThrow(
      /signal must be an AbortSignal/,
    );
    expect(() => compileCallOptions({ timeout: 5 } as never)).toThrow(/unknown call option 'timeout'/);
    expect(() => compileCallOptions(null as never)).toThrow(ConfigError);
  });
});
