import { describe, expect, it } from 'vitest';
import { ConfigError, InternalError } from './errors.js';
import {
  bufferKeys,
  clusterPrefix,
  jobStreamName,
  tableKey,
  validateBufferName,
  validateCluster,
} from './redis-keys.js';

describe('redis keys', () => {
  it('builds one hash key per table under the cluster prefix', () => {
    expect(clusterPrefix('default')).toBe('clawray:default:');
    expect(tableKey('prod-1.eu_west', 'placementGroups')).toBe(
      'clawray:prod-1.eu_west:table:placementGroups',
    );
  });

  it('defaults the cluster name and rejects characters that could leak across clusters', () => {
    expect(validateCluster(undefined)).toBe('default');
    for (const bad of ['', 'a:b', 'a*', 'a b', 'a?', '[a]', 'ü', 'a/b']) {
      expect(() => validateCluster(bad), bad).toThrow(ConfigError);
    }
    expect(() => tableKey('ok', 'bogus' as 'nodes')).toThrow(/unknown store table/);
  });

  it('builds the buffer keys under the cluster prefix and checks buffer names the same way', () => {
    expect(bufferKeys(undefined, undefined)).toEqual({
      stream: 'clawray:default:buffer:trajectories:stream',
      payloads: 'clawray:default:buffer:trajectories:payloads',
      dead: 'clawray:default:buffer:trajectories:dead',
      ids: 'clawray:default:buffer:trajectories:ids',
      trained: 'clawray:default:buffer:trajectories:trained',
      stats: 'clawray:default:buffer:trajectories:stats',
    });
    expect(bufferKeys('c1', 'b.2').stream).toBe('clawray:c1:buffer:b.2:stream');
    for (const bad of ['', 'a:b', 'a*', 'a b']) {
      expect(() => validateBufferName(bad), bad).toThrow(/invalid buffer name/);
    }
    expect(() => bufferKeys('a:b', 'x')).toThrow(/invalid cluster name/);
  });

  it('names a job stream per submission and stage, as a valid buffer name', () => {
    expect(jobStreamName('job-3f9a', 'rollouts')).toBe('job.job-3f9a.rollouts');
    expect(jobStreamName('raysubmit_1.x', 'judged')).toBe('job.raysubmit_1.x.judged');
    expect(validateBufferName(jobStreamName('j', 'judged'))).toBe('job.j.judged');
    expect(() => jobStreamName('a:b', 'judged')).toThrow(ConfigError);
    expect(() => jobStreamName('a:b', 'judged')).toThrow(/submission id "a:b"/);
    expect(() => jobStreamName('', 'rollouts')).toThrow(ConfigError);
    expect(() => jobStreamName('j', 'trained' as 'judged')).toThrow(InternalError);
  });
});
