/**
 * `POST /v1/chat/completions`, with OpenClaw-RL's RL capture headers (`X-Session-Id`,
 * `X-Turn-Type`, `X-Session-Done`, or the body keys `session_id`, `turn_type`, `session_done`)
 * feeding a `TurnRecorder`. This module checks and prepares a request and answers it as one
 * JSON body; chat-completions-stream.ts answers it as SSE.
 *
 * Token ids and logprobs come from the engine (`ChatModel.generate`); nothing is re-tokenized.
 * Responses add a few non-standard fields for RL clients, ignored by OpenAI clients:
 * `prompt_token_ids`, `weight_version`, `choices[0].token_ids` (and `session_id` when sent).
 *
 * What the RL capture records is what was served (capture-recorder.ts): a turn is registered
 * when it arrives, after everything the engine would refuse has been checked (chat-request.ts);
 * it counts (its message becomes the previous turn's next state) once its answer begins; it is
 * recorded once its answer has been written in full. A request refused before its answer began,
 * or whose client left by then, is withdrawn and leaves no trace; one whose client left in the
 * middle of its answer is a 499 and is not recorded. A client that disconnects stops its
 * generation (the engine's slot is freed; a remote engine's call is cancelled through the
 * request's signal).
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ConfigError } from '../../common/errors.js';
import { parseCaptureContext } from './capture-recorder.js';
import {
  allLogprobs,
  type ChatContext,
  extras,
  finish,
  generateRequest,
  type Prepared,
  record,
} from './chat-completions-answer.js';
import { streamChat } from './chat-completions-stream.js';
import type { ToolSchema } from './chat-model.js';
import {
  CHAT_REQUEST_PARAMS,
  type ChatRequest,
  chatRequestSchema,
  checkSampling,
  normalizeMessages,
} from './chat-request.js';
import { modelNotFound } from './models-route.js';
import { watchClose, whenWritten } from './openai-connection.js';
import { fromZod, invalid, withoutServerPaths } from './openai-errors.js';
import { ContextLengthError, type GenerateResult } from './rollout-engine.js';

export type { ChatContext } from './chat-completions-answer.js';

export const CHAT_ROUTE = '/v1/chat/completions';

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

export function registerChatCompletions(app: FastifyInstance, c: ChatContext): void {
  const { model, recorder, metrics, log } = c;

  app.post(CHAT_ROUTE, async (request, reply) => {
    const prepared = await prepare(request);
    try {
      if (prepared.body.stream) return await streamChat(c, request, reply, prepared);
      return await complete(request, reply, prepared);
    } catch (err) {
      // Nothing was answered (an answer that began settled its turn already).
      prepared.handle?.withdraw();
      throw err;
    }
  });

  /**
   * The request checked (its body by the schema, then what the engine would refuse), its prompt
   * encoded, and its turn registered with the RL capture.
   */
  async function prepare(request: FastifyRequest): Promise<Prepared> {
    const startedAt = performance.now();
    const parsed = chatRequestSchema.safeParse(request.body);
    if (!parsed.success) throw fromZod(parsed.error, CHAT_REQUEST_PARAMS);
    const body = parsed.data;
    if (body.model !== model.id) throw modelNotFound(model.id, body.model);
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
          keySession: c.keySession(request),
          messages,
          sideCalls: c.sideCalls,
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
    if (toolChoice === 'required') return `${c.toolCallStart}\n`;
    const name = toolChoice.function.name;
    if (!tools.some((t) => t.function.name === name)) {
      throw invalid(`'tool_choice' names '${name}', which is not among the request's tools`, 'tool_choice');
    }
    return `${c.toolCallStart}\n{"name": ${JSON.stringify(name)}, "arguments": `;
  }

  /** The whole answer as one JSON body (`n` choices, each generated with its own seed). */
  async function complete(request: FastifyRequest, reply: FastifyReply, p: Prepared) {
    const client = watchClose(reply.raw);
    let results: GenerateResult[];
    try {
      // No onToken: nothing reaches the client before the end, so a remote engine that dies
      // midway may start the request over on another.
      results = await Promise.all(
        Array.from({ length: p.body.n ?? 1 }, (_, i) =>
          model.generate(generateRequest(c, p, undefined, client.signal, i)),
        ),
      );
    } catch (err) {
      p.handle?.withdraw();
      if (!client.gone) throw err;
      c.countStatus(request, 499);
      reply.hijack(); // the socket is gone: nothing to send
      return undefined;
    }
    if (client.gone) {
      p.handle?.withdraw();
      c.countStatus(request, 499);
      reply.hijack(); // the socket is gone: nothing to send
      return undefined;
    }
    // The answer goes out now; it is recorded once it has been written in full.
    p.handle?.commit();
    const first = results[0];
    const choices = results.map((result, index) => {
      const done = finish(model, p, result);
      // n > 1 is refused on recorded turns: only a single answer is ever recorded.
      if (index === 0) {
        whenWritten(
          reply.raw,
          // (A body that failed to serialize went out as an error instead.)
          () => (reply.raw.statusCode === 200 ? record(c, p, result, done) : p.handle?.abort()),
          () => {
            p.handle?.abort();
            c.countStatus(request, 499);
          },
        );
      }
      const message: Record<string, unknown> = { role: 'assistant', content: done.content };
      if (done.toolCalls.length > 0) message.tool_calls = done.toolCalls;
      const logprobs = p.wantLogprobs ? allLogprobs(model, result) : null;
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
}
