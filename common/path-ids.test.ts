import { describe, expect, it } from 'vitest';
import { ConfigError, fromErrorInfo, toErrorInfo } from './errors.js';
import { checkPathId, InvalidIdError, isPathId, MAX_PATH_ID_CHARS } from './path-ids.js';

describe('path ids', () => {
  it('takes letters, digits, dots, dashes and underscores', () => {
    for (const id of [
      'job-1',
      'job_3f9a',
      'a',
      'run.2024-01-01',
      '..a',
      'a..b',
      '...',
      'x'.repeat(MAX_PATH_ID_CHARS),
    ]) {
      expect(isPathId(id), id).toBe(true);
      expect(checkPathId(id, '--submission-id')).toBe(id);
    }
  });

  it('refuses . and .., separators, other characters, empty and over-long ids', () => {
    for (const id of [
      '.',
      '..',
      '',
      '../x',
      'a/b',
      'a\\b',
      '/abs',
      'a b',
      'a\0b',
      'é',
      'a:b',
      'x'.repeat(MAX_PATH_ID_CHARS + 1),
    ]) {
      expect(isPathId(id), JSON.stringify(id)).toBe(false);
      expect(() => checkPathId(id, 'submission_id')).toThrow(InvalidIdError);
    }
  });

  it('names the field and the rule, and shows a long id clipped', () => {
    const err = (() => {
      try {
        checkPathId('..', '--submission-id');
      } catch (e) {
        return e as InvalidIdError;
      }
    })()!;
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toBe(
      `invalid --submission-id "..": it becomes a file name, so use 1-${MAX_PATH_ID_CHARS} letters, digits, '.', '_' or '-', and not '.' or '..'`,
    );
    expect(err.fields).toMatchObject({ field: '--submission-id', id: '..' });
    const long = 'y/'.repeat(5000);
    expect(() => checkPathId(long, 'submission_id')).toThrow(/… \(10000 characters\)/);
  });

  it('keeps its class across the wire', () => {
    let err: unknown;
    try {
      checkPathId('a/b', 'submission_id');
    } catch (e) {
      err = e;
    }
    const back = fromErrorInfo(JSON.parse(JSON.stringify(toErrorInfo(err))));
    expect(back).toBeInstanceOf(InvalidIdError);
    expect((back as InvalidIdError).fields.field).toBe('submission_id');
  });
});
