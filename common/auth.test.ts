import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Metadata } from '@grpc/grpc-js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AUTH_HEADER,
  authMetadata,
  bearer,
  ensureHeadToken,
  requireClientToken,
  resolveClientToken,
  tokenMatches,
  unauthenticated,
} from './auth.js';
import { AuthError } from './errors.js';

const saved = { token: process.env.CLAWRAY_TOKEN, home: process.env.CLAWRAY_HOME };
let home: string;
let tokenFile: string;

const restore = (name: string, value: string | undefined) => {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
};

beforeEach(() => {
  // A home that does not exist yet: ensureHeadToken must create it.
  home = join(mkdtempSync(join(tmpdir(), 'clawray-auth-')), 'home');
  tokenFile = join(home, 'token');
  process.env.CLAWRAY_HOME = home;
  delete process.env.CLAWRAY_TOKEN;
});

afterEach(() => {
  restore('CLAWRAY_TOKEN', saved.token);
  restore('CLAWRAY_HOME', saved.home);
  rmSync(join(home, '..'), { recursive: true, force: true });
});

const modeOf = (path: string): number => statSync(path).mode & 0o777;
const fileToken = (): string => readFileSync(tokenFile, 'utf8').trim();

describe('ensureHeadToken', () => {
  it('makes a random token and writes it to the token file with mode 0600', () => {
    const t = ensureHeadToken();
    expect(t.token.length).toBeGreaterThanOrEqual(24);
    expect(t.token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(t.source).toBe(tokenFile);
    expect(fileToken()).toBe(t.token);
    expect(modeOf(tokenFile)).toBe(0o600);
    expect(modeOf(home)).toBe(0o700);
  });

  it('reuses the existing token file across calls', () => {
    const first = ensureHeadToken();
    const second = ensureHeadToken();
    expect(second.token).toBe(first.token);
    expect(second.source).toBe(tokenFile);
    expect(fileToken()).toBe(first.token);
  });

  it('makes a different token for a different home', () => {
    const first = ensureHeadToken();
    const other = join(home, 'other');
    process.env.CLAWRAY_HOME = other;
    expect(ensureHeadToken().token).not.toBe(first.token);
  });

  it('tightens the mode of an existing, too-open token file', () => {
    mkdirSync(home, { recursive: true });
    writeFileSync(tokenFile, 'from-file\n', { mode: 0o644 });
    const t = ensureHeadToken();
    expect(t.token).toBe('from-file');
    expect(modeOf(tokenFile)).toBe(0o600);
  });

  it('makes a new token when the file is empty', () => {
    mkdirSync(home, { recursive: true });
    writeFileSync(tokenFile, '  \n');
    const t = ensureHeadToken();
    expect(t.token.length).toBeGreaterThan(0);
    expect(fileToken()).toBe(t.token);
  });

  it('prefers the flag, over CLAWRAY_TOKEN and the file, and writes it to the file', () => {
    ensureHeadToken();
    process.env.CLAWRAY_TOKEN = 'from-env';
    const t = ensureHeadToken('from-flag');
    expect(t).toEqual({ token: 'from-flag', source: '--token' });
    expect(fileToken()).toBe('from-flag');
    expect(modeOf(tokenFile)).toBe(0o600);
  });

  it('uses CLAWRAY_TOKEN over the file, and writes it to the file', () => {
    ensureHeadToken();
    process.env.CLAWRAY_TOKEN = 'from-env';
    expect(ensureHeadToken()).toEqual({ token: 'from-env', source: 'CLAWRAY_TOKEN' });
    expect(fileToken()).toBe('from-env');
  });
});

describe('resolveClientToken', () => {
  it('gives undefined when there is no flag, env or file', () => {
    expect(resolveClientToken()).toBeUndefined();
    expect(existsSync(tokenFile)).toBe(false);
  });

  it('prefers the flag, then CLAWRAY_TOKEN, then the file', () => {
    mkdirSync(home, { recursive: true });
    writeFileSync(tokenFile, 'from-file\n');
    expect(resolveClientToken()).toEqual({ token: 'from-file', source: tokenFile });
    process.env.CLAWRAY_TOKEN = 'from-env';
    expect(resolveClientToken()).toEqual({ token: 'from-env', source: 'CLAWRAY_TOKEN' });
    expect(resolveClientToken('from-flag')).toEqual({ token: 'from-flag', source: '--token' });
  });

  it('ignores an empty flag, an empty env and an empty file', () => {
    process.env.CLAWRAY_TOKEN = '';
    mkdirSync(home, { recursive: true });
    writeFileSync(tokenFile, '\n');
    expect(resolveClientToken('')).toBeUndefined();
  });

  it('reads the token a head wrote', () => {
    const head = ensureHeadToken();
    expect(resolveClientToken()?.token).toBe(head.token);
  });
});

describe('requireClientToken', () => {
  it('throws an AuthError naming the ways to give a token', () => {
    expect(() => requireClientToken()).toThrow(AuthError);
    expect(() => requireClientToken()).toThrow(/--token/);
    expect(() => requireClientToken()).toThrow(/CLAWRAY_TOKEN/);
  });

  it('returns what resolveClientToken found', () => {
    expect(requireClientToken('t')).toEqual({ token: 't', source: '--token' });
  });
});

describe('tokenMatches', () => {
  const token = 'secret-token-123';

  it('accepts the right token', () => {
    expect(tokenMatches(`Bearer ${token}`, token)).toBe(true);
    expect(tokenMatches(bearer(token), token)).toBe(true);
  });

  it('rejects a wrong token of the same length', () => {
    expect(tokenMatches(`Bearer ${'x'.repeat(token.length)}`, token)).toBe(false);
  });

  it('rejects a token of a different length', () => {
    expect(tokenMatches(`Bearer ${token}4`, token)).toBe(false);
    expect(tokenMatches(`Bearer ${token.slice(0, -1)}`, token)).toBe(false);
    expect(tokenMatches('Bearer ', token)).toBe(false);
  });

  it('rejects a value without the Bearer prefix', () => {
    expect(tokenMatches(token, token)).toBe(false);
    expect(tokenMatches(`bearer ${token}`, token)).toBe(false);
    expect(tokenMatches(`Basic ${token}`, token)).toBe(false);
  });

  it('rejects a missing or non-string header', () => {
    expect(tokenMatches(undefined, token)).toBe(false);
    expect(tokenMatches(null, token)).toBe(false);
    expect(tokenMatches(Buffer.from(`Bearer ${token}`), token)).toBe(false);
    expect(tokenMatches([`Bearer ${token}`], token)).toBe(false);
  });

  it('compares bytes, so multi-byte characters of equal string length do not match', () => {
    expect(tokenMatches('Bearer é', 'e')).toBe(false);
    expect(tokenMatches('Bearer é', 'é')).toBe(true);
  });
});

describe('authMetadata / unauthenticated', () => {
  it('sets the authorization header to a Bearer value', () => {
    const md = authMetadata(new Metadata(), 'tok');
    expect(md.get(AUTH_HEADER)).toEqual(['Bearer tok']);
    expect(tokenMatches(md.get(AUTH_HEADER)[0], 'tok')).toBe(true);
  });

  it('unauthenticated() is an AuthError naming the server', () => {
    const err = unauthenticated('head 1.2.3.4:6380');
    expect(err).toBeInstanceOf(AuthError);
    expect(err.message).toContain('head 1.2.3.4:6380');
    expect(err.fields).toEqual({ server: 'head 1.2.3.4:6380' });
  });
});
