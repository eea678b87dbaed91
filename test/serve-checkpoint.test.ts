/**
 * From a trained agent to a client: a short SFT job teaches the tiny model the calculator call
 * on a few demonstrations of examples/toolcall's task file; its checkpoint is then served by
 * `clawray serve` (by submission id, and by the command the job's summary printed) and called
 * with the openai SDK's `runTools`, which runs a real calculator on the `tool_calls` the model
 * makes; the summary's `clawray eval` command, run as printed, scores the checkpoint as the job did.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { createInterface } from 'node:readline';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { distEntry, packageRoot } from '../common/package-root.js';

const TOKEN = 'serve-checkpoint-token';

const MANIFEST = `apiVersion: clawray.dev/v1
kind: RLJob
metadata: { name: toolcall-agent }
spec:
  track: toolcall
  method: sft
  model: { path: ./model, init: { preset: tiny, seed: 0 }, chatTemplate: builtin:compact-tools }
  rollout: { batchSize: 8, samplesPerPrompt: 1, maxTurns: 3, maxTokens: 40 }
  train: { steps: 80, lr: 1.0e-2 }
  env:
    tasks: ./tasks.jsonl
    parallel: 4
    settings: { tools: [calculator], systemPrompt: Use the calculator., maxTurns: 3 }
  eval: { everySteps: 80, split: train }
`;

/** What a child printed and how it ended. */
function run(argv: string[], env: NodeJS.ProcessEnv, cwd: string) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The arithmetic the toolcall environment's calculator does, for the calls the model makes. */
function calculate(expression: string): string {
  const m = /^\s*(\d+)\s*([-+*])\s*(\d+)\s*$/.exec(expression);
  if (!m) return `Error: cannot evaluate ${expression}`;
  const [a, b] = [Number(m[1]), Number(m[3])];
  return String(m[2] === '+' ? a + b : m[2] === '-' ? a - b : a * b);
}

