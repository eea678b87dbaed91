/**
 * The OpenAI-compatible HTTP server of a rollout engine, composed of its routes:
 * `/v1/chat/completions` (chat-completions-route.ts, SSE in chat-completions-stream.ts),
 * `/v1/completions` (completions-route.ts), `/v1/models` (models-route.ts), `/healthz`
 * (health-route.ts) and AReaL's `/rl/*` session routes (rl-routes.ts). Each route module checks
 * its request with zod at the boundary and takes what it needs of the server as a small
 * context object; this module creates the server and holds what every route shares:
 *
 * - Authorisation: with a `token`, every route except `/healthz` requires it as a bearer key,
 *   or a per-session key from `POST /rl/start_session`, which also files the request under its
 *   session (the routes read it through `keySession`).
 * - Errors in OpenAI's shape (`{error: {message, type, param, code}}`, openai-errors.ts), the
 *   router's own refusals and unknown routes included. Engine errors keep their meaning behind
 *   an actor call (they arrive inside an ActorError): EngineBusyError is a 429 (with
 *   `retry-after`), a ConfigError such as ContextLengthError a 400.
 * - Bodies of at most `bodyLimit` bytes, nesting at most MAX_JSON_DEPTH levels (json-body.ts).
 * - The count of chat requests by HTTP status (openai-metrics.ts); a client that went away
 *   counts as status 499.
 */
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Registry } from 'prom-client';
import { tokenMatches } from '../../common/auth.js';
import { type Logger, silentLogger } from '../../common/logger.js';
import type { TurnRecorder } from './capture-recorder.js';
import { CHAT_ROUTE, registerChatCompletions } from './chat-completions-route.js';
import type { ChatModel } from './chat-model.js';
import { registerCompletions } from './completions-route.js';
import { HEALTH_PATH, registerHealth } from './health-route.js';
import { registerJsonBody } from './json-body.js';
import { registerModels } from './models-route.js';
import { OpenAiHttpError, toOpenAiError } from './openai-errors.js';
import { createMetrics } from './openai-metrics.js';
import { registerRlRoutes } from './rl-routes.js';
import type { SessionKeys } from './session-keys.js';
import { SideCallClassifier } from './side-calls.js';
import type { TurnFeedback } from './turn-feedback.js';

export interface OpenAiServerOptions {
  model: ChatModel;
  /** Bearer token; when set every route except `/healthz` requires `Authorization: Bearer <token>` (or a session key). */
  token?: string;
  /** RL capture of main turns; without it the capture headers are accepted and ignored. */
  recorder?: TurnRecorder;
  /**
   * Per-session API keys: `POST /rl/start_session` issues them (with `token`), and a request
   * that carries one is authorised and filed under its session.
   */
  sessionKeys?: SessionKeys;
  /** Explicit feedback on recorded turns (`POST /rl/set_reward`). */
  feedback?: TurnFeedback;
  /** Side calls recognised by their markers when a request sends no turn type. Default: the built-in markers. */
  sideCalls?: SideCallClassifier;
  registry?: Registry;
  logger?: Logger;
  /** Largest request body in bytes. Default 32 MiB (agent contexts are long). */
  bodyLimit?: number;
  /** `max_tokens` when a request gives none. Default: the engine's own default. */
  defaultMaxTokens?: number;
  /** Text that opens a tool call in generated text; held back from streamed content. Default `<tool_call>`. */
  toolCallStart?: string;
}

export function createOpenAiServer(options: OpenAiServerOptions): FastifyInstance {
  const { model, token, recorder, sessionKeys, feedback } = options;
  const log = options.logger ?? silentLogger;
  const metrics = options.registry ? createMetrics(options.registry) : undefined;
  const counted = new WeakSet<FastifyRequest>();
  const bodyLimit = options.bodyLimit ?? 32 * 1024 * 1024;
  const app = Fastify({
    logger: false,
    bodyLimit,
    // The router's own refusals (a malformed or over-long URL) in OpenAI's shape too.
    frameworkErrors: (err, _request, reply) => {
      const status = err.statusCode === 414 ? 414 : 400;
      const why = status === 414 ? 'has a path segment longer than this server reads' : 'is not a valid URL';
      const error = new OpenAiHttpError(status, `The request's URL ${why}`, 'invalid_request_error');
      // (Fastify types this hook's reply for no route in particular.)
      void (reply as unknown as FastifyReply).code(status).type('application/json').send(error.body());
    },
  });
  registerJsonBody(app);
  /** The session a request's per-session key names. */
  const keySessions = new WeakMap<FastifyRequest, string>();
  const keySession = (request: FastifyRequest) => keySessions.get(request);

  /** A chat request's status, counted once: by the route when it knows first (a 499), else on response. */
  const countStatus = (request: FastifyRequest, status: number) => {
    if (counted.has(request)) return;
    counted.add(request);
    metrics?.requests.inc({ status: String(status) });
  };

  if (token || sessionKeys) {
    app.addHook('onRequest', async (request, reply) => {
      if (request.url === HEALTH_PATH || request.url.startsWith(`${HEALTH_PATH}?`)) return;
      const authorization = request.headers.authorization;
      if (token && tokenMatches(authorization, token)) return;
      const session = sessionKeys?.sessionOf(authorization);
      if (session !== undefined) {
        keySessions.set(request, session);
        return;
      }
      if (!token) return;
      reply.header('www-authenticate', 'Bearer');
      throw new OpenAiHttpError(
        401,
        'Incorrect or missing API key: send "Authorization: Bearer <key>" with the key this server was started with, or a session key from POST /rl/start_session',
        'invalid_request_error',
        null,
        'invalid_api_key',
      );
    });
  }

  app.addHook('onResponse', async (request, reply) => {
    if (request.routeOptions.url === CHAT_ROUTE) countStatus(request, reply.statusCode);
  });

  app.setErrorHandler((err, request, reply) => {
    const e = toOpenAiError(err, bodyLimit);
    if (e.status >= 500) log.error({ err, url: request.url }, 'chat server: request failed');
    else
      log.debug({ status: e.status, message: e.message, url: request.url }, 'chat server: request refused');
    if (e.status === 429) reply.header('retry-after', '1');
    reply.status(e.status).type('application/json').send(e.body());
  });

  app.setNotFoundHandler((request, reply) => {
    reply
      .status(404)
      .send(
        new OpenAiHttpError(
          404,
          `Invalid URL (${request.method} ${request.url})`,
          'invalid_request_error',
        ).body(),
      );
  });

  registerHealth(app, { model });
  registerModels(app, { model });
  registerRlRoutes(app, {
    weightVersion: () => model.weightVersion,
    recorder,
    sessionKeys,
    feedback,
    keySession,
  });
  registerCompletions(app, { model, defaultMaxTokens: options.defaultMaxTokens });
  registerChatCompletions(app, {
    model,
    log,
    recorder,
    feedback,
    sideCalls: options.sideCalls ?? new SideCallClassifier(),
    metrics,
    defaultMaxTokens: options.defaultMaxTokens,
    toolCallStart: options.toolCallStart ?? '<tool_call>',
    bodyLimit,
    keySession,
    countStatus,
  });

  return app;
}
