/**
 * The OpenAI-compatible HTTP server of a rollout engine: `/v1/chat/completions` (JSON and real
 * token-by-token SSE), `/v1/models`, `/healthz`, with OpenClaw-RL's RL capture headers
 * (`X-Session-Id`, `X-Turn-Type`, `X-Session-Done`, or the body keys `session_id`,
 * `turn_type`, `session_done`) feeding a `TurnRecorder`.
 *
 * Token ids and logprobs come from the engine (`ChatModel.generate`); nothing is re-tokenized.
 * Responses add a few non-standard fields for RL clients, ignored by OpenAI clients:
 * `prompt_token_ids`, `weight_version`, `choices[0].token_ids` (and `session_id` when sent).
 *
 * Streaming notes:
 * - Headers are sent with the first sampled token, not before, so a request the engine turns
 *   away (queue full → 429, bad request → 400) still gets a proper status and JSON error.
 * - Text is detokenized incrementally (a token that ends inside a multi-byte character waits
 *   for the next one), and text that could be the start of a stop string or of a
 *   `<tool_call>` block is held back; tool calls are parsed at the end and sent as one
 *   `tool_calls` delta before the finishing chunk.
 * - The engine reports top logprobs only at the end, so with `top_logprobs > 0` the logprob
 *   entries of a stream all arrive in the finishing chunk; with `top_logprobs` 0 each chunk
 *   carries the entry of its token.
 * - A client that disconnects stops its generation (the engine's slot is freed; a remote
 *   engine's call is cancelled through the request's signal); its turn is not recorded and
 *   counts as status 499.
 * - Engine errors keep their meaning behind an actor call (they arrive inside an ActorError):
 *   EngineBusyError is a 429, a ConfigError such as ContextLengthError a 400.
 *
 * What the RL capture records is what was served (capture-recorder.ts): a turn is registered
 * when it arrives, after everything the engine would refuse has been checked (chat-request.ts);
 * it counts (its message becomes the previous turn's next state) once its answer begins; it is
 * recorded once its answer has been written in full. A request refused before its answer began,
 * or whose client left by then, is withdrawn and leaves no trace; one whose client left in the
 * middle of its answer is a 499 and is not recorded.
 *
 * Bodies nest at most MAX_JSON_DEPTH levels (json-body.ts); the `/rl/*` routes are in
 * rl-routes.ts.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { Counter, type Registry } from 'prom-client';
import { tokenMatches } from '../../common/auth.js';
import { ConfigError } from '../../common/errors.js';
import { type Logger, silentLogger } from '../../common/logger.js';
import {
  type CaptureContext,
  parseCaptureContext,
  type TurnHandle,
  type TurnRecorder,
  type TurnSampling,
} from './capture-recorder.js';
import type { ChatMessage, ChatModel, ToolCall, ToolSchema } from './chat-model.js';
import {
  CHAT_REQUEST_PARAMS,
  type ChatRequest,
  chatRequestSchema,
  checkSampling,
  normalizeMessages,
} from './chat-request.js';
import { registerCompletions } from './completions-route.js';
import { registerJsonBody } from './json-body.js';
import { fromZod, invalid, OpenAiHttpError, toOpenAiError, withoutServerPaths } from './openai-errors.js';
import { ContentGate, cutAtStop, IncrementalText, logprobEntry } from './openai-text.js';
import { registerRlRoutes } from './rl-routes.js';
import {
  ContextLengthError,
  DEFAULT_MAX_TOKENS,
  type GenerateRequest,
  type GenerateResult,
} from './rollout-engine.js';
import type { Sampled } from './sampler.js';
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

const CHAT_ROUTE = '/v1/chat/completions';
/**
 * Why the chat template refused, in words fit for the client: the template's (or tokenizer's)
 * own message, without the file it came from.
 */
function templateReason(err: unknown): string {
  const inner = err instanceof ConfigError && err.cause instanceof Error ? err.cause : err;
  return withoutServerPaths(inner instanceof Error ? inner.message : String(inner));
}

