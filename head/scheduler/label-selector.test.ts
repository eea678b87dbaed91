import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { compileLabelSelector, matchesLabels } from './label-selector.js';

const east = { zone: 'us-east', gpu: 'H200' };
const west = { zone: 'us-west' };
const bare = {};

describe('label selector', () => {
  it('matches every node when empty', () => {
    const s = compileLabelSelector({});
    expect(s.empty).toBe(true);
    expect(s.matches(bare)).toBe(true);
    expect(compileLabelSelector(undefined).empty).toBe(true);
  });

  it('v: equal', () => {
    expect(matchesLabels({ zone: 'us-east' }, east)).toBe(true);
    expect(matchesLabels({ zone: 'us-east' }, west)).toBe(false);
    expect(matchesLabels({ zone: 'us-east' }, bare)).toBe(false);
  });

  it('!v: different or missing', () => {
    expect(matchesLabels({ zone: '!us-east' }, east)).toBe(false);
    expect(matchesLabels({ zone: '!us-east' }, west)).toBe(true);
    expect(matchesLabels({ zone: '!us-east' }, bare)).toBe(true);
  });

  it('in(a,b): one of, whitespace allowed', () => {
    expect(matchesLabels({ zone: 'in(us-east,eu)' }, east)).toBe(true);
    expect(matchesLabels({ zone: 'in( eu , us-west )' }, west)).toBe(true);
    expect(matchesLabels({ zone: 'in(eu)' }, east)).toBe(false);
    expect(matchesLabels({ zone: 'in(eu,us-east)' }, bare)).toBe(false);
  });

  it('!in(a,b): none of, or missing', () => {
    expect(matchesLabels({ zone: '!in(us-east,eu)' }, east)).toBe(false);
    expect(matchesLabels({ zone: '!in(us-east,eu)' }, west)).toBe(true);
    expect(matchesLabels({ zone: '!in(us-east,eu)' }, bare)).toBe(true);
  });

  it('requires every clause', () => {
    expect(matchesLabels({ zone: 'us-east', gpu: 'H200' }, east)).toBe(true);
    expect(matchesLabels({ zone: 'us-east', gpu: '!H200' }, east)).toBe(false);
  });

  it('does not read inherited properties as labels', () => {
    expect(matchesLabels({ toString: '!x' }, bare)).toBe(true);
    expect(matchesLabels({ constructor: 'in(x)' }, bare)).toBe(false);
  });

  it.each([
    ['zone', ''],
    ['zone', '!'],
    ['zone', 'in(a,b'],
    ['zone', 'in()'],
    ['zone', 'in(a,,b)'],
    ['zone', 'a,b'],
    ['zone', 'a b'],
    ['zone', '!!a'],
    ['zone', '(a)'],
    [' ', 'a'],
  ])('rejects %j: %j naming the key', (key, value) => {
    let error: unknown;
    try {
      compileLabelSelector({ [key]: value });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain(`labelSelector key "${key}"`);
    expect((error as ConfigError).fields.key).toBe(key);
  });

  it('rejects a non-string value', () => {
    expect(() => compileLabelSelector({ zone: 3 as unknown as string })).toThrow(
      /key "zone".*must be a string/,
    );
  });
});
