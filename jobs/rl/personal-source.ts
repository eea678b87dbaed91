/**
 * Where the personal track's samples come from: the job serves the policy on an
 * OpenAI-compatible endpoint (the rollout engines behind it) and records every main turn of a
 * session, with the user's next message as its next state, into the rollout stream. Real
 * clients (OpenClaw with the clawray plugin, any OpenAI SDK) talk to it live, named by
 * session headers, `prompt_cache_key` or per-session keys; with `spec.user` simulated users
 * do, offline.
 */
import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import { SimulatedUser } from '../../actors/envs/personal/simulated-user.js';
import { runHttpSession } from '../../actors/envs/personal/user-session.js';
import { type TurnRecord, TurnRecorder, type TurnSink } from '../../actors/rollout/capture-recorder.js';
import { createOpenAiServer } from '../../actors/rollout/openai-server.js';
import { SessionKeys } from '../../actors/rollout/session-keys.js';
import { SideCallClassifier } from '../../actors/rollout/side-calls.js';
import type { TurnFeedback } from '../../actors/rollout/turn-feedback.js';
import { ConfigError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { RECORD_SCHEMA_VERSION, type TrajectoryRecord } from '../buffer/types.js';
import type { RLJobSpec } from '../manifest/schema.js';
import type { RemoteChatModel } from './remote-chat-model.js';
import type { RolloutContext, RolloutSource } from './rollout-source.js';
import type { StalenessGate } from './staleness-gate.js';

/**
 * A captured turn as a trajectory record: one sample, its own group of one. Its sampling is what
 * the engine reports it sampled with (the recorder keeps the engine's own `sampling`); a turn
 * without a temperature is refused, not guessed at.
 */
export function turnToRecord(t: TurnRecord): TrajectoryRecord {
  const id = `${t.session_id}:${t.turn}:${t.request_id}`;
  const temperature = t.sampling.temperature;
  if (temperature === null) {
    throw new ConfigError(
      `captured turn ${id}: sampling.temperature is missing (the engine reports the temperature it sampled with); its logprobs cannot be scored`,
      { fields: { field: 'sampling.temperature', requestId: t.request_id } },
    );
  }
  return {
    schemaVersion: RECORD_SCHEMA_VERSION,
    trajectoryId: id,
    sessionId: t.session_id,
    turn: t.turn,
    messages: t.messages.map((m) => ({ ...m, content: m.content ?? null })),
    promptTokenIds: t.prompt_token_ids,
    tokenIds: t.response_token_ids,
    logprobs: t.response_logprobs,
    nextState: t.next_state && { ...t.next_state, content: t.next_state.content ?? null },
    votes: [],
    score: null,
    hint: null,
    weightVersion: t.weight_version,
    createdAtMs: Date.now(),
    responseText: t.response_text,
    sampling: { temperature, topP: t.sampling.top_p, topK: t.sampling.top_k, seed: t.sampling.seed },
    group: { id, size: 1, index: 0 },
    episode: { id, turns: 1, finalMessages: null },
    task: null,
    requestId: t.request_id,
    judgement: null,
    teacher: null,
  };
}

class AppendSink implements TurnSink {
  constructor(private readonly append: (records: TrajectoryRecord[]) => Promise<void>) {}

  async write(record: TurnRecord): Promise<void> {
    await this.append([turnToRecord(record)]);
  }
}

export interface PersonalSourceOptions {
  model: RemoteChatModel;
  host: string;
  port: number;
  /** The key every request needs (or a session key); undefined: no auth (`serve.auth: none`). */
  token?: string;
  sessionKeys: SessionKeys;
  feedback: TurnFeedback;
  sideCalls: SideCallClassifier;
  sessions: { idleTimeoutMs: number; maxOpen: number };
  /** Largest request body in bytes. */
  bodyLimit: number;
  /** `max_tokens` of a request that sets none (rollout.maxTokens), within the context's room. */
  defaultMaxTokens: number;
  registry?: Registry;
  logger: Logger;
  /** Simulated users (spec.user) that chat with the endpoint; none: live clients only. */
  users?: Omit<SimulatedUsersOptions, 'url' | 'gate' | 'onError'>;
  /** Called with the endpoint's URL once it listens. */
  onListening?(url: string): void;
}

/**
 * The personal track's rollout source: the OpenAI-compatible endpoint, whose recorder appends
 * each finished main turn to the rollout stream; with simulated users, they are the clients,
 * admitted session by session through the staleness gate.
 */
export class PersonalSource implements RolloutSource {
  url?: string;

  constructor(private readonly o: PersonalSourceOptions) {}

  get slots(): number {
    return this.o.users?.user.parallel ?? 1;
  }

  async run(ctx: RolloutContext): Promise<void> {
    const recorder = new TurnRecorder({
      sink: new AppendSink(ctx.append),
      logger: this.o.logger,
      idleMs: this.o.sessions.idleTimeoutMs,
      maxSessions: this.o.sessions.maxOpen,
    });
    const app: FastifyInstance = createOpenAiServer({
      model: this.o.model,
      recorder,
      token: this.o.token,
      sessionKeys: this.o.sessionKeys,
      feedback: this.o.feedback,
      sideCalls: this.o.sideCalls,
      bodyLimit: this.o.bodyLimit,
      defaultMaxTokens: this.o.defaultMaxTokens,
      registry: this.o.registry,
      logger: this.o.logger,
    });
    const url = await app.listen({ host: this.o.host, port: this.o.port });
    this.url = url;
    this.o.onListening?.(url);
    try {
      if (this.o.users) {
        await runSimulatedUsers({
          ...this.o.users,
          url,
          gate: ctx.gate,
          onError: (err) => ctx.log(`simulated session failed: ${err.message}`),
        });
      } else {
        // Live clients: serve until the job ends.
        await new Promise<void>((resolve) => {
          if (ctx.signal.aborted) return resolve();
          ctx.signal.addEventListener('abort', () => resolve(), { once: true });
        });
      }
    } finally {
      await app.close();
      await recorder.close();
    }
  }
}

export interface SimulatedUsersOptions {
  url: string;
  model: string;
  token?: string;
  user: { preference: string; parallel: number; turnsPerSession: number; seed: number };
  sampling: { temperature: number; topP: number; maxTokens: number };
  gate: StalenessGate;
  /** Called with each finished session's share of satisfied replies, redos included (its mean reward). */
  onSession?: (score: number) => void;
  onError: (err: Error) => void;
}

/** Simulated users chatting until the gate closes; each session is one unit of the gate. */
export async function runSimulatedUsers(o: SimulatedUsersOptions): Promise<void> {
  const user = new SimulatedUser({
    preference: o.user.preference,
    seed: o.user.seed,
    split: 'train',
    turnsPerSession: o.user.turnsPerSession,
  });
  const worker = async () => {
    for (;;) {
      const index = await o.gate.acquire();
      if (index === undefined) return;
      try {
        const result = await runHttpSession(user.openSession(index), {
          baseUrl: o.url,
          model: o.model,
          apiKey: o.token,
          temperature: o.sampling.temperature,
          topP: o.sampling.topP,
          maxTokens: o.sampling.maxTokens,
          seed: o.user.seed,
        });
        o.onSession?.(result.score);
      } catch (err) {
        o.onError(err as Error);
      }
    }
  };
  await Promise.all(Array.from({ length: o.user.parallel }, worker));
}

export interface PersonalSourceDeps {
  model: RemoteChatModel;
  /** The cluster token: the endpoint's key unless `serve.apiKeyEnv` names another. */
  clusterToken: string;
  feedback: TurnFeedback;
  registry?: Registry;
  logger: Logger;
  log(line: string): void;
}

/** The personal source a manifest describes (its endpoint, auth, sessions and simulated users). */
export function personalSourceFor(spec: RLJobSpec, d: PersonalSourceDeps): PersonalSource {
  const serve = spec.serve!;
  let token: string | undefined;
  if (serve.auth === 'key') {
    token = serve.apiKeyEnv ? process.env[serve.apiKeyEnv] : d.clusterToken;
    if (!token) {
      throw new ConfigError(
        `spec.serve.apiKeyEnv: the driver's environment has no ${serve.apiKeyEnv} (or it is empty)`,
        { fields: { field: 'spec.serve.apiKeyEnv' } },
      );
    }
  } else {
    d.log('serve.auth is none: anyone who reaches the endpoint can chat and add training data');
  }
  const contextBytes = 64 * d.model.maxContext;
  return new PersonalSource({
    model: d.model,
    host: serve.host,
    port: serve.port,
    token,
    sessionKeys: new SessionKeys(),
    feedback: d.feedback,
    sideCalls: SideCallClassifier.withExtra(serve.sideCalls, 'spec.serve.sideCalls'),
    sessions: serve.sessions,
    bodyLimit: serve.maxRequestBytes ?? Math.max(1024 * 1024, contextBytes),
    defaultMaxTokens: spec.rollout.maxTokens,
    registry: d.registry,
    logger: d.logger,
    onListening: (url) =>
      d.log(
        `serving the policy for live sessions on ${url}/v1 (${token ? (serve.apiKeyEnv ? `key: $${serve.apiKeyEnv}` : 'key: the cluster token') : 'no auth'}; session keys: POST ${url}/rl/start_session)`,
      ),
    users: spec.user && {
      model: d.model.id,
      token,
      user: spec.user,
      sampling: {
        temperature: spec.rollout.temperature,
        topP: spec.rollout.topP,
        maxTokens: spec.rollout.maxTokens,
      },
    },
  });
}
