import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadModelDir } from '../actors/models/model-dir.js';
import { initRandomModel } from '../actors/models/model-init.js';
import { distEntry } from '../common/package-root.js';

const root = mkdtempSync(join(tmpdir(), 'clawray-model-cli-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The built CLI (the suite runs after `npm run build`). */
function clawray(args: string[]) {
  const result = spawnSync(process.execPath, [distEntry('cli/main'), ...args], {
    encoding: 'utf8',
    env: { ...process.env, CLAWRAY_DEBUG: '' },
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('clawray model init', () => {
  it('writes a random model directory and prints it with the parameter count', () => {
    const out = join(root, 'tiny');
    const { code, stdout, stderr } = clawray([
      'model',
      'init',
      '--preset',
      'tiny',
      '--out',
      out,
      '--seed',
      '3',
    ]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toBe(`${out}\npreset tiny, 98,688 parameters, f32, seed 3\n`);
    const model = loadModelDir(out);
    expect(model.weights.size).toBeGreaterThan(0);
    // Byte-identical to the library with the same seed.
    const lib = initRandomModel({ preset: 'tiny', outDir: join(root, 'lib'), seed: 3 }).dir;
    for (const f of ['model.safetensors', 'config.json', 'tokenizer.json', 'tokenizer_config.json']) {
      expect(readFileSync(join(out, f)).equals(readFileSync(join(lib, f))), f).toBe(true);
    }
  });

  it('--dtype bf16 --json', () => {
    const out = join(root, 'bf16');
    const { code, stdout } = clawray([
      'model',
      'init',
      '--preset',
      'small',
      '--out',
      out,
      '--dtype',
      'bf16',
      '--json',
    ]);
    expect(code).toBe(0);
    const printed = JSON.parse(stdout);
    expect(printed).toMatchObject({ dir: out, preset: 'small', seed: 0, dtype: 'bf16' });
    expect(printed.parameterCount).toBeGreaterThan(3_000_000);
    expect(loadModelDir(out).config.torch_dtype).toBe('bfloat16');
  });

  it('--max-context sets the context length the model directory declares', () => {
    const out = join(root, 'long');
    const { code, stdout } = clawray([
      'model',
      'init',
      '--preset',
      'tiny',
      '--out',
      out,
      '--max-context',
      '4096',
    ]);
    expect(code).toBe(0);
    expect(stdout).toContain('context 4096 tokens');
    expect(loadModelDir(out).config.max_position_embeddings).toBe(4096);
    const bad = clawray([
      'model',
      'init',
      '--preset',
      'tiny',
      '--out',
      join(root, 'short'),
      '--max-context',
      '8',
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--max-context expects 16 to 1,048,576 tokens, got 8/);
  });

  it.each([
    [['--preset', 'huge', '--out', 'x'], /--preset expects one of tiny, small, qwen3-0.6b, got 'huge'/],
    [['--preset', 'tiny'], /--out DIR is required/],
    [['--out', 'x'], /--preset is required/],
    [['--preset', 'tiny', '--out', 'x', '--seed', '-1'], /--seed expects a whole number/],
    [['--preset', 'tiny', '--out', 'x', '--dtype', 'fp8'], /--dtype expects one of f32, f16, bf16/],
  ])('bad input %j exits 2 with a message and no stack', (args, message) => {
    const { code, stderr } = clawray(['model', 'init', ...args]);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
    expect(stderr).not.toMatch(/\n\s+at /);
  });

  it('refuses to overwrite a model unless --force', () => {
    const out = join(root, 'twice');
    expect(clawray(['model', 'init', '--preset', 'tiny', '--out', out]).code).toBe(0);
    const again = clawray(['model', 'init', '--preset', 'tiny', '--out', out]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('already holds a model');
    expect(again.stderr).toContain('pass --force to overwrite it');
    expect(clawray(['model', 'init', '--preset', 'tiny', '--out', out, '--force', '--seed', '1']).code).toBe(
      0,
    );
  });
});
