import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { releaseWebgpu, webgpuUnavailable } from '../actors/models/tfjs-backend.js';
import { distEntry } from '../common/package-root.js';
import { TestCluster } from './helpers/processes.js';

const execFileAsync = promisify(execFile);

// The trainer on TensorFlow.js's WebGPU backend (Dawn; lavapipe in CI), where an adapter answers.
const noAdapter = await webgpuUnavailable();
await releaseWebgpu();
if (noAdapter) console.warn(`the webgpu trainer job is skipped: ${noAdapter}`);

/** A toolcall job small enough for a test: a tiny random model, calculator only, short turns. */
const TOOLCALL = (name: string, extra = '') => `apiVersion: clawray.dev/v1
kind: RLJob
metadata: { name: ${name} }
spec:
  track: toolcall
  method: rl
  model: { path: ./model, init: { preset: tiny } }
  rollout: { batchSize: 2, samplesPerPrompt: 2, maxTurns: 2, maxTokens: 12 }
  train: { steps: 3 }
  env: { parallel: 2, settings: { tools: [calculator], systemPrompt: Use the calculator. } }
  eval: { everySteps: 0 }
${extra}`;

// Each job is a `clawray job submit` child bounded by `clawray()`'s 120 s: the tests' limit sits
// above it (a job that took 6.5 s alone took 60 s beside two busy test workers, and failed on
// vitest's default 60 s while its own limit was twice that).
const JOB_TEST_TIMEOUT_MS = 150_000;

