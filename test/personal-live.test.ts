/**
 * The live personal-agent loop on a cluster of real processes: a personal job with no
 * simulated user serves the policy; the `openai` client chats in three sessions (named three
 * ways: X-Session-Id, OpenClaw's prompt_cache_key, a per-session key) while the job judges,
 * trains and swaps weights under them; `job stop` ends it STOPPED after its steps.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { distEntry } from '../common/package-root.js';
import { TestCluster } from './helpers/processes.js';
import { writeTinyPrm } from './helpers/tiny-prm.js';

// The judge is a real (tiny) ONNX classifier: "thanks"/"great" in the next state read as good, "wrong"/"again" as bad.
const manifest = (prmDir: string) => `apiVersion: clawray.dev/v1
kind: RLJob
metadata: { name: live-test }
spec:
  track: personal
  method: rl
  model: { path: ./model, init: { preset: tiny } }
  judge: { backend: onnx-prm, model: ${prmDir}, votes: 1 }
  rollout: { batchSize: 2, maxTokens: 8 }
  serve: { port: 0, sessions: { idleTimeoutMs: 60000 } }
`;

describe('a live personal job (no simulated user) driven by the openai client', () => {
  const tc = new TestCluster();
  const dir = mkdtempSync(join(tmpdir(), 'clawray-live-'));

  const cli = (args: string[]) => tc.cli(args, dir);

  beforeAll(async () => {
    await tc.startHead();
    await tc.startWorker({ cpus: 8, gpus: 2 });
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'job.yaml'), manifest(writeTinyPrm(join(dir, 'prm')).dir));
  });
  afterAll(async () => {
    await tc.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  it('trains while clients chat: the weight version in replies advances, no request fails, job stop ends it STOPPED', async () => {
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
        'live-1',
        '--no-wait',
      ],
      { cwd: dir, encoding: 'utf8', env: { ...process.env, CLAWRAY_ADDRESS: '', ...tc.env } },
    );
    expect(submitted.stderr).toMatch(/job 'live-1' submitted/);
    expect(submitted.status).toBe(0);
    let url: string | undefined;
    for (let waited = 0; !url; waited += 500) {
      if (waited > 120_000) throw new Error(`the job never served:\n${await cli(['job', 'logs', 'live-1'])}`);
      await new Promise((r) => setTimeout(r, 500));
      url = /serving the policy for live sessions on (http:\/\/[\d.:]+)\/v1/.exec(
        await cli(['job', 'logs', 'live-1']),
      )?.[1];
    }

    // The endpoint needs a key by default: the cluster token here.
    expect((await fetch(`${url}/v1/models`)).status).toBe(401);
    const anonymous = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'not-the-key', maxRetries: 0 });
    await expect(
      anonymous.chat.completions.create({ model: 'model', messages: [{ role: 'user', content: 'hi' }] }),
    ).rejects.toMatchObject({ status: 401 });

    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: tc.token, maxRetries: 0 });
    const started = await fetch(`${url}/rl/start_session`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tc.token}`, 'content-type': 'application/json' },
      body: '{}',
    });
    const sessionKey = ((await started.json()) as { api_key: string }).api_key;
    const keyed = new OpenAI({ baseURL: `${url}/v1`, apiKey: sessionKey, maxRetries: 0 });

    const versions: number[] = [];
    let requests = 0;
    let firstUpdateAfter: number | undefined;
    const reply = async (
      c: OpenAI,
      messages: OpenAI.ChatCompletionMessageParam[],
      extra: Record<string, unknown> = {},
      headers: Record<string, string> = {},
    ) => {
      requests++;
      const r = await c.chat.completions.create(
        { model: 'model', messages, temperature: 0.6, ...extra },
        { headers },
      );
      const version = (r as unknown as { weight_version: number }).weight_version;
      if (version > 0 && firstUpdateAfter === undefined) firstUpdateAfter = requests;
      versions.push(version);
      return r;
    };
    const reactions = [
      'thanks, that helps',
      'no, that is wrong, try again',
      'ok and then?',
      'great, thank you',
    ];
    // One user per session, chatting until the policy they talk to has been updated twice.
    const chat = async (
      name: string,
      send: (m: OpenAI.ChatCompletionMessageParam[]) => Promise<OpenAI.ChatCompletion>,
    ) => {
      const messages: OpenAI.ChatCompletionMessageParam[] = [
        { role: 'user', content: `${name}: plan my day` },
      ];
      for (let turn = 0; Math.max(0, ...versions) < 2; turn++) {
        if (turn > 400) throw new Error(`no weight update after ${requests} requests`);
        const r = await send(messages);
        messages.push({ role: 'assistant', content: r.choices[0].message.content ?? '' });
        messages.push({ role: 'user', content: reactions[turn % reactions.length] });
        if (messages.length > 8) messages.splice(1, 2);
      }
    };
    const model = ((await client.models.list()).data[0] as { id: string }).id;
    expect(model).toBe('model');
    const chats = Promise.all([
      chat('header', (m) => reply(client, m, {}, { 'X-Session-Id': 'by-header', 'X-Turn-Type': 'main' })),
      chat('cache-key', async (m) => {
        // OpenClaw's side call on the same session: served, never trained.
        if (m.length === 3) {
          await reply(
            client,
            [{ role: 'user', content: 'Pre-compaction memory flush. Save what matters.' }],
            {
              prompt_cache_key: 'agent:main:cache-1:1',
            },
          );
        }
        return reply(client, m, { prompt_cache_key: `agent:main:cache-1:${m.length}` });
      }),
      chat('keyed', async (m) => {
        const r = await reply(keyed, m);
        // Explicit feedback on every keyed turn: a reward the judge does not have to guess.
        const given = await fetch(`${url}/rl/set_reward`, {
          method: 'POST',
          headers: { authorization: `Bearer ${sessionKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ interaction_id: r.id, reward: m.length % 4 === 1 ? 1 : -1 }),
        });
        expect(given.status).toBe(200);
        return r;
      }),
    ]);
    // A failure shows what the job said about it.
    await chats.catch(async (err: Error) => {
      throw new Error(`${err.message}\njob log:\n${await cli(['job', 'logs', 'live-1'])}`);
    });
    process.stderr.write(
      `live: first reply from updated weights after ${firstUpdateAfter} chat requests; ${requests} requests in all\n`,
    );
    expect(versions[0]).toBe(0);
    expect(Math.max(...versions)).toBeGreaterThanOrEqual(2);
    const stats = (await (
      await fetch(`${url}/rl/stats`, { headers: { authorization: `Bearer ${tc.token}` } })
    ).json()) as { capture: { sideTurns: number; missingSessionId: number; records: number } };
    expect(stats.capture.sideTurns).toBeGreaterThanOrEqual(1);
    expect(stats.capture.missingSessionId).toBe(0);
    const logs = await cli(['job', 'logs', 'live-1']);
    expect(logs).toMatch(/ step 1: reward/);
    expect(logs).not.toMatch(/simulated/);
    // Swaps under live traffic are no engine failures.
    expect(logs).not.toMatch(/left the pool/);

    const stop = await cli(['job', 'stop', 'live-1']);
    expect(stop).toMatch(/STOPPED/);
    const final = await cli(['job', 'logs', 'live-1']);
    const summary = JSON.parse(/summary (\{.*\})/.exec(final)![1]) as {
      status: string;
      steps: number;
      trajectories: { produced: number; lost: number; duplicated: number };
    };
    expect(summary.status).toBe('stopped');
    expect(summary.steps).toBeGreaterThan(0);
    expect(summary.trajectories).toMatchObject({ lost: 0, duplicated: 0 });
    expect(summary.trajectories.produced).toBeGreaterThan(0);
    const status = await cli(['job', 'status', 'live-1']);
    expect(status).toMatch(/STOPPED/);
  }, 300_000);
});

describe('a live personal job judged inside the job: in-job llm judge engines and the frozen teacher', () => {
  const tc = new TestCluster();
  const dir = mkdtempSync(join(tmpdir(), 'clawray-live-judge-'));

  beforeAll(async () => {
    await tc.startHead();
    await tc.startWorker({ cpus: 8, gpus: 2 });
  });
  afterAll(async () => {
    await tc.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  it('votes with frozen copies of the initial policy and distills corrections through them', async () => {
    writeFileSync(
      join(dir, 'job.yaml'),
      `apiVersion: clawray.dev/v1
kind: RLJob
metadata: { name: live-judged }
spec:
  track: personal
  method: combine
  model: { path: ./model, init: { preset: tiny, maxContext: 4096 } }
  judge: { votes: 3, voteThreshold: 0.6, maxTokens: 8 }
  resources: { judge: { replicas: 1, gpus: 0 } }
  rollout: { batchSize: 2, maxTokens: 8 }
  train: { steps: 2 }
  serve: { port: 0 }
`,
    );
    const cli = (args: string[]) =>
      spawnSync(process.execPath, [distEntry('cli/main'), ...args], {
        cwd: dir,
        encoding: 'utf8',
        env: { ...process.env, CLAWRAY_ADDRESS: '', ...tc.env },
        timeout: 150_000,
      });
    const submitted = cli([
      'job',
      'submit',
      'job.yaml',
      '--address',
      tc.head!.address,
      '--submission-id',
      'judged-1',
      '--no-wait',
    ]);
    expect(submitted.status).toBe(0);
    let url: string | undefined;
    let logs = '';
    for (let waited = 0; !url; waited += 500) {
      if (waited > 120_000) throw new Error(`the job never served:\n${logs}`);
      await new Promise((r) => setTimeout(r, 500));
      logs = cli(['job', 'logs', 'judged-1', '--address', tc.head!.address]).stdout;
      url = /serving the policy for live sessions on (http:\/\/[\d.:]+)\/v1/.exec(logs)?.[1];
    }
    expect(logs).toMatch(/1 judge engine\(s\) \(\.\/model, frozen; teacher frozen\)/);
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: tc.token, maxRetries: 0 });
    // Two sessions; every turn gets a correction, which is the OPD hint the frozen teacher scores.
    for (let turn = 0; turn < 3; turn++) {
      for (const session of ['s1', 's2']) {
        const r = await client.chat.completions.create(
          { model: 'model', messages: [{ role: 'user', content: `${session} question ${turn}` }] },
          { headers: { 'X-Session-Id': session } },
        );
        const given = await fetch(`${url}/rl/set_reward`, {
          method: 'POST',
          headers: { authorization: `Bearer ${tc.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            session_id: session,
            interaction_id: r.id,
            correction: 'Answer in one short sentence.',
          }),
        });
        expect(given.status).toBe(200);
      }
    }
    for (let waited = 0; !/"status":"completed"/.test(logs); waited += 500) {
      if (waited > 120_000) throw new Error(`the job never finished its 2 steps:\n${logs}`);
      await new Promise((r) => setTimeout(r, 500));
      logs = cli(['job', 'logs', 'judged-1', '--address', tc.head!.address]).stdout;
    }
    const summary = JSON.parse(/summary (\{.*\})/.exec(logs)![1]) as {
      steps: number;
      trajectories: { trained: number };
      teacher: { kind: string; turns: number };
    };
    expect(summary.steps).toBe(2);
    expect(summary.trajectories.trained).toBeGreaterThan(0);
    // Every corrected turn judged so far was scored by the frozen teacher on the judge engine.
    expect(summary.teacher.kind).toBe('frozen');
    expect(summary.teacher.turns).toBeGreaterThanOrEqual(2);
  }, 300_000);
});
