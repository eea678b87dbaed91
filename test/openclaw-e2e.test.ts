/**
 * The seeds' first promise, end to end with the real OpenClaw gateway (npm `openclaw`, Node ≥ 24,
 * installed from the registry at test time, never a project dependency): a personal clawray job
 * in live mode (no simulated user) serves a tiny policy; OpenClaw, configured with a custom
 * OpenAI-compatible provider at the job's endpoint and the clawray plugin from this repository,
 * chats with it in two sessions through `openclaw agent`; the job records each session's turns,
 * leaves OpenClaw's side calls (pre-compaction memory flushes, compaction summaries, forced
 * early here) out, judges, trains, and swaps the new weights in while serving.
 *
 * Nothing reaches the internet: OpenClaw's update check and hosted model catalog are off, no
 * channel is configured, and every model request goes to the job on 127.0.0.1. The test skips,
 * saying why, only when the npm registry is unreachable and nothing is cached.
 */
import { createServer } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { type LiveJob, startLiveJob } from './helpers/live-job.js';
import {
  makeOpenClawHome,
  type OpenClawGateway,
  type OpenClawHome,
  offlineAttempts,
  runOpenClawAgent,
  startOpenClawGateway,
} from './helpers/openclaw.js';
import { ensureOpenClaw } from './helpers/openclaw-install.js';

const started = Date.now();
const log = (line: string) =>
  console.log(`[openclaw-e2e +${((Date.now() - started) / 1000).toFixed(1)}s] ${line}`);
const installed = await ensureOpenClaw(log);
if (!installed.ok) console.warn(`[openclaw-e2e] SKIPPED: ${installed.skip}`);

/**
 * OpenClaw refuses a model whose context is under 4000 tokens; the tiny policy's byte-level
 * tokenizer makes the plugin's one-line system prompt and a short question ~450 tokens.
 */
const CONTEXT_TOKENS = 4096;
const SESSIONS = ['e2e-a', 'e2e-b'];
const TURNS_PER_SESSION = 3;

/** What the job's `GET /rl/stats` answers (the fields this test reads). */
interface RlStats {
  weight_version: number;
  capture: {
    sessions: number;
    records: number;
    mainTurns: number;
    sideTurns: number;
    missingSessionId: number;
    defaultedTurnType: number;
    /** Proposed (not yet served): per-session counts of the turns the job saw. */
    perSession?: Record<string, { mainTurns: number; sideTurns: number }>;
  } | null;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

describe.skipIf(!installed.ok)(
  'a live personal job trained by the real OpenClaw gateway',
  { timeout: 420_000 },
  () => {
    const install = installed.ok ? installed.install : undefined!;
    const apiKey = 'sk-clawray-e2e-not-a-secret';
    const gatewayToken = 'openclaw-e2e-gateway-token';
    let job: LiveJob | undefined;
    let home: OpenClawHome | undefined;
    let gateway: OpenClawGateway | undefined;

    afterAll(async () => {
      await gateway?.stop();
      await job?.cleanup();
      home?.remove();
    });

    it('records turns per session, not side calls, and advances the weight version', async () => {
      log(`openclaw ${install.version} on node ${install.nodeVersion}`);
      job = await startLiveJob({ maxContext: CONTEXT_TOKENS, batchSize: 2, maxTokens: 16, apiKey, log });
      log(`job serving on ${job.baseURL}`);
      const models = await job.get<{ data: Array<{ id: string }> }>('/v1/models');
      const modelId = models.data[0].id;
      const startVersion = (await job.get<{ weightVersion: number }>('/healthz')).weightVersion;

      home = makeOpenClawHome({
        baseUrl: job.baseURL,
        apiKey,
        modelId,
        contextWindow: CONTEXT_TOKENS,
        maxTokens: 16,
        // Small thresholds make OpenClaw flush memory and compact within a few turns: the side
        // calls the job must not record.
        compaction: { memoryFlushBytes: 1000, compactBytes: 1600 },
        gateway: { port: await freePort(), token: gatewayToken },
      });
      gateway = await startOpenClawGateway(install, home.home, gatewayToken);
      log('openclaw gateway ready');

      // The sessions chat at once (one gateway, as a real deployment); turns within a session in order.
      await Promise.all(
        SESSIONS.map(async (sessionId) => {
          for (let turn = 1; turn <= TURNS_PER_SESSION; turn++) {
            const run = await runOpenClawAgent(install, home!.home, {
              sessionId,
              message: `What is ${turn} plus ${turn + 1}?`,
              local: false,
              env: { OPENCLAW_GATEWAY_TOKEN: gatewayToken },
              timeoutMs: 180_000,
            });
            expect(run.code, `${sessionId} turn ${turn}: ${run.stderr.slice(-2000)}`).toBe(0);
            log(
              `${sessionId} turn ${turn}: ${JSON.stringify(run.stdout.trim().split('\n').at(-1)?.slice(0, 60))}`,
            );
          }
        }),
      );

      // The judge scores a turn once the next one arrives; a batch of two trains one step.
      let stats = await job.get<RlStats>('/rl/stats');
      const deadline = Date.now() + 150_000;
      while (stats.weight_version <= startVersion && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 1000));
        stats = await job.get<RlStats>('/rl/stats');
      }
      log(`stats: ${JSON.stringify(stats)}`);
      expect(stats.weight_version).toBeGreaterThan(startVersion);
      expect((await job.get<{ weightVersion: number }>('/healthz')).weightVersion).toBeGreaterThan(
        startVersion,
      );

      const capture = stats.capture!;
      expect(capture.mainTurns).toBe(SESSIONS.length * TURNS_PER_SESSION);
      // OpenClaw made side calls (flushes and compactions) and the job saw them as such.
      expect(capture.sideTurns).toBeGreaterThanOrEqual(SESSIONS.length);
      // The plugin named the session and the turn type of every request.
      expect(capture.missingSessionId).toBe(0);
      expect(capture.defaultedTurnType).toBe(0);

      await gateway.stop();
      log(`refused non-loopback attempts of OpenClaw: ${JSON.stringify(offlineAttempts(home.home))}`);
      const summary = (await job.stop()) as {
        status: string;
        steps: number;
        trajectories: { produced: number; judged: number; trained: number };
      };
      log(
        `summary: ${JSON.stringify({ status: summary.status, steps: summary.steps, trajectories: summary.trajectories })}`,
      );
      expect(summary.status).toBe('stopped');
      expect(summary.steps).toBeGreaterThanOrEqual(1);
      // Only the user's turns became trajectories.
      expect(summary.trajectories.produced).toBe(SESSIONS.length * TURNS_PER_SESSION);

      // Per session: each session's three turns, none of another's.
      for (const sessionId of SESSIONS) {
        expect(
          capture.perSession?.[sessionId],
          `capture.perSession['${sessionId}'] in GET /rl/stats`,
        ).toMatchObject({
          mainTurns: TURNS_PER_SESSION,
        });
      }
    });
  },
);
