import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { clusterPrefix, tableKey, validateCluster } from './keys.js';

describe('store keys', () => {
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
});
