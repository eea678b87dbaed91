import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../common/errors.js';
import { int, intList, jsonNumbers, keyValues, num, resolveAddress } from './cli-parse.js';

/** Asserts that `fn` throws a ConfigError whose message names `flag`. */
function expectConfigError(fn: () => unknown, flag: string): void {
  let thrown: unknown;
  try {
    fn();
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(ConfigError);
  expect((thrown as Error).message).toContain(flag);
}

describe('int', () => {
  it('accepts whole numbers ≥ 0', () => {
    expect(int('--port')('0')).toBe(0);
    expect(int('--port')('6380')).toBe(6380);
    expect(int('--port')('  42 ')).toBe(42);
  });

  it.each(['-1', '1.5', 'abc', '12abc', 'NaN', 'Infinity'])('rejects %j naming the flag', (value) => {
    expectConfigError(() => int('--port')(value), '--port');
  });

  it('quotes the bad value', () => {
    expect(() => int('--gpus')('two')).toThrow("--gpus expects a whole number ≥ 0, got 'two'");
  });

  // Number('') is 0: a blank value must not pass as 0.
  it.each(['', '   '])('rejects the blank value %j naming the flag', (value) => {
    expectConfigError(() => int('--node-timeout-ms')(value), '--node-timeout-ms');
    expectConfigError(() => num('--cpus')(value), '--cpus');
  });
});

describe('num', () => {
  it('accepts numbers ≥ 0, fractional too', () => {
    expect(num('--cpus')('0')).toBe(0);
    expect(num('--cpus')('2.5')).toBe(2.5);
    expect(num('--cpus')('16')).toBe(16);
  });

  it.each(['-0.5', 'abc', 'Infinity', 'NaN', '1,5'])('rejects %j naming the flag', (value) => {
    expectConfigError(() => num('--cpus')(value), '--cpus');
  });
});

describe('intList', () => {
  it('parses comma-separated whole numbers, skipping empty entries', () => {
    expect(intList('--gpu-ids')('0,1,3')).toEqual([0, 1, 3]);
    expect(intList('--gpu-ids')('2')).toEqual([2]);
    expect(intList('--gpu-ids')('0,,1,')).toEqual([0, 1]);
    expect(intList('--gpu-ids')('')).toEqual([]);
  });

  it.each(['0,x', '0,-1', '1.5', 'a,b'])('rejects %j naming the flag', (value) => {
    expectConfigError(() => intList('--gpu-ids')(value), '--gpu-ids');
  });
});

describe('keyValues', () => {
  it('parses k=v pairs', () => {
    expect(keyValues('--labels')('zone=us-east,tier=gpu')).toEqual({ zone: 'us-east', tier: 'gpu' });
    expect(keyValues('--labels')('')).toEqual({});
    expect(keyValues('--labels')('a=1,')).toEqual({ a: '1' });
  });

  it('keeps = inside the value and allows an empty value', () => {
    expect(keyValues('--labels')('expr=a=b,empty=')).toEqual({ expr: 'a=b', empty: '' });
  });

  it('lets a later key win', () => {
    expect(keyValues('--labels')('a=1,a=2')).toEqual({ a: '2' });
  });

  it.each(['novalue', '=v', 'a=1,broken'])('rejects %j naming the flag', (value) => {
    expectConfigError(() => keyValues('--labels')(value), '--labels');
  });
});

describe('jsonNumbers', () => {
  it('parses a JSON object of numbers', () => {
    expect(jsonNumbers('--resources')('{"accelerator_type:H200": 1, "disk": 0.5}')).toEqual({
      'accelerator_type:H200': 1,
      disk: 0.5,
    });
    expect(jsonNumbers('--resources')('{}')).toEqual({});
  });

  it.each([
    'not json',
    '{"a": 1',
    '[1, 2]',
    '1',
    'null',
    '"str"',
    '{"a": "1"}',
    '{"a": null}',
    '{"a": {"b": 1}}',
  ])('rejects %j naming the flag', (value) => {
    expectConfigError(() => jsonNumbers('--resources')(value), '--resources');
  });
});

describe('resolveAddress', () => {
  const saved = { address: process.env.CLAWRAY_ADDRESS, home: process.env.CLAWRAY_HOME };
  let home: string;

  const restore = (name: string, value: string | undefined) => {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  };

  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'clawray-cli-parse-'));
    process.env.CLAWRAY_HOME = home;
    delete process.env.CLAWRAY_ADDRESS;
  });

  afterEach(() => {
    restore('CLAWRAY_ADDRESS', saved.address);
    restore('CLAWRAY_HOME', saved.home);
    rmSync(home, { recursive: true, force: true });
  });

  const writeHeadFile = (content: string) => {
    mkdirSync(home, { recursive: true });
    writeFileSync(join(home, 'head.json'), content);
  };

  it('prefers the flag over everything', () => {
    process.env.CLAWRAY_ADDRESS = 'env:1';
    writeHeadFile(JSON.stringify({ address: 'file:2' }));
    expect(resolveAddress('flag:3')).toBe('flag:3');
  });

  it('uses CLAWRAY_ADDRESS over the head file', () => {
    process.env.CLAWRAY_ADDRESS = 'env:1';
    writeHeadFile(JSON.stringify({ address: 'file:2' }));
    expect(resolveAddress()).toBe('env:1');
  });

  it('uses $CLAWRAY_HOME/head.json when there is no flag or env', () => {
    writeHeadFile(JSON.stringify({ address: 'file:2', pid: process.pid }));
    expect(resolveAddress()).toBe('file:2');
    expect(resolveAddress('')).toBe('file:2');
  });

  it('removes a head file whose pid is not running, and says so in the refusal', () => {
    // A child that has exited: its pid names no process any more.
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    writeHeadFile(JSON.stringify({ address: 'file:2', pid: dead }));
    expect(() => resolveAddress()).toThrow(
      new RegExp(`head recorded in .*head\\.json \\(pid ${dead}, file:2\\) is not running`),
    );
    expect(existsSync(join(home, 'head.json'))).toBe(false);
  });

  it('throws a ConfigError saying how to fix it when nothing is given', () => {
    expect(() => resolveAddress()).toThrow(ConfigError);
    expect(() => resolveAddress()).toThrow(/--address/);
    expect(() => resolveAddress()).toThrow(/CLAWRAY_ADDRESS/);
  });

  it('throws a ConfigError for an unreadable or address-less head file', () => {
    writeHeadFile('{not json');
    expect(() => resolveAddress()).toThrow(ConfigError);
    writeHeadFile(JSON.stringify({ pid: 1 }));
    expect(() => resolveAddress()).toThrow(ConfigError);
  });

  it('ignores an empty CLAWRAY_ADDRESS', () => {
    process.env.CLAWRAY_ADDRESS = '';
    writeHeadFile(JSON.stringify({ address: 'file:2' }));
    expect(resolveAddress()).toBe('file:2');
  });
});
