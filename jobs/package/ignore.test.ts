import { describe, expect, it } from 'vitest';
import { IgnoreRules } from './ignore.js';

describe('IgnoreRules', () => {
  const cases: [pattern: string, path: string, isDir: boolean, ignored: boolean][] = [
    ['*.log', 'a.log', false, true],
    ['*.log', 'deep/dir/a.log', false, true],
    ['*.log', 'a.log.txt', false, false],
    ['build/', 'build', true, true],
    ['build/', 'src/build', true, true],
    ['build/', 'build', false, false],
    ['/build', 'build', true, true],
    ['/build', 'src/build', true, false],
    ['docs/*.md', 'docs/a.md', false, true],
    ['docs/*.md', 'docs/sub/a.md', false, false],
    ['docs/*.md', 'x/docs/a.md', false, false],
    ['**/cache', 'a/b/cache', true, true],
    ['**/cache', 'cache', true, true],
    ['a/**/z', 'a/z', false, true],
    ['a/**/z', 'a/b/c/z', false, true],
    ['out/**', 'out/x/y', false, true],
    ['out/**', 'out', true, false],
    ['file?.txt', 'file1.txt', false, true],
    ['file?.txt', 'file10.txt', false, false],
    ['[abc].bin', 'b.bin', false, true],
    ['[!abc].bin', 'b.bin', false, false],
    ['[!abc].bin', 'd.bin', false, true],
    ['[a-c]x', 'bx', false, true],
    ['\\#notes', '#notes', false, true],
    ['\\!bang', '!bang', false, true],
    ['trailing   ', 'trailing', false, true],
    ['[unclosed', '[unclosed', false, true],
    ['*', 'anything/at/all', false, true],
    ['a*b', 'a/b', false, false],
  ];

  it.each(cases)('%j on %j (dir: %j) → %j', (pattern, path, isDir, ignored) => {
    expect(new IgnoreRules([pattern]).ignores(path, isDir)).toBe(ignored);
  });

  it('skips comments and blank lines, and the last matching pattern wins', () => {
    const rules = new IgnoreRules().addText('# a comment\n\n*.log\r\n!keep.log\n');
    expect(rules.ignores('x.log', false)).toBe(true);
    expect(rules.ignores('keep.log', false)).toBe(false);
    expect(rules.ignores('# a comment', false)).toBe(false);
    rules.add(['keep.log']);
    expect(rules.ignores('keep.log', false)).toBe(true);
  });
});