function completionId(): string {
  return `chatcmpl-${randomBytes(12).toString('hex')}`;
}

// ---------------------------------------------------------------------------------------------
// Metrics

function getOrCreate<T>(registry: Registry, name: string, make: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? make();
}

/** Token counts and latencies are the engine's (rollout-metrics.ts); the server counts requests. */
interface ServerMetrics {
  requests: Counter<'status'>;
  missingHeaders: Counter<'header'>;
  turns: Counter<'type' | 'kind' | 'session'>;
}

/** Token metrics a server created in a registry (shared by further servers on that registry). */
function createMetrics(registry: Registry): ServerMetrics {
  const requests = getOrCreate(
    registry,
    'clawray_rollout_requests_total',
    () =>
      new Counter({
        name: 'clawray_rollout_requests_total',
        help: 'Chat completion requests served by the OpenAI-compatible server, by HTTP status (499: client went away)',
        labelNames: ['status'],
        registers: [registry],
      }),
  );
  const missingHeaders = getOrCreate(
    registry,
    'clawray_rollout_capture_missing_headers_total',
    () =>
      new Counter({
        name: 'clawray_rollout_capture_missing_headers_total',
        help: 'Chat requests without an RL capture header (session_id: not recorded; turn_type: defaulted to main)',
        labelNames: ['header'],
        registers: [registry],
      }),
  );
  const turns = getOrCreate(
    registry,
    'clawray_rollout_capture_turns_total',
    () =>
      new Counter({
        name: 'clawray_rollout_capture_turns_total',
        help: 'Chat requests seen by the RL capture, by turn type (main|side), kind (declared, defaulted, or the side call recognised: memory_flush, compaction, heartbeat, cron, …) and where the session id came from (api_key, header, body, prompt_cache_key, none)',
        labelNames: ['type', 'kind', 'session'],
        registers: [registry],
      }),
  );
  return { requests, missingHeaders, turns };
}

// ---------------------------------------------------------------------------------------------
// The server

interface Prepared {
  id: string;
  created: number;
  body: ChatRequest;
  messages: ChatMessage[];
  tools?: ToolSchema[];
  parseTools: boolean;
  /** The start of a tool call put in the model's mouth (tool_choice required / named). */
  forcedPrefix?: string;
  stops: string[];
  topLogprobs: number;
  wantLogprobs: boolean;
  promptTokenIds: number[];
  capture?: CaptureContext;
  handle?: TurnHandle;
  startedAt: number;
}

interface Finished {
  text: string;
  content: string | null;
  toolCalls: ToolCall[];
  finishReason: 'stop' | 'length' | 'tool_calls';
}