describe('clawray job submit MANIFEST (the RL pipeline on a cluster of real processes)', {
  timeout: JOB_TEST_TIMEOUT_MS,
}, () => {
  const tc = new TestCluster();
  const dir = mkdtempSync(join(tmpdir(), 'clawray-rljob-'));

  function clawray(args: string[], timeoutMs = 120_000) {
    const argv = [...args.slice(0, 2), '--address', tc.head!.address, ...args.slice(2)];
    const result = spawnSync(process.execPath, [distEntry('cli/main'), ...argv], {
      encoding: 'utf8',
      env: { ...process.env, CLAWRAY_ADDRESS: '', ...tc.env },
      timeout: timeoutMs,
    });
    return { code: result.status, stdout: result.stdout, stderr: result.stderr };
  }

  function manifest(name: string, text: string, files: Record<string, string> = {}): string {
    const jobDir = join(dir, name);
    mkdirSync(jobDir, { recursive: true });
    for (const [file, content] of Object.entries(files)) {
      mkdirSync(join(jobDir, file, '..'), { recursive: true });
      writeFileSync(join(jobDir, file), content);
    }
    writeFileSync(join(jobDir, 'job.yaml'), text);
    return join(jobDir, 'job.yaml');
  }

  /** Polling must not block this process: the cluster's logs drain into it meanwhile. */
  async function clawrayAsync(args: string[]) {
    const argv = [...args.slice(0, 2), '--address', tc.head!.address, ...args.slice(2)];
    const { stdout } = await execFileAsync(process.execPath, [distEntry('cli/main'), ...argv], {
      env: { ...process.env, CLAWRAY_ADDRESS: '', ...tc.env },
      timeout: 30_000,
    });
    return stdout;
  }

  const summaryOf = (stdout: string) => JSON.parse(stdout.trim().split('\n').at(-1)!);
  const stepLines = (log: string) => log.split('\n').filter((l) => / step \d+\/\d+: reward/.test(l));

  beforeAll(async () => {
    await tc.startHead();
    await tc.startWorker({ cpus: 8, gpus: 2 });
  });
  afterAll(async () => {
    await tc.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  it('trains a toolcall job asynchronously end to end and ends with a JSON summary', () => {
    // A reward that differs between any two conversations, so every step trains samples (whose
    // mismatch and policy lag are then measured).
    const file = manifest(
      'async',
      `${TOOLCALL('tc-async', '  judge: { votes: 1 }\n')}  plugins: { reward: ./plugins/reward.mjs }\n`,
      {
        'plugins/reward.mjs': 'export default ({ messages }) => JSON.stringify(messages).length / 100;\n',
      },
    );
    const run = clawray([
      'job',
      'submit',
      file,
      '--submission-id',
      'rl-async',
      '--json',
      '--set',
      'spec.eval.everySteps=2',
      '--set',
      'spec.rollout.temperature=0.6',
    ]);
    expect(run.stderr).toContain("job 'rl-async' SUCCEEDED");
    expect(run.code).toBe(0);
    const summary = summaryOf(run.stdout);
    expect(summary).toMatchObject({
      submissionId: 'rl-async',
      status: 'SUCCEEDED',
      steps: 3,
      metric: 'heldout_success',
    });
    expect(summary.heldoutStart).toBeGreaterThanOrEqual(0);
    expect(summary.heldoutEnd).toBeGreaterThanOrEqual(0);
    expect(summary.samplesPerSecond).toBeGreaterThan(0);
    // No CUDA onnxruntime or native TensorFlow here: the summary says what really ran.
    expect(summary.runtime.rollout[0]).toBe('onnxruntime/cpu');
    expect(summary.runtime.trainer[0]).toMatch(
      /^tfjs\/(wasm|cpu) on CPU \((WebAssembly, XNNPACK|JavaScript)\)$/,
    );
    expect(run.stdout).toMatch(/runtime: rollout onnxruntime\/cpu/);
    // The trainer scores at the rollout's temperature with the weights that drew each sample (a
    // stale one under the kept earlier version): its logprobs are the engine's (float32), while
    // the policy lag of stale samples is how far the policy moved since.
    expect(summary.mismatch).toBeGreaterThanOrEqual(0);
    expect(summary.mismatch).toBeLessThanOrEqual(1e-3);
    const lagged = stepLines(run.stdout).filter((l) => /policy lag/.test(l));
    for (const line of lagged) {
      const [, mismatch, lag] = /mismatch (\S+), policy lag (\S+) \(1\.00 versions\)/.exec(line)!;
      expect(Number(mismatch)).toBeLessThanOrEqual(1e-3);
      expect(Number(lag)).toBeGreaterThan(Number(mismatch));
    }
    expect(summary.policyLag === null).toBe(lagged.length === 0);
    // Logs without a TTY are plain lines: every step, the evals and the checkpoint.
    expect(stepLines(run.stdout)).toHaveLength(3);
    expect(run.stdout).toMatch(/eval step 0: held-out success/);
    expect(run.stdout).toMatch(/eval step 2: held-out success/);
    expect(run.stdout).toMatch(/checkpoint at step 3/);
    expect(run.stdout).toMatch(
      /actors ready: 1 rollout engine\(s\), 1 trainer shard\(s\), 1 env pool\(s\), 1 judge voter\(s\)/,
    );
    // The learning curves: every evaluation and each step's mean reward, drawn beside the checkpoints.
    const { curves } = summary;
    expect(curves.heldout[0]).toMatchObject({ step: 0, value: summary.heldoutStart, phase: 'start' });
    expect(curves.heldout.at(-1)).toMatchObject({ step: 3, value: summary.heldoutEnd, phase: 'rl' });
    expect(curves.reward.map((p: { step: number }) => p.step)).toEqual([1, 2, 3]);
    expect(dirname(curves.svg)).toBe(dirname(summary.checkpoint.path));
    expect(readFileSync(curves.svg, 'utf8')).toMatch(
      /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[\s\S]*<\/svg>\n$/,
    );
    expect(run.stderr).toContain(`  curves            ${curves.svg}`);
    // The driver reported where it was to the head: `job status` shows it after the job, too.
    const status = JSON.parse(clawray(['job', 'status', 'rl-async', '--json']).stdout);
    expect(status.info).toMatchObject({ phase: 'done', step: '3/3' });
    expect(status.info.runtime).toMatch(/^rollout onnxruntime\/cpu; trainer tfjs\/(wasm|cpu) on CPU \(.+\)$/);
    expect(clawray(['job', 'status', 'rl-async']).stdout).toMatch(/\nruntime: +rollout onnxruntime\/cpu/);
  });

  it.skipIf(noAdapter !== null)(
    'trains with train.backend webgpu: the job succeeds and its summary names the backend',
    () => {
      const file = manifest(
        'webgpu',
        TOOLCALL('tc-webgpu', '  judge: { votes: 1 }\n').replace('steps: 3', 'steps: 2, backend: webgpu'),
      );
      const run = clawray(['job', 'submit', file, '--submission-id', 'rl-webgpu']);
      expect(run.stderr).toContain("job 'rl-webgpu' SUCCEEDED");
      expect(run.code).toBe(0);
      // The log's runtime line, the human summary's trainer row, and `job status`.
      expect(run.stdout).toMatch(/runtime: rollout onnxruntime\/cpu; trainer tfjs\/webgpu on .*Vulkan/);
      expect(run.stderr).toMatch(/\n {2}trainer {11}tfjs\/webgpu on .*Vulkan/);
      const status = JSON.parse(clawray(['job', 'status', 'rl-webgpu', '--json']).stdout);
      expect(status.info).toMatchObject({ phase: 'done', step: '2/2' });
      expect(status.info.runtime).toMatch(/trainer tfjs\/webgpu on /);
    },
  );

  it('trains at temperature 0.6 with TIS: the trainer scores as the engine sampled (mismatch ≤ 1e-3, no policy lag)', () => {
    // Synchronous: every sample is fresh, so there is no policy lag to report.
    // A reward that differs between any two different conversations, so steps train samples.
    const reward = 'export default ({ messages }) => JSON.stringify(messages).length / 100;\n';
    const file = manifest(
      'temperature',
      `${TOOLCALL('tc-temperature').replace('maxTokens: 12 }', 'maxTokens: 12, temperature: 0.6 }').replace(
        'train: { steps: 3 }',
        // With a KL penalty too: the trainer scores the reference itself.
        'train: { steps: 2, async: false, tis: { cap: 2 }, klCoef: 0.05 }',
      )}  plugins: { reward: ./plugins/reward.mjs }\n`,
      { 'plugins/reward.mjs': reward },
    );
    const run = clawray(['job', 'submit', file, '--json']);
    expect(run.code).toBe(0);
    const trained = stepLines(run.stdout).filter((l) => !/ 0 samples /.test(l));
    expect(trained.length).toBeGreaterThan(0);
    for (const line of trained) expect(line).toMatch(/mismatch \S+, tis weight \d\.\d{3}/);
    for (const line of trained) expect(line).not.toMatch(/policy lag/);
    const summary = summaryOf(run.stdout);
    expect(summary.steps).toBe(2);
    expect(summary.mismatch).toBeGreaterThanOrEqual(0);
    expect(summary.mismatch).toBeLessThanOrEqual(1e-3);
    expect(summary.policyLag).toBeNull();
  });

  it('judges inside the job: llm judge engines (3 votes, threshold) score steps, the rule keeps the outcome', () => {
    const file = manifest(
      'in-job-judge',
      TOOLCALL(
        'tc-judged',
        '  judge: { backend: llm, votes: 3, voteThreshold: 0.6, maxTokens: 8, stepRewardCoef: 0.5 }\n  resources: { judge: { replicas: 1, gpus: 0 } }\n',
      )
        .replace('init: { preset: tiny }', 'init: { preset: tiny, maxContext: 4096 }')
        .replace('steps: 3', 'steps: 2'),
    );
    const run = clawray(['job', 'submit', file, '--json']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/1 judge engine\(s\) \(\.\/model, frozen\)/);
    // A random policy never boxes the right answer: the outcome is the rule's −1 whatever the judge
    // says of its steps (before, a model judge's view of the final answer replaced it: −0.5 = 0 + 0.5·(−1)).
    const lines = stepLines(run.stdout);
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(line).toMatch(/reward -1\.\d{3}|reward -0\.[5-9]\d{2}/);
    expect(summaryOf(run.stdout)).toMatchObject({ steps: 2, status: 'SUCCEEDED' });
  });

  it('runs the same job synchronously: no sample is ever behind the policy', () => {
    const file = manifest('sync', TOOLCALL('tc-sync'));
    // With the engines' own settings from spec.model (bf16 weight storage, one sleeping thread,
    // short prefill chunks): the same job, trained the same way.
    const run = clawray([
      'job',
      'submit',
      file,
      '--json',
      '--set',
      'spec.train.async=false',
      '--set',
      'spec.model.weightDtype=bfloat16',
      '--set',
      'spec.model.intraOpNumThreads=1',
      '--set',
      'spec.model.allowSpinning=false',
      '--set',
      'spec.model.prefillChunkTokens=16',
    ]);
    expect(run.code).toBe(0);
    const lines = stepLines(run.stdout);
    expect(lines).toHaveLength(3);
    for (const line of lines) expect(line).toContain('staleness 0.00');
  });

  it('rejects a broken manifest with file:line:col and exit 2, before touching the cluster', () => {
    const file = manifest('broken', TOOLCALL('tc-broken').replace('batchSize: 2', 'batchSize: two'));
    const run = clawray(['job', 'submit', file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /job\.yaml:8:\d+: spec\.rollout\.batchSize: expected a whole number in \[1, 65536\]/,
    );
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('refuses a partition larger than the cluster with exit 2 and the field named', () => {
    const file = manifest(
      'too-big',
      TOOLCALL('tc-big', '  resources: { trainer: { shards: 2, gpus: 2 } }\n'),
    );
    const run = clawray(['job', 'submit', file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/does not fit the cluster/);
    expect(run.stderr).toMatch(/resources\.trainer/);
  });

  it('stops gracefully at a step boundary with a checkpoint, and --resume continues from it', async () => {
    const file = manifest(
      'stop',
      TOOLCALL('tc-stop', '  checkpoint: { everySteps: 1 }\n').replace('steps: 3', 'steps: 200'),
    );
    const submitted = clawray(['job', 'submit', file, '--submission-id', 'rl-stop', '--no-wait']);
    expect(submitted.code).toBe(0);
    for (let waited = 0; !/step 2\/200/.test(await clawrayAsync(['job', 'logs', 'rl-stop'])); waited += 500) {
      if (waited > 120_000) throw new Error('the job never reached step 2');
      await new Promise((r) => setTimeout(r, 500));
    }
    const stop = clawray(['job', 'stop', 'rl-stop']);
    expect(stop.stdout).toMatch(/STOPPED/);
    const logs = clawray(['job', 'logs', 'rl-stop']).stdout;
    expect(logs).toMatch(/stop requested: finishing the current step/);
    const stoppedAt = Number(/"status":"stopped","steps":(\d+)/.exec(logs)![1]);
    expect(stoppedAt).toBeGreaterThanOrEqual(2);
    // Checkpointed every step: the end writes the driver state, not the same weights again,
    // and the log announces that step's checkpoint once.
    expect(logs.match(new RegExp(`checkpoint at step ${stoppedAt}: `, 'g'))).toHaveLength(1);
    expect(logs).toMatch(
      new RegExp(
        `driver state saved again at the end of step ${stoppedAt} \\(the weights in \\S+ are unchanged\\)`,
      ),
    );

    const resumed = clawray([
      'job',
      'submit',
      file,
      '--resume',
      '--json',
      '--set',
      `spec.train.steps=${stoppedAt + 1}`,
    ]);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toMatch(new RegExp(`resumed from .* at step ${stoppedAt}`));
    expect(summaryOf(resumed.stdout)).toMatchObject({ steps: stoppedAt + 1, resumedFromStep: stoppedAt });
    expect(stepLines(resumed.stdout).map((l) => /step (\d+)\//.exec(l)![1])).toEqual([String(stoppedAt + 1)]);
  }, 240_000);

  it('loads custom reward, loss, rollout and environment plugins from the working dir', () => {
    const plugins = {
      // A reward that varies inside every group, so every step has a learning signal.
      'plugins/reward.mjs': `export default ({ messages }) => (messages.length % 2 === 0 ? 1 : -1);\n`,
      // Plain cross-entropy instead of PPO: its value (~ln 384 per token) is unmistakable.
      'plugins/loss.mjs': `export function ce({ logprobs, mask, tf }) { return tf.sum(tf.mul(tf.neg(logprobs), mask)); }\n`,
      // One turn per episode, whatever maxTurns says.
      'plugins/rollout.mjs': `export default async (ctx) => {
  const { messages, tools } = await ctx.reset();
  const r = await ctx.chat(messages, tools);
  const action = { content: r.content || 'x' };
  const step = await ctx.step(action);
  return { taskId: ctx.taskId, reward: step.reward, done: step.done, info: step.info, messages: step.messages,
    turns: [{ messages, promptTokenIds: r.promptTokenIds, tokenIds: r.tokenIds, logprobs: r.logprobs, weightVersion: r.weightVersion, action }] };
};\n`,
      // An environment of our own over the track's tasks: one reply, graded by its length.
      'plugins/env.mjs': `export default (tasks) => {
  let messages = [];
  return {
    async reset(id) { messages = [{ role: 'user', content: 'Say something about ' + id }]; return { messages, text: '', tools: [] }; },
    async step(action) { messages = [...messages, { role: 'assistant', content: action.content }]; return { observation: { messages, text: '', tools: [] }, reward: 1, done: true, info: { custom: true } }; },
    async evaluate() { return { reward: 0, info: {} }; },
    async close() {},
  };
};\n`,
    };
    const file = manifest(
      'plugins',
      `${TOOLCALL('tc-plugins')}  plugins: { reward: ./plugins/reward.mjs, loss: ./plugins/loss.mjs#ce, rollout: ./plugins/rollout.mjs, environment: ./plugins/env.mjs }\n`,
      plugins,
    );
    const run = clawray(['job', 'submit', file, '--json']);
    expect(run.code).toBe(0);
    const lines = stepLines(run.stdout);
    expect(lines).toHaveLength(3);
    for (const line of lines) {
      // The reward plugin: every episode has 2 messages after one turn → +1.
      expect(line).toMatch(/reward 1\.000/);
    }
    expect(run.stdout).toMatch(/summary/);
  });

  it('ends a job that fails mid-run with what it did until then', () => {
    const plugins = {
      // Coin-flip rewards: a group of two differs half the time, so most steps train.
      'plugins/reward.mjs': `export default () => (Math.random() < 0.5 ? 1 : -1);\n`,
      // A loss that breaks on the second step that trains: the trainer's error ends the job.
      'plugins/loss.mjs': `let calls = 0;
export function flaky({ logprobs, mask, tf }) {
  if (++calls === 2) throw new RangeError('the loss broke on purpose');
  return tf.sum(tf.mul(tf.neg(logprobs), mask));
}\n`,
    };
    const file = manifest(
      'failing',
      `${TOOLCALL('tc-failing').replace('steps: 3', 'steps: 12, async: false')}  plugins: { reward: ./plugins/reward.mjs, loss: ./plugins/loss.mjs#flaky }\n`,
      plugins,
    );
    const run = clawray(['job', 'submit', file, '--json']);
    expect(run.code).not.toBe(0);
    const done = stepLines(run.stdout).length;
    expect(done).toBeGreaterThanOrEqual(1);
    expect(summaryOf(run.stdout)).toMatchObject({
      status: 'FAILED',
      job: 'tc-failing',
      steps: done,
      error: expect.stringMatching(/the loss broke on purpose/),
      runtime: { trainer: [expect.stringMatching(/^tfjs\//)] },
    });
  });

  it('ends an episode whose conversation outgrows the model context, instead of failing the job', () => {
    // The environment answers the first turn with a long message: the second prompt cannot
    // fit in a 256-token context, so the episode ends truncated after one turn.
    const env = `export default () => {
  let messages = [];
  return {
    async reset(id) { messages = [{ role: 'user', content: 'Hi ' + id }]; return { messages, text: '', tools: [] }; },
    async step(action) {
      messages = [...messages, { role: 'assistant', content: action.content ?? '' }, { role: 'user', content: 'x '.repeat(400) }];
      return { observation: { messages, text: '', tools: [] }, reward: 0, done: false, info: {} };
    },
    async evaluate() { return { reward: messages.length % 2 ? 1 : -1, info: {} }; },
    async close() {},
  };
};\n`;
    const reward = 'export default ({ info }) => (info.truncated ? 1 : -1);\n';
    const file = manifest(
      'truncated',
      `${TOOLCALL('tc-truncated')
        .replace('init: { preset: tiny }', 'init: { preset: tiny, maxContext: 256 }')
        .replace('maxTurns: 2', 'maxTurns: 3')}  plugins: { environment: ./env.mjs, reward: ./reward.mjs }\n`,
      { 'env.mjs': env, 'reward.mjs': reward },
    );
    const run = clawray(['job', 'submit', file, '--json']);
    expect(run.code).toBe(0);
    const lines = stepLines(run.stdout);
    expect(lines).toHaveLength(3);
    // Every episode was truncated (the reward plugin pays +1 only for that).
    for (const line of lines) expect(line).toMatch(/reward 1\.000/);
  });

  it('runs the personal track: simulated users over the OpenAI endpoint, reaction judge, combine', () => {
    const file = manifest(
      'personal',
      `apiVersion: clawray.dev/v1
kind: RLJob
metadata: { name: personal-test }
spec:
  track: personal
  method: combine
  model: { path: ./model, init: { preset: tiny } }
  judge: { backend: reaction, teacher: frozen }
  rollout: { batchSize: 4, maxTokens: 12 }
  train: { steps: 2 }
  serve: { port: 0 }
  user: { preference: lowercase, parallel: 2, turnsPerSession: 2, evalSessions: 2 }
  eval: { everySteps: 1 }
`,
    );
    const run = clawray(['job', 'submit', file, '--json']);
    expect(run.stderr).toContain('SUCCEEDED');
    expect(run.code).toBe(0);
    // The frozen teacher: engines of the initial policy, started beside the rollout engine.
    expect(run.stdout).toMatch(
      /actors ready: 1 rollout engine\(s\), .*1 judge engine\(s\) \(\.\/model, frozen; teacher frozen\)/,
    );
    expect(run.stdout).toMatch(/serving the policy for live sessions on http:\/\/127\.0\.0\.1:\d+\/v1/);
    expect(run.stdout).toMatch(/eval step 0: held-out preference score/);
    const summary = summaryOf(run.stdout);
    expect(summary).toMatchObject({
      steps: 2,
      metric: 'preference_score',
      track: 'personal',
      method: 'combine',
    });
    expect(summary.heldoutStart).toBeGreaterThanOrEqual(0);
  });

  it('trains method sft on the oracle traces', () => {
    const file = manifest(
      'sft',
      TOOLCALL('tc-sft').replace('method: rl', 'method: sft').replace('steps: 3', 'steps: 2'),
    );
    const run = clawray(['job', 'submit', file, '--json']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/oracle traces: \d+ samples from \d+ tasks/);
    expect(run.stdout).toMatch(/step 2\/2: sft loss/);
    expect(summaryOf(run.stdout)).toMatchObject({ steps: 2, status: 'SUCCEEDED' });
  });

  it('without an address runs the job on an embedded cluster, from a directory outside clawray', () => {
    const file = manifest(
      'embedded',
      TOOLCALL('tc-embedded').replace('steps: 3', 'steps: 1').replace('everySteps: 0', 'everySteps: 1'),
    );
    const home = mkdtempSync(join(tmpdir(), 'clawray-home-'));
    try {
      const result = spawnSync(
        process.execPath,
        [distEntry('cli/main'), 'job', 'submit', 'job.yaml', '--json'],
        {
          cwd: join(file, '..'),
          encoding: 'utf8',
          env: { ...process.env, CLAWRAY_ADDRESS: '', CLAWRAY_HOME: home },
          timeout: 180_000,
        },
      );
      expect(result.stderr).toMatch(/no cluster address; starting a local cluster/);
      expect(result.status).toBe(0);
      // The first held-out task's transcript goes to the log with every evaluation.
      expect(result.stdout).toMatch(/eval sample: assistant: /);
      expect(summaryOf(result.stdout)).toMatchObject({ steps: 1, status: 'SUCCEEDED' });
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
