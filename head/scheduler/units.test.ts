import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import type { ResourceRequest } from '../../common/resources.js';
import {
  addInto,
  cloneVector,
  describeVector,
  firstShortfall,
  fitsIn,
  formatAmount,
  fromUnits,
  isZero,
  kindsOf,
  subtractFrom,
  sumVectors,
  toKeyedRecord,
  toResourceRequest,
  toUnits,
  toUnitVector,
  UNIT,
  zeroVector,
} from './units.js';

const req = (r: Partial<ResourceRequest> = {}): ResourceRequest => ({
  numCpus: 0,
  numGpus: 0,
  memoryMb: 0,
  custom: {},
  ...r,
});

describe('units', () => {
  it('uses 0.0001 as one unit and converts exactly', () => {
    expect(UNIT).toBe(10_000);
    expect(toUnits(0.25)).toBe(2500);
    expect(toUnits(0.1) + toUnits(0.2)).toBe(toUnits(0.3));
    expect(toUnits(0.0001)).toBe(1);
    expect(fromUnits(2500)).toBe(0.25);
  });

  it('adds and subtracts many fractions without drift', () => {
    const v = toUnitVector(req({ numGpus: 1 }), 't');
    const tenth = toUnitVector(req({ numGpus: 0.1 }), 't');
    for (let i = 0; i < 10; i++) subtractFrom(v, tenth);
    expect(v.gpu).toBe(0);
    for (let i = 0; i < 10; i++) addInto(v, tenth);
    expect(v.gpu).toBe(UNIT);
  });

  it('converts a request and back, keeping only non-zero custom resources', () => {
    const v = toUnitVector(
      req({ numCpus: 2, numGpus: 0.5, memoryMb: 1024, custom: { tpu: 1, none: 0 } }),
      't',
    );
    expect(v).toEqual({ cpu: 20_000, gpu: 5000, mem: 10_240_000, custom: new Map([['tpu', 10_000]]) });
    expect(toResourceRequest(v)).toEqual({ numCpus: 2, numGpus: 0.5, memoryMb: 1024, custom: { tpu: 1 } });
    expect(kindsOf(v)).toEqual(['CPU', 'GPU', 'memory_mb', 'tpu']);
    expect(isZero(toUnitVector(req(), 't'))).toBe(true);
  });

  it('rejects negative amounts, GPU counts above 1 that are not whole, and reserved custom names', () => {
    expect(() => toUnitVector(req({ numCpus: -1 }), 'actor A')).toThrow(ConfigError);
    expect(() => toUnitVector(req({ numCpus: Number.NaN }), 'actor A')).toThrow(/numCpus/);
    expect(() => toUnitVector(req({ numGpus: 1.5 }), 'actor A')).toThrow(/actor A: numGpus 1.5 must be/);
    expect(() => toUnitVector(req({ custom: { GPU: 1 } }), 'actor A')).toThrow(/"GPU" is reserved/);
    expect(() => toUnitVector(req({ custom: { memory_mb: 1 } }), 'actor A')).toThrow(ConfigError);
    expect(toUnitVector(req({ numGpus: 3 }), 'actor A').gpu).toBe(30_000);
  });

  it('compares vectors, custom resources included', () => {
    const have = toUnitVector(req({ numCpus: 4, numGpus: 1, custom: { a: 2 } }), 't');
    expect(fitsIn(toUnitVector(req({ numCpus: 4, custom: { a: 2 } }), 't'), have)).toBe(true);
    expect(fitsIn(toUnitVector(req({ numCpus: 4.0001 }), 't'), have)).toBe(false);
    expect(fitsIn(toUnitVector(req({ custom: { b: 1 } }), 't'), have)).toBe(false);
    expect(firstShortfall(toUnitVector(req({ numCpus: 1, memoryMb: 1, custom: { a: 3 } }), 't'), have)).toBe(
      'memory_mb',
    );
    expect(firstShortfall(toUnitVector(req({ numCpus: 1 }), 't'), have)).toBeUndefined();
  });

  it('caps additions at a total so a double release cannot mint resources', () => {
    const total = toUnitVector(req({ numCpus: 4, custom: { a: 1 } }), 't');
    const avail = cloneVector(total);
    addInto(avail, toUnitVector(req({ numCpus: 2, custom: { a: 1 } }), 't'), total);
    expect(avail).toEqual(total);
  });

  it('sums vectors and formats amounts for messages', () => {
    const sum = sumVectors([
      toUnitVector(req({ numGpus: 0.5 }), 't'),
      toUnitVector(req({ numGpus: 0.25 }), 't'),
    ]);
    expect(sum.gpu).toBe(7500);
    expect(formatAmount('GPU', 40_000)).toBe('4 GPU');
    expect(formatAmount('memory_mb', 20_480_000)).toBe('2048 MB of memory');
    expect(formatAmount('tpu', 10_000)).toBe('1 of custom resource "tpu"');
    expect(describeVector(toUnitVector(req({ numCpus: 1, numGpus: 2 }), 't'))).toBe('1 CPU, 2 GPU');
    expect(describeVector(zeroVector())).toBe('no resources');
    expect(toKeyedRecord(toUnitVector(req({ numCpus: 1, custom: { x: 0.5 } }), 't'))).toEqual({
      CPU: 1,
      GPU: 0,
      memory_mb: 0,
      x: 0.5,
    });
  });
});
