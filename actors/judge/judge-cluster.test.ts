/**
 * JudgeVoter actors in a real embedded cluster (head and node agent in this process, one actor
 * host process per voter), scoring turns through a JudgePanel. Needs the build: the actors run
 * dist/actors/judge/judge-voter.js (`npm run build` first).
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../common/package-root.js';
import { connect } from '../../index.js';
import { LocalCluster } from '../../local/local-cluster.js';
import type { ActorHandle, Cluster } from '../../runtime/index.js';
import {
  type FakeOpenAiServer,
  nextStateText,
  startFakeOpenAiServer,
} from '../../test/helpers/fake-openai-server.js';
import { writeTinyPrm } from '../../test/helpers/tiny-prm.js';
import { JudgePanel } from './judge-panel.js';
import type { JudgeVoter, JudgeVoterOptions } from './judge-voter.js';
import type { JudgeInput } from './prompts.js';

const voterModule = join(packageRoot(), 'dist', 'actors', 'judge', 'judge-voter.js');

/** Judge models with a fixed temper, so results do not depend on which replica got which vote. */
function respond(body: Record<string, unknown>) {
  const next = nextStateText(body);
  if (body.model === 'contrarian') return { content: '\\boxed{-1}' };
  if (next.includes('redo')) return { content: 'The user asks to redo it: (b). \\boxed{-1}' };
  if (next.includes('thanks')) return { content: 'The user moves on: (a). \\boxed{1}' };
  return { content: 'unclear, no verdict' };
}

const turn = (next: string): JudgeInput => ({
  messages: [{ role: 'user', content: 'Convert 5 miles to km.' }],
  response: 'About 8 km.',
  nextState: { role: 'user', content: next },
});

describe('JudgeVoter actors in an embedded cluster', () => {
  const root = mkdtempSync(join(tmpdir(), 'clawray-judge-cluster-'));
  let server: FakeOpenAiServer;
  let local: LocalCluster;
  let cluster: Cluster;
  let voters: ActorHandle<JudgeVoter>[];
  const create = (options: JudgeVoterOptions) =>
    cluster.createActor<JudgeVoter>({ module: voterModule, className: 'JudgeVoter', args: [options] });

  beforeAll(async () => {
    if (!existsSync(voterModule)) throw new Error(`${voterModule} is missing: run npm run build first`);
    server = await startFakeOpenAiServer(respond);
    local = await LocalCluster.start({ gpusPerWorker: 0, poolSize: 3 });
    cluster = await connect(local.address, { token: local.token });
    voters = await Promise.all(
      ['judge', 'judge', 'contrarian'].map((model) =>
        create({ backend: 'llm', baseURL: server.baseURL, model }),
      ),
    );
  });

  afterAll(async () => {
    await cluster?.close();
    await local?.stop();
    await server?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('scores turns by the majority of votes spread over three voter actors', async () => {
    expect(await voters[0].remote.ready()).toMatchObject({ backend: 'llm', mode: 'prm', model: 'judge' });
    const registry = new Registry();
    const panel = new JudgePanel(voters, { votes: 3, registry });
    const good = await panel.judge(turn('great, thanks!'));
    expect(good).toMatchObject({ score: 1, valid: 3, agreement: 2 / 3 });
    expect(good.votes.map((v) => v.backend)).toEqual(['llm', 'llm', 'llm']);
    const bad = await panel.judge(turn('wrong units, please redo it'));
    expect(bad).toMatchObject({ score: -1, valid: 3, agreement: 1 });
    // Two invalid votes and the contrarian's −1: the only valid vote decides.
    const unclear = await panel.judge(turn('hmm'));
    expect(unclear).toMatchObject({ score: -1, valid: 1, agreement: 1 });
    // Many turns at once, m = 5 over 3 replicas.
    const many = await Promise.all(
      Array.from({ length: 8 }, (_, i) => panel.judge(turn(i % 2 ? 'redo' : 'thanks'), { votes: 5 })),
    );
    expect(many.map((r) => r.score)).toEqual([1, -1, 1, -1, 1, -1, 1, -1]);
    expect(await registry.metrics()).toContain('clawray_judge_turns_total{result="positive"} 5');

    // The voters' own counts reach the node agent's /metrics, summed over the actor processes.
    const { body } = await local.agents[0].collectMetrics();
    const count = (result: string) =>
      Number(
        new RegExp(`clawray_judge_votes_total\\{backend="llm",result="${result}"\\} (\\d+)`).exec(body)?.[1],
      );
    expect(count('positive') + count('negative') + count('invalid')).toBe(3 * 3 + 8 * 5);
    expect(count('invalid')).toBe(2);
    expect(body).toMatch(/clawray_judge_vote_latency_seconds_count\{backend="llm"\} 49/);
  });

  it('serves the ONNX PRM and rule backends as actors too', async () => {
    const modelDir = writeTinyPrm(join(root, 'prm')).dir;
    const [prm, rule] = await Promise.all([
      create({ backend: 'onnx-prm', modelDir, provider: 'cpu' }),
      create({ backend: 'rule', rule: 'boxed-answer' }),
    ]);
    expect(await prm.remote.ready()).toMatchObject({ backend: 'onnx-prm', positiveLabel: 'good' });
    const vote = await prm.remote.vote(turn('thanks, great, perfect'));
    expect(vote).toMatchObject({ score: 1, backend: 'onnx-prm' });
    expect(vote.probability).toBeGreaterThan(0.5);
    const mixed = await new JudgePanel([prm, voters[0], voters[2]], { registry: new Registry() }).judge(
      turn('thanks, great, perfect'),
    );
    expect(mixed).toMatchObject({ score: 1, valid: 3 });
    expect(mixed.votes.map((v) => v.backend)).toEqual(['onnx-prm', 'llm', 'llm']);
    const boxed = await rule.remote.vote({
      ...turn('ok'),
      response: '\\boxed{8}',
      reference: { answer: '8' },
    });
    expect(boxed).toMatchObject({ score: 1, reward: 1, backend: 'rule' });
  });

  it('rejects bad options at creation, naming the field', async () => {
    const err = (await create({ backend: 'llm', model: 'x' } as JudgeVoterOptions).catch(
      (e: unknown) => e,
    )) as Error;
    expect(err.message).toMatch(/constructor threw ConfigError: invalid judge voter options: baseURL:/);
  });

  it('a dead voter costs one invalid vote per turn, not the turn', async () => {
    const extra = await create({ backend: 'llm', baseURL: server.baseURL, model: 'judge' });
    await cluster.killActor(extra, { noRestart: true });
    const registry = new Registry();
    const r = await new JudgePanel([voters[0], voters[1], extra], { registry, timeoutMs: 10_000 }).judge(
      turn('thanks'),
    );
    expect(r).toMatchObject({ score: 1, valid: 2, agreement: 1 });
    expect(r.votes[2].score).toBeNull();
    expect(r.votes[2].error).toMatch(/^vote call failed: /);
    expect(await registry.metrics()).toContain('clawray_judge_vote_call_errors_total 1');
  });
});
