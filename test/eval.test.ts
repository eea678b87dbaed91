/**
 * `clawray eval` against a real job: a tiny toolcall job (SFT warm start on oracle traces, then
 * two RL steps) runs on an embedded cluster with `clawray rljob run`, and `clawray eval` on its
 * checkpoint must report the job's last held-out figure exactly; on the base model, the figure
 * the job measured before training.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { distEntry } from '../common/package-root.js';
import type { DriverState } from '../jobs/rl/job-state.js';

/** Six products, each once in train and once held out: 60 SFT steps solve some of them. */
function tasksFile(): string {
  const pairs = [
    [2, 3],
    [4, 2],
    [3, 3],
    [2, 4],
    [1, 5],
    [3, 2],
  ];
  const lines = ['train', 'heldout'].flatMap((split) =>
    pairs.map(([a, b], i) =>
      JSON.stringify({
        id: `${split}-${i}`,
        split,
        question: `Multiply ${a} by ${b}.`,
        answer: String(a * b),
        oracle: [
          {
            content: null,
            tool_calls: [
              {
                id: 'call_1',
                type: 'function',
                function: { name: 'calculator', arguments: JSON.stringify({ expression: `${a}*${b}` }) },
              },
            ],
          },
          { content: `\\boxed{${a * b}}` },
        ],
      }),
    ),
  );
  return `${lines.join('\n')}\n`;
}

