import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { entrypointCommand } from './job-commands.js';

/** The arguments `/bin/sh -c COMMAND` hands its program (COMMAND runs printf with NUL after each). */
function argvThroughShell(command: string): string[] {
  const r = spawnSync('/bin/sh', ['-c', command], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.split('\0').slice(0, -1);
}

describe('entrypointCommand', () => {
  it('keeps one word a shell command, as the SDK entrypoint string is', () => {
    expect(entrypointCommand(['echo hello; echo world >&2'])).toBe('echo hello; echo world >&2');
  });

  it('passes several words to the program as they are: spaces, quotes, parentheses, $, empty', () => {
    const words = ["console.log('a (b)')", 'two words', '$HOME', '"q"', '', "it's", 'a\nb', '*'];
    const command = entrypointCommand(['printf', '%s\\0', ...words]);
    expect(argvThroughShell(command)).toEqual(words);
  });

  it('leaves plain words bare', () => {
    expect(entrypointCommand(['node', 'main.mjs', '--steps=3'])).toBe('node main.mjs --steps=3');
  });
});
