/**
 * The headline command as a person runs it: `clawray job submit examples/toolcall/rl.yaml` in a
 * terminal (a pseudo-terminal made by `script`), on the embedded cluster it starts, shortened
 * with --set. A bar shows the warm start while it runs, and the output ends with the held-out
 * figures, the checkpoint and the commands that serve and evaluate it; the log outlives the
 * embedded cluster in a file.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { distEntry, packageRoot } from '../common/package-root.js';

const hasScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).status === 0;
const WARMUP_STEPS = 30;

describe.skipIf(!hasScript)('clawray job submit examples/toolcall/rl.yaml in a terminal', () => {
  const home = mkdtempSync(join(tmpdir(), 'clawray-pty-'));
  let child: ChildProcess | undefined;
  afterAll(() => {
    if (child?.exitCode === null) process.kill(-child.pid!, 'SIGKILL');
    rmSync(home, { recursive: true, force: true });
  });

  it('draws the warm start as it goes and ends with the held-out figures and the checkpoint', async () => {
    const command = [
      'stty cols 200;',
      'exec',
      process.execPath,
      distEntry('cli/main'),
      'job submit examples/toolcall/rl.yaml',
      `--set spec.train.warmup.steps=${WARMUP_STEPS}`,
      '--set spec.train.steps=2',
      '--set spec.eval.everySteps=100',
    ].join(' ');
    const env: NodeJS.ProcessEnv = { ...process.env, CLAWRAY_HOME: home, CLAWRAY_ADDRESS: '' };
    delete env.CLAWRAY_LOG_LEVEL;
    // Run as from a shell, not from npm (the summary would print `npx clawray`).
    delete env.npm_command;
    delete env.npm_lifecycle_event;
    // Chunks of output that drew a warm-start frame: more than one means the bar moved while the
    // warm start ran, not all at once at its end (no timing: this machine may be loaded).
    let warmChunks = 0;
    let text = '';
    child = spawn('script', ['-qfec', command, '/dev/null'], {
      cwd: packageRoot(),
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      text += chunk;
      if (/warm start \[[#.]+\] \d+\/30 /.test(chunk)) warmChunks++;
    });
    const code = await new Promise<number | null>((resolve) => child!.once('exit', resolve));
    // What a terminal shows in turn: each redraw of the live line, each printed line.
    const frames = text
      .replaceAll('\r\x1b[2K', '\n')
      .split(/\r?\n/)
      .map((f) => f.trimEnd())
      .filter((f) => f.length > 0);
    expect(code, frames.slice(-30).join('\n')).toBe(0);

    // A bar during the warm start; its first frame has no rate yet (no `eta 0s`).
    expect(warmChunks, frames.slice(0, 30).join('\n')).toBeGreaterThan(1);
    const warm = frames.filter((f) => f.startsWith('warm start ['));
    expect(warm[0]).toMatch(/^warm start \[[#.]{24}\] 1\/30 \d+s {2}sft loss \d/);
    expect(warm.at(-1)).toMatch(/^warm start \[#{24}\] 30\/30 \d+s {2}sft loss \d/);
    expect(warm.length).toBeGreaterThan(10);
    expect(frames.some((f) => /^RL {9}\[#{24}\] 2\/2 /.test(f))).toBe(true);
    // The terminal shows bars, not the step lines themselves.
    expect(text).not.toMatch(/warmup step \d+\/30/);

    // The end: the summary, then the job's status.
    const last = frames.indexOf(frames.find((f) => /^toolcall-grpo \(job-\w+\) completed: /.test(f))!);
    expect(last, frames.slice(-15).join('\n')).toBeGreaterThan(0);
    const end = frames.slice(last);
    expect(end[0]).toMatch(
      /^toolcall-grpo \(job-\w+\) completed: 2 RL steps after a 30-step warm start in \d/,
    );
    expect(end[1]).toMatch(
      /^ {2}held-out success {2}\d\.\d{3} at the start → \d\.\d{3} after the warm start → \d\.\d{3} at the end \(RL [+−]\d\.\d{3}\)$/,
    );
    expect(end[2]).toMatch(
      /^ {2}rollouts {10}[\d.]+ samples\/s; trajectories \d+ produced, \d+ trained, \d+ dropped/,
    );
    const checkpoint =
      /^ {2}checkpoint {8}(\S+\/step-(\d+)) \(step 2; optimizer step \2: 30 warm-start \+ \d RL\)$/.exec(
        end[3],
      );
    expect(checkpoint, end.join('\n')).not.toBeNull();
    expect(existsSync(join(checkpoint![1], 'model.safetensors'))).toBe(true);
    // The learning curves, drawn beside the checkpoints.
    expect(end[4]).toBe(`  curves            ${join(dirname(checkpoint![1]), 'learning-curves.svg')}`);
    const log = /^ {2}job log {11}(\S+)$/.exec(end[5])![1];
    expect(end[6]).toBe(`  serve it          clawray serve --model ${checkpoint![1]}`);
    expect(end[7]).toBe(
      `  evaluate it       clawray eval ${checkpoint![1]} --manifest examples/toolcall/rl.yaml`,
    );
    expect(end[8]).toMatch(/^clawray: job 'job-\w+' SUCCEEDED: the entrypoint exited with code 0$/);
    expect(end).toHaveLength(9);

    // The job's whole log outlives the embedded cluster, each checkpoint announced once.
    expect(log.startsWith(join(home, 'logs'))).toBe(true);
    const kept = readFileSync(log, 'utf8');
    expect(kept.match(/ warmup step \d+\/30: sft loss/g)).toHaveLength(WARMUP_STEPS);
    expect(kept.match(/checkpoint after the warm start: /g)).toHaveLength(1);
    expect(kept.match(/checkpoint at step 2: /g)).toHaveLength(1);
    expect(kept).toMatch(/summary \{.*"status":"completed"/);
  }, 180_000);
});
