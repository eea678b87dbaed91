import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';
import { logFormat } from './logger.js';
import { distEntry } from './package-root.js';

describe('log format', () => {
  it('is pretty in a terminal and JSON otherwise, unless CLAWRAY_LOG_FORMAT says', () => {
    expect(logFormat({}, true)).toBe('pretty');
    expect(logFormat({}, false)).toBe('json');
    expect(logFormat({ CLAWRAY_LOG_FORMAT: 'json' }, true)).toBe('json');
    expect(logFormat({ CLAWRAY_LOG_FORMAT: 'pretty' }, false)).toBe('pretty');
  });

  it('writes readable lines or JSON lines on stderr', () => {
    const script = `import { createLogger } from ${JSON.stringify(distEntry('common/logger'))};
      createLogger({ component: 'test' }).info({ nodeId: 'node_1' }, 'hello there');`;
    const run = (format: string) =>
      spawnSync(process.execPath, ['--input-type=module', '-e', script], {
        encoding: 'utf8',
        env: { ...process.env, CLAWRAY_LOG_FORMAT: format, CLAWRAY_LOG_LEVEL: 'info' },
      }).stderr;
    const json = JSON.parse(run('json'));
    expect(json).toMatchObject({ level: 30, component: 'test', nodeId: 'node_1', msg: 'hello there' });
    const pretty = run('pretty');
    expect(pretty).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: hello there .*component.*test/);
    expect(pretty).toContain('node_1');
    expect(pretty.trim().split('\n')).toHaveLength(1);
  });
});

describe('clawray --log-format', () => {
  const home = mkdtempSync(join(tmpdir(), 'clawray-log-format-'));
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it('sets the format of the command and refuses an unknown one', async () => {
    const head = spawn(
      process.execPath,
      [distEntry('cli/main'), '--log-format', 'pretty', 'head', 'start', '--port', '0'],
      { env: { ...process.env, CLAWRAY_HOME: home, CLAWRAY_LOG_LEVEL: 'info', CLAWRAY_LOG_FORMAT: '' } },
    );
    try {
      const line = await new Promise<string>((resolve, reject) => {
        createInterface({ input: head.stderr! }).on('line', (l) => {
          if (l.includes('head started')) resolve(l);
        });
        head.once('exit', (code) => reject(new Error(`head exited with ${code}`)));
      });
      expect(line).toMatch(/INFO: head started/);
      expect(line.startsWith('{')).toBe(false);
    } finally {
      head.kill('SIGKILL');
    }
    const bad = spawnSync(process.execPath, [distEntry('cli/main'), '--log-format', 'xml', 'status'], {
      encoding: 'utf8',
    });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--log-format.*xml.*pretty, json/s);
  });
});
