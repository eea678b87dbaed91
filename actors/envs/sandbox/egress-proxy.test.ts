import { describe, expect, it } from 'vitest';
import { HostAllowList } from './egress-proxy.js';

describe('HostAllowList', () => {
  it('matches hosts, subdomains and ports', () => {
    const list = new HostAllowList(['pypi.org', '*.github.com', '10.0.0.5:8080', '[::1]:443']);
    expect(list.allows('pypi.org', 443)).toBe(true);
    expect(list.allows('PyPI.org.', 80)).toBe(true);
    expect(list.allows('files.pypi.org', 443)).toBe(false);
    expect(list.allows('api.github.com', 443)).toBe(true);
    expect(list.allows('github.com', 443)).toBe(false);
    expect(list.allows('evilgithub.com', 443)).toBe(false);
    expect(list.allows('10.0.0.5', 8080)).toBe(true);
    expect(list.allows('10.0.0.5', 22)).toBe(false);
    expect(list.allows('[::1]', 443)).toBe(true);
  });

  it.each(['', 'http://x.com', 'a b', 'x.com:0', 'x.com:70000', '*'])('rejects %j', (bad) => {
    expect(() => new HostAllowList([bad])).toThrow(/allowHosts entry/);
  });
});