const JOB = `apiVersion: clawray.dev/v1
kind: RLJob
metadata: { name: tc-eval }
spec:
  track: toolcall
  method: rl
  model: { path: ./model, init: { preset: tiny, seed: 0 }, chatTemplate: builtin:compact-tools }
  rollout: { batchSize: 2, samplesPerPrompt: 4, maxTurns: 3, maxTokens: 40, temperature: 0.3 }
  judge: { backend: rule, rule: boxed-answer }
  train: { steps: 2, lr: 3.0e-4, warmup: { steps: 60, lr: 2.0e-2 } }
  env:
    tasks: ./tasks.jsonl
    parallel: 4
    settings: { tools: [calculator], systemPrompt: Use the calculator., maxTurns: 3 }
  eval: { everySteps: 2 }
  checkpoint: { everySteps: 2 }
`;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('clawray eval (a job’s held-out evaluation on its own)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'clawray-eval-'));
  const home = join(dir, 'home');
  const jobDir = join(dir, 'job');
  let job: Run;
  let state: DriverState;
  let checkpointDir: string;

  /** The CLI on an embedded cluster (no address anywhere), from the job's directory. */
  function clawray(args: string[], timeoutMs = 120_000): Promise<Run> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [distEntry('cli/main'), ...args], {
        cwd: jobDir,
        env: { ...process.env, CLAWRAY_ADDRESS: '', CLAWRAY_HOME: home, CLAWRAY_DEBUG: '' },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => {
        stdout += d;
      });
      child.stderr.on('data', (d) => {
        stderr += d;
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.on('error', reject);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
  }

  const jsonLine = (stdout: string) => JSON.parse(stdout.trim().split('\n').at(-1)!);

  beforeAll(async () => {
    mkdirSync(jobDir, { recursive: true });
    writeFileSync(join(jobDir, 'tasks.jsonl'), tasksFile());
    writeFileSync(join(jobDir, 'job.yaml'), JOB);
    job = await clawray(['rljob', 'run', 'job.yaml'], 280_000);
    if (job.code !== 0) throw new Error(`the job failed (${job.code}):\n${job.stdout}\n${job.stderr}`);
    const summary = JSON.parse(
      job.stdout
        .trim()
        .split('\n')
        .at(-1)!
        .replace(/^\S+ summary /, ''),
    );
    checkpointDir = summary.checkpointDir;
    state = JSON.parse(readFileSync(join(checkpointDir, 'driver-state.json'), 'utf8'));
  }, 300_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("reproduces the job's last held-out figure from its checkpoint", async () => {
    const last = state.evals.at(-1)!;
    // The job logged it: the final evaluation, at its last step, with the checkpoint's weights.
    expect(last.step).toBe(2);
    expect(job.stdout).toContain(`eval step 2: held-out success ${last.success.toFixed(3)}`);
    const stepDir = join(checkpointDir, `step-${state.trainerStep}`);
    const run = await clawray(['eval', stepDir, '--manifest', 'job.yaml', '--json']);
    expect(run.code).toBe(0);
    const out = jsonLine(run.stdout);
    expect(out).toMatchObject({
      track: 'toolcall',
      metric: 'heldout_success',
      success: last.success,
      rewardMean: last.rewardMean,
      episodes: last.episodes,
      checkpoint: stepDir,
      step: 2,
      recorded: { step: 2, success: last.success, rewardMean: last.rewardMean },
    });
    expect(out.seconds).toBeGreaterThan(0);
    // The same greedy transcript of the first held-out task, and plain progress lines (no TTY).
    expect(run.stderr).toContain(`eval sample: ${last.sample}`);
    expect(run.stderr).toMatch(/^eval 6\/6 heldout-\d: reward /m);
    expect(run.stderr).not.toContain('\r');
  });

  it('starts RL with fresh AdamW moments after the warm start, and checkpoints them so', () => {
    const trainerState = (step: number) =>
      JSON.parse(readFileSync(join(checkpointDir, `step-${step}`, 'trainer_state.json'), 'utf8'));
    // The warm start's last checkpoint is taken after the reset; RL's two steps then count from it.
    expect(trainerState(60)).toMatchObject({ optimizerStep: 60, optimizerMomentSteps: 0 });
    expect(trainerState(state.trainerStep)).toMatchObject({
      optimizerStep: 62,
      optimizerMomentSteps: 2,
    });
  });

  it('takes the submission dir as its newest checkpoint and ends with a human line', async () => {
    const last = state.evals.at(-1)!;
    const run = await clawray(['eval', checkpointDir, '--manifest', 'job.yaml']);
    expect(run.code).toBe(0);
    const stepDir = join(checkpointDir, `step-${state.trainerStep}`);
    const [before, after] = run.stdout.trim().split(/, \d+\.\d s\): /);
    expect(before).toBe(
      `held-out success ${last.success.toFixed(3)} (6 toolcall tasks, mean reward ${last.rewardMean.toFixed(3)}`,
    );
    expect(after).toBe(`${stepDir} (step 2); the job measured ${last.success.toFixed(3)} at step 2`);
  });

  it('scores the base model as the job did before training', async () => {
    const first = state.evals[0];
    expect(first.step).toBe(0);
    const run = await clawray([
      'eval',
      join(home, 'models', 'tiny-seed0'),
      '--manifest',
      'job.yaml',
      '--json',
    ]);
    expect(run.code).toBe(0);
    expect(jsonLine(run.stdout)).toMatchObject({
      success: first.success,
      rewardMean: first.rewardMean,
      step: null,
      recorded: null,
    });
    expect(run.stderr).toContain(`eval sample: ${first.sample}`);
  });

  it('refuses mistakes with exit 2, one line and no stack trace, before starting a cluster', async () => {
    const stepDir = join(checkpointDir, `step-${state.trainerStep}`);
    const cases: Array<[string[], RegExp]> = [
      [
        ['eval', stepDir, '--track', 'toolcall'],
        /is a trainer checkpoint: .* pass --manifest JOB\.yaml .* or --model/,
      ],
      [['eval', dir, '--track', 'toolcall'], /nothing to evaluate here: no model \(config\.json\)/],
      [
        ['eval', stepDir, '--track', 'personal', '--model', 'x'],
        /--track personal scores the simulated user's preference/,
      ],
      [
        ['eval', stepDir, '--manifest', 'job.yaml', '--track', 'gui'],
        /--track gui disagrees with job\.yaml's spec\.track toolcall/,
      ],
      [
        ['eval', stepDir, '--manifest', 'job.yaml', '--sessions', '3'],
        /--sessions applies to the personal track only/,
      ],
      [['eval', '--track', 'toolcall'], /needs what to evaluate/],
    ];
    for (const [args, message] of cases) {
      const run = await clawray(args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr).toMatch(message);
      expect(run.stderr).not.toMatch(/\n\s+at /);
      expect(run.stderr).not.toContain('starting an embedded cluster');
    }
  });
});
