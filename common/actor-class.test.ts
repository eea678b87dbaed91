import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkActorClassName, checkActorModule, InvalidActorClassError } from './actor-class.js';
import { ConfigError } from './errors.js';
import { packageRoot } from './package-root.js';
import { JOB_SUPERVISOR_MODULE, systemModuleUrl } from './system-modules.js';

const refusal = (fn: () => unknown): InvalidActorClassError => {
  try {
    fn();
  } catch (err) {
    return err as InvalidActorClassError;
  }
  throw new Error('expected a refusal');
};

describe('actor class names', () => {
  it('takes what `module[className]` can name: identifiers, default', () => {
    for (const name of ['Counter', 'default', '_Private', '$x', 'RolloutEngine2', 'Ünïcode', 'a\u200Cb']) {
      expect(checkActorClassName(name)).toBe(name);
    }
  });

  it('refuses paths, dotted paths, empty, spaces and over-long names, naming the field', () => {
    for (const name of [
      '../../../../etc/passwd',
      'a.b',
      'a/b',
      '',
      ' A',
      '1Counter',
      'a-b',
      'x'.repeat(257),
    ]) {
      const err = refusal(() => checkActorClassName(name));
      expect(err, name).toBeInstanceOf(InvalidActorClassError);
      expect(err).toBeInstanceOf(ConfigError);
      expect(err.message).toMatch(/^invalid actor className .*: use a JavaScript identifier/);
      expect(err.fields.field).toBe('className');
    }
  });
});

describe('actor modules', () => {
  it('takes file: URLs, node: modules and package names with subpaths', () => {
    for (const module of [
      'file:///srv/app/counter.mjs',
      'file:///with%20space/x.js',
      'node:events',
      'clawray',
      'clawray/rollout',
      '@scope/pkg',
      '@scope/pkg/sub/path.js',
      'stats',
      'clawray:job-supervisor',
    ]) {
      expect(checkActorModule(module)).toBe(module);
    }
  });

  it('resolves a registered clawray: module in this install, and refuses one not registered', () => {
    expect(systemModuleUrl(JOB_SUPERVISOR_MODULE)).toBe(
      pathToFileURL(join(packageRoot(), 'dist', 'jobs', 'supervisor', 'job-supervisor.js')).href,
    );
    const err = refusal(() => checkActorModule('clawray:jobs'));
    expect(err).toBeInstanceOf(InvalidActorClassError);
    expect(err.message).toMatch(
      /^invalid actor module "clawray:jobs": no clawray module is registered as "clawray:jobs" \(registered: clawray:job-supervisor\)/,
    );
    expect(() => systemModuleUrl('clawray:jobs')).toThrow(/no clawray module is registered/);
  });

  it('refuses empty, raw paths, dot segments, control characters and over-long ones, naming the field', () => {
    const cases: Array<[string, RegExp]> = [
      ['', /it is empty/],
      ['./x.mjs', /a path is not sent as is/],
      ['/etc/passwd', /a path is not sent as is/],
      ['../../etc/passwd', /a path is not sent as is/],
      ['pkg/../../etc/passwd', /'\.\.' path segment/],
      ['pkg//x', /empty, '\.' or '\.\.' path segment/],
      ['pkg\\x', /backslash/],
      ['pk\ng', /control character/],
      ['@scope', /@scope\/name/],
      ['node:', /names no node: module/],
      ['file://%zz', /not a valid file: URL/],
      [`pkg/${'x'.repeat(5000)}`, /longer than 4096/],
    ];
    for (const [module, why] of cases) {
      const err = refusal(() => checkActorModule(module));
      expect(err, module).toBeInstanceOf(InvalidActorClassError);
      expect(err.message).toMatch(why);
      expect(err.message).toMatch(
        /^invalid actor module .*; use a file: URL, a node: module, a registered clawray: module, or a package name/,
      );
      expect(err.fields.field).toBe('module');
      expect(err.message.length).toBeLessThan(600);
    }
  });
});
