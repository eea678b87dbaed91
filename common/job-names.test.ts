import { describe, expect, it } from 'vitest';
import { ConfigError } from './errors.js';
import {
  checkEntrypoint,
  checkSubmissionId,
  EntrypointTooLargeError,
  MAX_ENTRYPOINT_BYTES,
} from './job-names.js';
import { InvalidIdError } from './path-ids.js';

describe('checkEntrypoint', () => {
  it('takes a command up to the limit, counted in UTF-8 bytes', () => {
    expect(checkEntrypoint('python train.py')).toBe('python train.py');
    const atLimit = `echo ${'x'.repeat(MAX_ENTRYPOINT_BYTES - 5)}`;
    expect(checkEntrypoint(atLimit)).toBe(atLimit);
    // 'é' is two bytes: half as many characters reach the limit.
    expect(() => checkEntrypoint('é'.repeat(MAX_ENTRYPOINT_BYTES / 2 + 1))).toThrow(EntrypointTooLargeError);
  });

  it('refuses a 1 MB entrypoint with its size, the limit and what to do instead', () => {
    let err: EntrypointTooLargeError | undefined;
    try {
      checkEntrypoint(`echo ${'x'.repeat(1024 * 1024)}`);
    } catch (e) {
      err = e as EntrypointTooLargeError;
    }
    expect(err).toBeInstanceOf(EntrypointTooLargeError);
    expect(err).toBeInstanceOf(ConfigError);
    expect(err!.message).toContain(`the entrypoint is ${1024 * 1024 + 5} bytes`);
    expect(err!.message).toContain(`at most ${MAX_ENTRYPOINT_BYTES} bytes (64 KiB)`);
    expect(err!.message).toContain('put the script in a file in the working dir');
    expect(err!.fields).toEqual({ entrypointBytes: 1024 * 1024 + 5, maxBytes: MAX_ENTRYPOINT_BYTES });
  });

  it('refuses an empty one', () => {
    expect(() => checkEntrypoint('  ')).toThrow('a job needs an entrypoint command');
  });
});

describe('checkSubmissionId', () => {
  it('is the path-id rule, naming the field as given', () => {
    expect(checkSubmissionId('job-1')).toBe('job-1');
    expect(() => checkSubmissionId('..', 'CLAWRAY_JOB_ID')).toThrow(InvalidIdError);
    expect(() => checkSubmissionId('..', 'CLAWRAY_JOB_ID')).toThrow(/^invalid CLAWRAY_JOB_ID "\.\."/);
  });
});