export function createOpenAiServer(options: OpenAiServerOptions): FastifyInstance {
  const { model, token, recorder, sessionKeys, feedback } = options;
  const log = options.logger ?? silentLogger;
  const metrics = options.registry ? createMetrics(options.registry) : undefined;
  const toolCallStart = options.toolCallStart ?? '<tool_call>';
  const sideCalls = options.sideCalls ?? new SideCallClassifier();
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

  const countStatus = (request: FastifyRequest, status: number) => {
    if (counted.has(request)) return;
    counted.add(request);
    metrics?.requests.inc({ status: String(status) });
  };

  if (token || sessionKeys) {
    app.addHook('onRequest', async (request, reply) => {
      if (request.url === '/healthz' || request.url.startsWith('/healthz?')) return;
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

  app.get('/healthz', async () => ({ status: 'ok', model: model.id, weightVersion: model.weightVersion }));

  const modelCreated = Math.floor(Date.now() / 1000);
  const modelCard = () => ({ id: model.id, object: 'model', created: modelCreated, owned_by: 'clawray' });
  app.get('/v1/models', async () => ({ object: 'list', data: [modelCard()] }));
  app.get<{ Params: { id: string } }>('/v1/models/:id', async (request) => {
    if (request.params.id !== model.id) throw modelNotFound(request.params.id);
    return modelCard();
  });

  registerRlRoutes(app, {
    weightVersion: () => model.weightVersion,
    recorder,
    sessionKeys,
    feedback,
    keySession: (request) => keySessions.get(request),
  });
  registerCompletions(app, {
    model,
    defaultMaxTokens: options.defaultMaxTokens,
    modelNotFound,
    watchClose: (reply) => watchClose(reply.raw),
  });

  app.post(CHAT_ROUTE, async (request, reply) => {
    const prepared = await prepare(request);
    try {
      if (prepared.body.stream) return await stream(request, reply, prepared);
      return await complete(request, reply, prepared);
    } catch (err) {
      // Nothing was answered (an answer that began settled its turn already).
      prepared.handle?.withdraw();
      throw err;
    }
  });

  function modelNotFound(id: string): OpenAiHttpError {
    return new OpenAiHttpError(
      404,
      `The model '${id}' does not exist; this server serves '${model.id}'`,
      'invalid_request_error',
      'model',
      'model_not_found',
    );
  }

  async function prepare(request: FastifyRequest): Promise<Prepared> {
    const startedAt = performance.now();
    const parsed = chatRequestSchema.safeParse(request.body);
    if (!parsed.success) throw fromZod(parsed.error, CHAT_REQUEST_PARAMS);
    const body = parsed.data;
    if (body.model !== model.id) throw modelNotFound(body.model);
    const n = body.n ?? 1;
    if (n > 1 && body.stream) throw invalid(`'n' > 1 is served without streaming only (got ${n})`, 'n');
    const format = body.response_format?.type ?? 'text';
    if (format !== 'text' && format !== 'json_object') {
      throw invalid(
        `'response_format' ${JSON.stringify(format)} is not supported: send {"type": "json_object"} (one JSON object) or {"type": "text"}; JSON schemas need a grammar this server does not have`,
        'response_format',
      );
    }
    if (
      format === 'json_object' &&
      body.tool_choice !== undefined &&
      body.tool_choice !== 'auto' &&
      body.tool_choice !== 'none'
    ) {
      throw invalid(
        "'response_format' json_object cannot be combined with a forced tool call ('tool_choice'): the answer is a JSON object, not a tool call",
        'response_format',
      );
    }
    if (body.store === true)
      throw invalid("'store': this server keeps no completions to retrieve later", 'store');
    const toolChoice = body.tool_choice ?? 'auto';
    const messages = normalizeMessages(body.messages);
    const tools: ToolSchema[] | undefined =
      body.tools && body.tools.length > 0
        ? body.tools.map((t) => ({
            type: 'function',
            function: {
              name: t.function.name,
              ...(t.function.description !== undefined ? { description: t.function.description } : {}),
              ...(t.function.parameters !== undefined ? { parameters: t.function.parameters } : {}),
            },
          }))
        : undefined;
    const forcedPrefix = forcedToolPrefix(toolChoice, tools);
    const capture = recorder
      ? parseCaptureContext(request.headers, body, {
          keySession: keySessions.get(request),
          messages,
          sideCalls,
        })
      : undefined;
    let promptTokenIds: number[];
    try {
      const kwargs = body.chat_template_kwargs ?? undefined;
      promptTokenIds =
        model.encodeChatWithin && model.maxContext !== undefined
          ? await model.encodeChatWithin(messages, tools, model.maxContext - 1, kwargs)
          : model.encodeChat(messages, tools, kwargs);
    } catch (err) {
      if (err instanceof ContextLengthError) throw err;
      // The template's own words (a template's raise_exception is meant for the client), never
      // the file it came from; the whole error goes to the log.
      log.debug({ err }, 'chat server: the chat template refused a request');
      throw invalid(
        `the chat template could not be applied to these messages: ${templateReason(err)}`,
        'messages',
      );
    }
    if (forcedPrefix) promptTokenIds = [...promptTokenIds, ...model.encodeText!(forcedPrefix)];
    checkSampling(body, promptTokenIds.length, { vocabSize: model.vocabSize, maxContext: model.maxContext });
    const stops = (typeof body.stop === 'string' ? [body.stop] : (body.stop ?? [])).filter(
      (s) => s.length > 0,
    );
    const wantLogprobs = body.logprobs === true;
    const prepared: Prepared = {
      id: completionId(),
      created: Math.floor(Date.now() / 1000),
      body,
      messages,
      ...(tools ? { tools } : {}),
      parseTools: tools !== undefined && toolChoice !== 'none',
      forcedPrefix,
      stops,
      wantLogprobs,
      topLogprobs: wantLogprobs ? (body.top_logprobs ?? 0) : 0,
      promptTokenIds,
      startedAt,
    };
    if (recorder && capture) {
      if (n > 1 && capture.sessionId && capture.turnType === 'main') {
        throw invalid(
          `'n' > 1 on a recorded session turn: a session's turn has one answer (send n = 1, or X-Turn-Type: side)`,
          'n',
        );
      }
      if (!capture.sessionId) metrics?.missingHeaders.inc({ header: 'session_id' });
      if (capture.turnTypeDefaulted) metrics?.missingHeaders.inc({ header: 'turn_type' });
      metrics?.turns.inc({
        type: capture.turnType,
        kind: capture.sideKind ?? (capture.turnTypeDefaulted ? 'defaulted' : 'declared'),
        session: capture.sessionSource ?? 'none',
      });
      prepared.capture = capture;
      // Registered before generation: a main turn hands its last message to the previous
      // main turn (next_state) in arrival order.
      prepared.handle = recorder.begin(capture, { messages, ...(tools ? { tools } : {}) });
    }
    return prepared;
  }

  /**
   * `tool_choice` 'required' or a named function, without constrained decoding: the answer is
   * started for the model with the opening of a tool call (and the function's name), so it can
   * only continue one; the prefix is part of the prompt, never of the sampled tokens.
   */
  function forcedToolPrefix(
    toolChoice: NonNullable<ChatRequest['tool_choice']>,
    tools: ToolSchema[] | undefined,
  ): string | undefined {
    if (toolChoice === 'auto' || toolChoice === 'none') return undefined;
    if (!tools)
      throw invalid("'tool_choice' asks for a tool call, but the request has no 'tools'", 'tool_choice');
    if (!model.encodeText)
      throw invalid(
        `'tool_choice' ${JSON.stringify(toolChoice)} is not supported by this model`,
        'tool_choice',
      );
    if (toolChoice === 'required') return `${toolCallStart}\n`;
    const name = toolChoice.function.name;
    if (!tools.some((t) => t.function.name === name)) {
      throw invalid(`'tool_choice' names '${name}', which is not among the request's tools`, 'tool_choice');
    }
    return `${toolCallStart}\n{"name": ${JSON.stringify(name)}, "arguments": `;
  }

  /** `onToken` is given when tokens go to the client as they come (streaming). */
  function generateRequest(
    p: Prepared,
    onToken: ((token: Sampled) => void) | undefined,
    signal: AbortSignal,
    choice = 0,
  ): GenerateRequest {
    const b = p.body;
    const gen = model.samplingDefaults;
    let maxTokens = b.max_completion_tokens ?? b.max_tokens ?? undefined;
    if (maxTokens === undefined && model.maxContext !== undefined) {
      // As vLLM: a request that sets no limit gets what the context has room for (up to the default).
      const room = Math.max(1, model.maxContext - p.promptTokenIds.length);
      maxTokens = Math.min(options.defaultMaxTokens ?? gen?.maxTokens ?? DEFAULT_MAX_TOKENS, room);
    }
    maxTokens ??= options.defaultMaxTokens ?? gen?.maxTokens;
    const req: GenerateRequest = {
      promptTokenIds: p.promptTokenIds,
      signal,
      ...(onToken ? { onToken } : {}),
    };
    if (maxTokens !== undefined) req.maxTokens = maxTokens;
    // What the request omits falls back to the model's generation_config.json (then the engine's defaults).
    const temperature = b.temperature ?? gen?.temperature;
    const topP = b.top_p ?? gen?.topP;
    const topK = b.top_k ?? gen?.topK;
    if (temperature !== undefined) req.temperature = temperature;
    if (topP !== undefined) req.topP = topP;
    if (topK !== undefined) req.topK = Math.max(0, topK);
    // Each of n choices draws with its own seed, so that they differ and repeat.
    if (b.seed !== undefined && b.seed !== null) req.seed = b.seed + choice;
    if (b.logit_bias) req.logitBias = Object.entries(b.logit_bias).map(([id, bias]) => [Number(id), bias]);
    if (b.presence_penalty) req.presencePenalty = b.presence_penalty;
    if (b.frequency_penalty) req.frequencyPenalty = b.frequency_penalty;
    if (b.response_format?.type === 'json_object') req.json = true;
    if (p.stops.length > 0) req.stop = p.stops;
    if (p.topLogprobs > 0) req.topLogprobs = p.topLogprobs;
    return req;
  }

  /** The onToken hook: wraps `inner` so it never throws into the engine's batch loop. */
  function tokenHook(inner?: (token: Sampled) => void): (token: Sampled) => void {
    return (token) => {
      try {
        inner?.(token);
      } catch (err) {
        log.error({ err }, 'chat server: handling a streamed token failed');
      }
    };
  }

  function finish(p: Prepared, result: GenerateResult): Finished {
    let text = (p.forcedPrefix ?? '') + (result.text ?? model.decode(result.tokenIds));
    let finishReason: Finished['finishReason'] = result.finishReason;
    if (result.text === undefined && p.stops.length > 0) {
      const cut = cutAtStop(text, p.stops);
      text = cut.text;
      if (cut.hit) finishReason = 'stop';
    }
    let content: string | null = text;
    let toolCalls: ToolCall[] = [];
    if (p.parseTools) {
      const parsed = model.parseToolCalls(text);
      // parallel_tool_calls: false keeps the first call (the model may still have written more).
      toolCalls = p.body.parallel_tool_calls === false ? parsed.toolCalls.slice(0, 1) : parsed.toolCalls;
      content = parsed.content;
      if (toolCalls.length > 0) {
        finishReason = 'tool_calls';
        if (!content) content = null;
      }
    }
    return { text, content, toolCalls, finishReason };
  }

  function sampling(p: Prepared): TurnSampling {
    const b = p.body;
    const gen = model.samplingDefaults;
    return {
      temperature: b.temperature ?? gen?.temperature ?? null,
      top_p: b.top_p ?? gen?.topP ?? null,
      top_k: b.top_k ?? gen?.topK ?? null,
      max_tokens:
        b.max_completion_tokens ?? b.max_tokens ?? options.defaultMaxTokens ?? gen?.maxTokens ?? null,
      seed: b.seed ?? null,
    };
  }

  function record(p: Prepared, result: GenerateResult, done: Finished): void {
    // Known to the feedback book before the record can be written (and judged).
    if (feedback && p.handle?.recorded && p.capture?.sessionId) feedback.noteTurn(p.capture.sessionId, p.id);
    p.handle?.complete({
      requestId: p.id,
      model: model.id,
      weightVersion: result.weightVersion,
      promptTokenIds: result.promptTokenIds,
      tokenIds: result.tokenIds,
      logprobs: result.logprobs,
      text: done.text,
      toolCalls: done.toolCalls,
      finishReason: done.finishReason,
      sampling: sampling(p),
    });
  }

  function usage(result: GenerateResult) {
    return {
      prompt_tokens: result.promptTokenIds.length,
      completion_tokens: result.tokenIds.length,
      total_tokens: result.promptTokenIds.length + result.tokenIds.length,
    };
  }

  function extras(p: Prepared): Record<string, unknown> {
    return p.capture?.sessionId ? { session_id: p.capture.sessionId } : {};
  }

  /**
   * Watches for the client going away before the response has been fully written; its
   * signal stops the generation so the engine's slot goes to someone who is still listening.
   */
  function watchClose(res: ServerResponse): { readonly gone: boolean; readonly signal: AbortSignal } {
    const controller = new AbortController();
    const state = { gone: false, signal: controller.signal };
    res.once('close', () => {
      if (res.writableFinished) return;
      state.gone = true;
      controller.abort();
    });
    return state;
  }

  /**
   * Calls `written` once the whole response has been handed to the socket, or `lost` when the
   * client went away before that (exactly one of them).
   */
  function whenWritten(res: ServerResponse, written: () => void, lost: () => void): void {
    if (res.writableFinished) {
      written();
      return;
    }
    if (res.destroyed) {
      lost();
      return;
    }
    res.once('finish', written);
    res.once('close', () => {
      if (!res.writableFinished) lost();
    });
  }

  async function complete(request: FastifyRequest, reply: FastifyReply, p: Prepared) {
    const client = watchClose(reply.raw);
    let results: GenerateResult[];
    try {
      // No onToken: nothing reaches the client before the end, so a remote engine that dies
      // midway may start the request over on another.
      results = await Promise.all(
        Array.from({ length: p.body.n ?? 1 }, (_, i) =>
          model.generate(generateRequest(p, undefined, client.signal, i)),
        ),
      );
    } catch (err) {
      p.handle?.withdraw();
      if (!client.gone) throw err;
      countStatus(request, 499);
      reply.hijack(); // the socket is gone: nothing to send
      return undefined;
    }
    if (client.gone) {
      p.handle?.withdraw();
      countStatus(request, 499);
      reply.hijack(); // the socket is gone: nothing to send
      return undefined;
    }
    // The answer goes out now; it is recorded once it has been written in full.
    p.handle?.commit();
    const first = results[0];
    const choices = results.map((result, index) => {
      const done = finish(p, result);
      // n > 1 is refused on recorded turns: only a single answer is ever recorded.
      if (index === 0) {
        whenWritten(
          reply.raw,
          // (A body that failed to serialize went out as an error instead.)
          () => (reply.raw.statusCode === 200 ? record(p, result, done) : p.handle?.abort()),
          () => {
            p.handle?.abort();
            countStatus(request, 499);
          },
        );
      }
      const message: Record<string, unknown> = { role: 'assistant', content: done.content };
      if (done.toolCalls.length > 0) message.tool_calls = done.toolCalls;
      const logprobs = p.wantLogprobs
        ? {
            content: result.tokenIds.map((id, i) =>
              logprobEntry(model, id, result.logprobs[i], result.topLogprobs?.[i]),
            ),
            refusal: null,
          }
        : null;
      return { index, message, logprobs, finish_reason: done.finishReason, token_ids: result.tokenIds };
    });
    // The oldest weights any choice was sampled with.
    const weightVersion = Math.min(...results.map((r) => r.weightVersion));
    const completionTokens = results.reduce((n, r) => n + r.tokenIds.length, 0);
    return {
      id: p.id,
      object: 'chat.completion',
      created: p.created,
      model: model.id,
      system_fingerprint: `clawray-w${weightVersion}`,
      choices,
      usage: {
        prompt_tokens: first.promptTokenIds.length,
        completion_tokens: completionTokens,
        total_tokens: first.promptTokenIds.length + completionTokens,
      },
      prompt_token_ids: first.promptTokenIds,
      weight_version: weightVersion,
      ...extras(p),
    };
  }

  async function stream(request: FastifyRequest, reply: FastifyReply, p: Prepared) {
    const res: ServerResponse<IncomingMessage> = reply.raw;
    const client = watchClose(res);
    const text = new IncrementalText((ids) => model.decode(ids));
    const barriers = [...p.stops, ...(p.parseTools ? [toolCallStart] : [])];
    const gate = new ContentGate(barriers);
    // A forced tool call: everything the model writes is inside it, nothing is content.
    if (p.forcedPrefix) gate.push(p.forcedPrefix);
    const deferLogprobs = p.topLogprobs > 0;
    let started = false;
    let answered = false;
    let fingerprint = `clawray-w${model.weightVersion}`;

    const send = (data: unknown) => {
      if (!client.gone && !res.writableEnded) res.write(`data: ${JSON.stringify(data)}\n\n`);
    };
    const chunk = (choice: Record<string, unknown>, more: Record<string, unknown> = {}) => ({
      id: p.id,
      object: 'chat.completion.chunk',
      created: p.created,
      model: model.id,
      system_fingerprint: fingerprint,
      choices: [{ index: 0, logprobs: null, finish_reason: null, ...choice }],
      ...more,
    });
    const start = () => {
      if (started) return;
      started = true;
      reply.hijack();
      if (client.gone) return;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      send(
        chunk(
          { delta: { role: 'assistant', content: '' }, token_ids: [] },
          { prompt_token_ids: p.promptTokenIds, ...extras(p) },
        ),
      );
      // The answer has begun: the turn counts (its message is the previous turn's next state).
      answered = true;
      p.handle?.commit();
    };
    /** The turn is not recorded; with nothing answered yet, it leaves no trace at all. */
    const giveUp = () => (answered ? p.handle?.abort() : p.handle?.withdraw());

    const onToken = tokenHook((token) => {
      start();
      if (client.gone) return;
      const delta = gate.push(text.push(token.tokenId));
      const entry =
        p.wantLogprobs && !deferLogprobs ? logprobEntry(model, token.tokenId, token.logprob) : undefined;
      if (!delta && !entry) return;
      send(
        chunk({
          delta: { content: delta },
          ...(entry ? { logprobs: { content: [entry], refusal: null } } : {}),
          token_ids: [token.tokenId],
        }),
      );
    });

    let result: GenerateResult;
    try {
      result = await model.generate(generateRequest(p, onToken, client.signal));
    } catch (err) {
      giveUp();
      if (client.gone) {
        countStatus(request, 499);
        return;
      }
      if (!started) throw err; // nothing sent yet: a proper status and JSON error
      const e = toOpenAiError(err, bodyLimit);
      log.error({ err }, 'chat server: generation failed mid-stream');
      countStatus(request, e.status);
      send(e.body());
      if (!client.gone) res.end();
      return;
    }
    if (client.gone) {
      giveUp();
      countStatus(request, 499);
      return;
    }
    start();
    fingerprint = `clawray-w${result.weightVersion}`;
    const done = finish(p, result);
    const sent = gate.sent;
    const final = done.content ?? '';
    if (final.length > sent.length && final.startsWith(sent)) {
      send(chunk({ delta: { content: final.slice(sent.length) }, token_ids: [] }));
    }
    if (done.toolCalls.length > 0) {
      send(
        chunk({
          delta: {
            tool_calls: done.toolCalls.map((c, index) => ({
              index,
              id: c.id,
              type: 'function',
              function: { name: c.function.name, arguments: c.function.arguments },
            })),
          },
          token_ids: [],
        }),
      );
    }
    const logprobs =
      p.wantLogprobs && deferLogprobs
        ? {
            content: result.tokenIds.map((id, i) =>
              logprobEntry(model, id, result.logprobs[i], result.topLogprobs?.[i]),
            ),
            refusal: null,
          }
        : null;
    send(
      chunk(
        { delta: {}, logprobs, finish_reason: done.finishReason, token_ids: [] },
        { weight_version: result.weightVersion },
      ),
    );
    if (p.body.stream_options?.include_usage) {
      send({
        id: p.id,
        object: 'chat.completion.chunk',
        created: p.created,
        model: model.id,
        system_fingerprint: fingerprint,
        choices: [],
        usage: usage(result),
      });
    }
    // Recorded once the client has been handed all of it; a client that resets the stream
    // before then (after any number of bytes) is a 499 and its turn is not recorded.
    whenWritten(
      res,
      () => {
        record(p, result, done);
        countStatus(request, 200);
      },
      () => {
        p.handle?.abort();
        countStatus(request, 499);
      },
    );
    if (!client.gone) res.end('data: [DONE]\n\n');
  }

  return app;
}
