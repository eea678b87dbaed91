import { describe, expect, it } from 'vitest';
import { ConfigError } from '../common/errors.js';
import { actorOptionsSchema, parseWith } from './actor-options.js';

const parse = (value: unknown) => parseWith(actorOptionsSchema, value, 'actor options');

/** The ConfigError `parse(value)` throws. */
function failure(value: unknown): ConfigError {
  try {
    parse(value);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error(`expected ${JSON.stringify(value)} to be rejected`);
}

describe('actor options', () => {
  it('fills in the defaults', () => {
    expect(parse({})).toEqual({
      numCpus: 0,
      numGpus: 0,
      memoryMb: 0,
      resources: {},
      labelSelector: {},
      getIfExists: false,
      maxRestarts: 0,
      maxTaskRetries: 0,
      maxPendingCalls: -1,
      bundleIndex: -1,
      env: {},
      scheduleTimeoutMs: 0,
      lifetime: 'non_detached',
    });
  });

  it('treats undefined and null as no options', () => {
    expect(parse(undefined).maxRestarts).toBe(0);
    expect(parse(null).maxPendingCalls).toBe(-1);
  });

  it('keeps what is given', () => {
    const o = parse({
      numCpus: 2,
      numGpus: 0.25,
      memoryMb: 1024,
      resources: { 'accelerator_type:H200': 0.001 },
      labelSelector: { zone: 'us-east' },
      name: 'learner',
      namespace: 'rl',
      getIfExists: true,
      maxRestarts: -1,
      maxTaskRetries: 3,
      maxConcurrency: 8,
      maxPendingCalls: 100,
      placementGroup: 'pg-1',
      bundleIndex: 0,
      env: { A: 'b' },
      scheduleTimeoutMs: 5000,
    });
    expect(o.numGpus).toBe(0.25);
    expect(o.maxTaskRetries).toBe(3);
    expect(o.maxConcurrency).toBe(8);
    expect(o.bundleIndex).toBe(0);
    expect(o.placementGroup).toBe('pg-1');
  });

  it('accepts a placement group object with an id', () => {
    expect(parse({ placementGroup: { id: 'pg-2' }, bundleIndex: 1 }).placementGroup).toEqual({ id: 'pg-2' });
  });

  it('accepts whole numbers of GPUs and fractions up to 1', () => {
    expect(parse({ numGpus: 2 }).numGpus).toBe(2);
    expect(parse({ numGpus: 1 }).numGpus).toBe(1);
    expect(parse({ numGpus: 0.5 }).numGpus).toBe(0.5);
    expect(parse({ numGpus: 0.0001 }).numGpus).toBe(0.0001);
  });

  it('rejects numGpus 1.5 with a message naming numGpus', () => {
    const err = failure({ numGpus: 1.5 });
    expect(err.message).toMatch(/^invalid actor options: /);
    expect(err.message).toContain('numGpus');
    expect(err.fields.field).toBe('numGpus');
  });

  it('rejects precision beyond 0.0001', () => {
    for (const value of [{ numGpus: 0.00001 }, { numCpus: 0.12345 }, { memoryMb: 1.00001 }]) {
      const err = failure(value);
      expect(err.message).toContain('more precision than 0.0001');
      expect(err.message).toContain(Object.keys(value)[0]);
    }
    expect(failure({ resources: { disk: 0.00005 } }).message).toContain('resources.disk');
  });

  it('rejects negative and non-finite amounts', () => {
    expect(failure({ numCpus: -1 }).message).toContain('numCpus');
    expect(failure({ memoryMb: Number.POSITIVE_INFINITY }).message).toContain('memoryMb');
  });

  it('rejects getIfExists without a name', () => {
    const err = failure({ getIfExists: true });
    expect(err.message).toContain('getIfExists');
    expect(err.message).toContain('needs a name');
    expect(parse({ getIfExists: true, name: 'x' }).getIfExists).toBe(true);
  });

  it('rejects maxTaskRetries without maxRestarts', () => {
    const err = failure({ maxTaskRetries: 2 });
    expect(err.message).toContain('maxTaskRetries');
    expect(err.message).toContain('maxRestarts');
    expect(failure({ maxTaskRetries: -1, maxRestarts: 0 }).message).toContain('maxTaskRetries');
    expect(parse({ maxTaskRetries: 2, maxRestarts: 1 }).maxTaskRetries).toBe(2);
    expect(parse({ maxTaskRetries: -1, maxRestarts: -1 }).maxTaskRetries).toBe(-1);
  });

  it('rejects bundleIndex without placementGroup', () => {
    const err = failure({ bundleIndex: 0 });
    expect(err.message).toContain('bundleIndex');
    expect(err.message).toContain('placementGroup');
  });

  it('rejects an unknown field, naming it', () => {
    const err = failure({ numGPUs: 1 });
    expect(err.message).toContain('numGPUs');
  });

  it.each(['GPU', 'CPU', 'memory'])('rejects resources with key %s', (key) => {
    const err = failure({ resources: { [key]: 1 } });
    expect(err.message).toContain('resources');
    expect(err.message).toContain('numGpus');
  });

  it('rejects bad integer options', () => {
    expect(failure({ maxRestarts: -2 }).message).toContain('maxRestarts');
    expect(failure({ maxRestarts: 1.5 }).message).toContain('maxRestarts');
    expect(failure({ maxConcurrency: 0 }).message).toContain('maxConcurrency');
    expect(failure({ maxPendingCalls: -5 }).message).toContain('maxPendingCalls');
  });

  it('rejects an empty name and a placement group that is neither id nor object with id', () => {
    expect(failure({ name: '' }).message).toContain('name');
    expect(failure({ placementGroup: { name: 'x' } }).message).toContain('placementGroup');
  });

  it('lists every problem, and names the first in fields.field', () => {
    const err = failure({ numGpus: 1.5, bogus: true });
    expect(err.message).toContain('numGpus');
    expect(err.message).toContain('bogus');
    expect(err.message).toContain('; ');
  });

  it('says (options) for a value that is not an object', () => {
    expect(failure('nope').message).toContain('(options)');
  });
});