describe('a job checkpoint served by clawray answers runTools with real tool calls', () => {
  const root = mkdtempSync(join(tmpdir(), 'clawray-serve-ckpt-'));
  const home = join(root, 'home');
  const jobDir = join(root, 'job');
  const bin = join(root, 'bin');
  const servers: ChildProcess[] = [];
  // `clawray` on the PATH, as the summary's commands assume.
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    CLAWRAY_HOME: home,
    CLAWRAY_ADDRESS: '',
    PATH: `${bin}${delimiter}${process.env.PATH}`,
  };
  // Run as from a shell, not from npm (the summary would print `npx clawray`).
  delete env.npm_command;
  delete env.npm_lifecycle_event;
  let summary: string[] = [];
  let job: { heldoutEnd: number; checkpoint: { path: string; step: number; trainerStep: number } };

  beforeAll(async () => {
    mkdirSync(jobDir, { recursive: true });
    mkdirSync(bin);
    writeFileSync(
      join(bin, 'clawray'),
      `#!/bin/sh\nexec "${process.execPath}" "${distEntry('cli/main')}" "$@"\n`,
    );
    chmodSync(join(bin, 'clawray'), 0o755);
    // Four clean demonstrations of the calculator call ("Add AA and BB.") from the example's task file.
    const tasks = readFileSync(join(packageRoot(), 'examples/toolcall/verb-tasks.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.includes('"question":"Add '))
      .slice(0, 4);
    expect(tasks).toHaveLength(4);
    writeFileSync(join(jobDir, 'tasks.jsonl'), `${tasks.join('\n')}\n`);
    writeFileSync(join(jobDir, 'agent.yaml'), MANIFEST);
    const submitted = await run(
      ['clawray', 'job', 'submit', 'agent.yaml', '--submission-id', 'agent-1', '--json'],
      env,
      jobDir,
    );
    expect(submitted.code, submitted.stderr).toBe(0);
    job = JSON.parse(submitted.stdout.trim().split('\n').at(-1)!);
    summary = submitted.stderr.split('\n');
  }, 150_000);

  afterAll(() => {
    for (const s of servers) s.kill('SIGKILL');
    rmSync(root, { recursive: true, force: true });
  });

  /** Starts a `clawray serve` command line (as the shell runs it) and resolves with its base URL. */
  async function serve(commandLine: string): Promise<{ baseURL: string; lines: string[] }> {
    const child = spawn('/bin/sh', ['-c', `exec ${commandLine} --port 0 --token ${TOKEN}`], {
      cwd: jobDir,
      env: { ...env, CLAWRAY_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    servers.push(child);
    const lines: string[] = [];
    const baseURL = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on('line', (line) => {
        lines.push(line);
        const match = / on (http:\/\/\S+\/v1)/.exec(line);
        if (match) resolve(match[1]);
      });
      child.once('exit', (code) =>
        reject(new Error(`${commandLine} exited with ${code}: ${lines.join('\n')}`)),
      );
    });
    return { baseURL, lines };
  }

  it('trains the call and ends with the commands that serve and evaluate its checkpoint', () => {
    expect(job.heldoutEnd).toBe(1);
    expect(job.checkpoint).toMatchObject({ step: 80, trainerStep: 80 });
    expect(summary).toContain(`  serve it          clawray serve --model ${job.checkpoint.path}`);
    expect(summary).toContain(
      `  evaluate it       clawray eval ${job.checkpoint.path} --manifest agent.yaml`,
    );
  });

  it('serves the checkpoint by submission id and answers runTools with tool_calls the calculator answers', async () => {
    const { baseURL, lines } = await serve('clawray serve --model agent-1');
    // Its base: the model the job trained, chat template in place, as the job recorded it.
    expect(
      lines[0].startsWith(
        `clawray serve: checkpoint ${job.checkpoint.path} (job step 80, optimizer step 80): `,
      ),
    ).toBe(true);
    expect(lines[0]).toMatch(/: its weights in \S+\/models\/templated-\w+$/);
    const client = new OpenAI({ baseURL, apiKey: TOKEN, maxRetries: 0 });
    const calls: string[] = [];
    const runner = client.chat.completions.runTools({
      model: 'toolcall-agent',
      temperature: 0,
      max_tokens: 40,
      messages: [
        { role: 'system', content: 'Use the calculator.' },
        { role: 'user', content: 'Add 56 and 57.' },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'calculator',
            description: 'Evaluates an arithmetic expression',
            parameters: {
              type: 'object',
              properties: { expression: { type: 'string' } },
              required: ['expression'],
            },
            parse: JSON.parse,
            function: ({ expression }: { expression: string }) => {
              calls.push(expression);
              return calculate(expression);
            },
          },
        },
      ],
    });
    expect(await runner.finalContent()).toBe('\\boxed{113}');
    expect(calls).toEqual(['56+57']);
    const [first, last] = [runner.allChatCompletions()[0], runner.allChatCompletions().at(-1)!];
    expect(first.choices[0].finish_reason).toBe('tool_calls');
    expect(first.choices[0].message.tool_calls?.[0]).toMatchObject({
      type: 'function',
      function: { name: 'calculator', arguments: '{"expression":"56+57"}' },
    });
    expect(last.choices[0].finish_reason).toBe('stop');
    expect(runner.messages.find((m) => m.role === 'tool')).toMatchObject({ content: '113' });
  });

  it('serves it by the path the summary printed, and evaluates it as printed', async () => {
    const serveLine = summary
      .find((l) => l.startsWith('  serve it'))!
      .slice('  serve it'.length)
      .trim();
    const { baseURL } = await serve(serveLine);
    const health = await fetch(baseURL.replace(/\/v1$/, '/healthz')).then((r) => r.json());
    expect(health).toEqual({ status: 'ok', model: 'toolcall-agent', weightVersion: 80 });

    const evalLine = summary
      .find((l) => l.startsWith('  evaluate it'))!
      .slice('  evaluate it'.length)
      .trim();
    const evaluated = await run(['/bin/sh', '-c', `${evalLine} --json`], env, jobDir);
    expect(evaluated.code, evaluated.stderr).toBe(0);
    expect(JSON.parse(evaluated.stdout.trim().split('\n').at(-1)!)).toMatchObject({
      success: 1,
      step: 80,
      recorded: { step: 80, success: 1 },
    });
  }, 90_000);
});
