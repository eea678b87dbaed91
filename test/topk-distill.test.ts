import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { distEntry } from '../common/package-root.js';

/**
 * A personal job offline (simulated users, the reaction judge gives OPD hints) with top-K
 * distillation, on the embedded cluster `clawray job submit` starts without an address.
 */
const PERSONAL = (method: 'opd' | 'combine', train: string) => `apiVersion: clawray.dev/v1
kind: RLJob
metadata: { name: personal-topk-${method} }
spec:
  track: personal
  method: ${method}
  model: { path: ./model, init: { preset: tiny } }
  judge: { backend: reaction }
  rollout: { batchSize: 2, maxTokens: 8, temperature: 0.7 }
  train: { steps: 2, lr: 1.0e-3, ${train} }
  serve: { port: 0 }
  user: { preference: lowercase, parallel: 2, turnsPerSession: 2, evalSessions: 1 }
  eval: { everySteps: 0 }
`;

describe('top-K distillation in a job (train.distillTopK)', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  function submit(manifest: string) {
    const dir = mkdtempSync(join(tmpdir(), 'clawray-topk-'));
    const home = mkdtempSync(join(tmpdir(), 'clawray-topk-home-'));
    dirs.push(dir, home);
    writeFileSync(join(dir, 'job.yaml'), manifest);
    const result = spawnSync(
      process.execPath,
      [distEntry('cli/main'), 'job', 'submit', 'job.yaml', '--json'],
      {
        cwd: dir,
        encoding: 'utf8',
        env: { ...process.env, CLAWRAY_ADDRESS: '', CLAWRAY_HOME: home },
        timeout: 120_000,
      },
    );
    return { code: result.status, stdout: result.stdout, stderr: result.stderr };
  }

  const stepLines = (log: string) => log.split('\n').filter((l) => / step \d+\/\d+: reward/.test(l));
  const summaryOf = (stdout: string) => JSON.parse(stdout.trim().split('\n').at(-1)!);
  /** The step line's distillation KL (NaN when the line has none). */
  const distillKl = (line: string) => Number(/distill KL ([\d.e+-]+),/.exec(line)?.[1]);

  it('method opd trains every step on the teacher’s top-K, and each step logs the distillation KL', () => {
    // topk-overlap accepted and run (the reaction judge's votes agree on one hint: nothing to rank).
    const run = submit(PERSONAL('opd', 'distillTopK: 4, hintSelect: topk-overlap'));
    expect(run.stderr).toContain('SUCCEEDED');
    expect(run.code).toBe(0);
    const lines = stepLines(run.stdout);
    expect(lines).toHaveLength(2);
    // An opd sample exists only with a hint, so every step that trained distilled. A batch the
    // simulated user accepted whole trains nothing and is still a step (spec.user counts
    // interactions): its line says 0 samples.
    const trained = lines.filter((l) => !/: .*\b0 samples of/.test(l));
    expect(trained.length).toBeGreaterThan(0);
    for (const line of trained) expect(distillKl(line)).toBeGreaterThanOrEqual(0);
    const summary = summaryOf(run.stdout);
    expect(summary).toMatchObject({ steps: 2, method: 'opd', status: 'SUCCEEDED' });
    expect(summary.trajectories.trained).toBeGreaterThan(0);
  });

  it('method combine distills the turns with a hint (w_opd on the KL) beside the RL term', () => {
    const run = submit(
      PERSONAL('combine', 'distillTopK: 4, combine: { opdWeight: 0.5, rlWeight: 1 }').replace(
        'steps: 2',
        'steps: 4',
      ),
    );
    expect(run.code).toBe(0);
    const lines = stepLines(run.stdout);
    expect(lines).toHaveLength(4);
    // A step of RL-only turns (no hint) has no distillation term; the others log it.
    const kls = lines.filter((l) => l.includes('distill KL')).map(distillKl);
    expect(kls.length).toBeGreaterThan(0);
    for (const kl of kls) expect(kl).toBeGreaterThanOrEqual(0);
    expect(summaryOf(run.stdout)).toMatchObject({ steps: 4, method: 'combine', status: 'SUCCEEDED' });
  });

  it('refuses hintSelect topk-overlap without distillTopK, by name, before starting anything', () => {
    const run = submit(PERSONAL('opd', 'hintSelect: topk-overlap'));
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /spec\.train\.hintSelect.*topk-overlap compares top-K sets; set train\.distillTopK/,
    );
  });
});
