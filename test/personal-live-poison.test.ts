/**
 * What one session key can do to a live personal job, on a cluster of real processes: an
 * attacker holding a session key sends rewards of 1e308, 50 and −1e308 while ten other
 * sessions hold a hundred ordinary turns. The job's judge is a reward plugin that returns NaN
 * for one turn and 1e308 for another (a judge gone wrong). The out-of-range rewards are refused
 * naming the range; the NaN turn is dropped and counted; the step whose loss the 1e308 turn
 * makes infinite is skipped and counted; the policy keeps answering with finite logprobs under
 * top_p 0.9, and the checkpoint written at `job stop` holds only finite numbers.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSafetensors } from '../actors/models/safetensors.js';
import { MODEL_FILE, OPTIMIZER_FILE } from '../actors/trainer/checkpoint.js';
import { distEntry } from '../common/package-root.js';
import { TestCluster } from './helpers/processes.js';
import { writeTinyPrm } from './helpers/tiny-prm.js';

const manifest = (prmDir: string, checkpoints: string) => `apiVersion: clawray.dev/v1
kind: RLJob
metadata: { name: live-poison }
spec:
  track: personal
  method: rl
  model: { path: ./model, init: { preset: tiny } }
  judge: { backend: onnx-prm, model: ${prmDir}, votes: 1 }
  plugins: { reward: ./judge.mjs }
  rollout: { batchSize: 4, maxTokens: 8 }
  # Live clients are not throttled: every turn of this burst trains, however far the policy moved.
  train: { maxStaleness: 1000 }
  checkpoint: { dir: ${checkpoints} }
  serve: { port: 0, sessions: { idleTimeoutMs: 60000 } }
`;

// The job's judge: the user's thanks is +1, anything else −1; two reactions make it misbehave.
const judge = `export default function reward({ nextState }) {
  const text = String(nextState?.content ?? '');
  if (text.includes('judge-says-nan')) return Number.NaN;
  if (text.includes('judge-says-huge')) return 1e308;
  return /thank/.test(text) ? 1 : -1;
}
`;

describe('a live personal job under a hostile session key and a judge that returns NaN and 1e308', () => {
  const tc = new TestCluster();
  const dir = mkdtempSync(join(tmpdir(), 'clawray-poison-'));
  const checkpoints = join(dir, 'checkpoints');

  const cli = (args: string[]) => tc.cli(args, dir);

  beforeAll(async () => {
    await tc.startHead();
    await tc.startWorker({ cpus: 8, gpus: 2 });
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'job.yaml'), manifest(writeTinyPrm(join(dir, 'prm')).dir, checkpoints));
    writeFileSync(join(dir, 'judge.mjs'), judge);
  });
  afterAll(async () => {
    await tc.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses out-of-range rewards by name, skips and counts the non-finite, and keeps a finite policy and checkpoint', async () => {
    const submitted = spawnSync(
      process.execPath,
      [
        distEntry('cli/main'),
        'job',
        'submit',
        'job.yaml',
        '--address',
        tc.head!.address,
        '--submission-id',
        'poison-1',
        '--no-wait',
      ],
      { cwd: dir, encoding: 'utf8', env: { ...process.env, CLAWRAY_ADDRESS: '', ...tc.env } },
    );
    expect(submitted.status, submitted.stderr).toBe(0);
    const logs = () => cli(['job', 'logs', 'poison-1']);
    const waitForLog = async (pattern: RegExp, what: string) => {
      for (let waited = 0; ; waited += 500) {
        const text = await logs();
        const match = pattern.exec(text);
        if (match) return match;
        if (waited > 60_000) throw new Error(`${what} never happened:\n${text}`);
        await new Promise((r) => setTimeout(r, 500));
      }
    };
    const url = (
      await waitForLog(/serving the policy for live sessions on (http:\/\/[\d.:]+)\/v1/, 'serving')
    )[1];
    const post = (path: string, key: string, body: unknown) =>
      fetch(`${url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });

    // The attacker: one session key, one turn, and rewards far outside what any judge gives.
    const issued = (await (await post('/rl/start_session', tc.token, {})).json()) as { api_key: string };
    const attacker = new OpenAI({ baseURL: `${url}/v1`, apiKey: issued.api_key, maxRetries: 0 });
    const bait = await attacker.chat.completions.create({
      model: 'model',
      messages: [{ role: 'user', content: 'hello' }],
      temperature: 0.6,
    });
    for (const reward of [1e308, 50, -1e308]) {
      const refused = await post('/rl/set_reward', issued.api_key, { interaction_id: bait.id, reward });
      expect(refused.status).toBe(400);
      const body = (await refused.json()) as { error: { message: string; param: string } };
      expect(body.error.message).toContain("in [-1, 1] (the job's judge.rewardRange)");
      expect(body.error.param).toBe('reward');
    }
    // In range, it is taken.
    expect(
      (await post('/rl/set_reward', issued.api_key, { interaction_id: bait.id, reward: -1 })).status,
    ).toBe(200);

    // A hundred ordinary turns in ten sessions; two reactions in session 3 make the judge misbehave.
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: tc.token, maxRetries: 0 });
    const reactions = ['thanks, that helps', 'no, that is wrong, try again'];
    const session = async (s: number) => {
      const messages: OpenAI.ChatCompletionMessageParam[] = [
        { role: 'user', content: `session ${s}: plan my day` },
      ];
      for (let turn = 0; turn < 10; turn++) {
        const r = await client.chat.completions.create(
          { model: 'model', messages, temperature: 0.6 },
          { headers: { 'X-Session-Id': `user-${s}`, 'X-Turn-Type': 'main' } },
        );
        const reaction =
          s === 3 && turn === 2
            ? 'judge-says-nan'
            : s === 3 && turn === 6
              ? 'judge-says-huge'
              : reactions[turn % 2];
        messages.push({ role: 'assistant', content: r.choices[0].message.content ?? '' });
        messages.push({ role: 'user', content: reaction });
        if (messages.length > 6) messages.splice(1, 2);
      }
      // The session's last turn is judged when it ends.
      await post('/rl/end_session', tc.token, { session_id: `user-${s}` });
    };
    await Promise.all(Array.from({ length: 10 }, (_, s) => session(s)));
    await post('/rl/end_session', issued.api_key, {});

    await waitForLog(/skipped: its loss \((-?Infinity|NaN)\)/, 'a skipped step');
    await waitForLog(/published weight version [1-9]/, 'a weight update');

    // Every user still gets a policy with finite numbers, also under top_p.
    const after = await client.chat.completions.create(
      {
        model: 'model',
        messages: [{ role: 'user', content: 'one more thing' }],
        temperature: 0.6,
        top_p: 0.9,
        logprobs: true,
        top_logprobs: 3,
      },
      { headers: { 'X-Session-Id': 'after', 'X-Turn-Type': 'side' } },
    );
    const entries = after.choices[0].logprobs?.content ?? [];
    expect(entries.length).toBeGreaterThan(0);
    for (const e of entries) {
      expect(Number.isFinite(e.logprob)).toBe(true);
      expect(e.logprob).toBeGreaterThan(-100);
      for (const t of e.top_logprobs) expect(Number.isFinite(t.logprob)).toBe(true);
    }

    expect(await cli(['job', 'stop', 'poison-1'])).toMatch(/STOPPED/);
    const final = await logs();
    const summary = JSON.parse(/summary (\{.*\})/.exec(final)![1]) as {
      status: string;
      steps: number;
      skippedSteps: number;
      trajectories: { dropped: Record<string, number>; lost: number; duplicated: number };
    };
    expect(summary.status).toBe('stopped');
    expect(summary.steps).toBeGreaterThan(0);
    expect(summary.skippedSteps).toBeGreaterThanOrEqual(1);
    // The NaN turn, and the turns of each skipped step.
    expect(summary.trajectories.dropped.non_finite).toBeGreaterThanOrEqual(1 + summary.skippedSteps);
    expect(summary.trajectories).toMatchObject({ lost: 0, duplicated: 0 });
    expect(final).not.toMatch(/loss (NaN|-?Infinity),/);
    process.stderr.write(
      `poison: ${summary.steps} steps, ${summary.skippedSteps} skipped, dropped ${JSON.stringify(summary.trajectories.dropped)}\n`,
    );

    // The checkpoint `job stop` wrote holds only finite weights and optimizer moments.
    const path = [...final.matchAll(/checkpoint at step \d+: (\S+)/g)].at(-1)![1];
    for (const file of [MODEL_FILE, OPTIMIZER_FILE]) {
      const { tensors } = readSafetensors(join(path, file));
      expect(tensors.size).toBeGreaterThan(0);
      for (const [name, t] of tensors) {
        const bad = (t.data as Float32Array).filter((v) => !Number.isFinite(v)).length;
        expect(bad, `${file}: ${name}`).toBe(0);
      }
    }
  }, 300_000);
});
