/**
 * `POST /v1/chat/completions` with `stream: true`: real token-by-token SSE, as OpenAI's chunks
 * (plus `token_ids` per chunk, and `prompt_token_ids` / `weight_version` on the first / last).
 *
 * - Headers are sent with the first sampled token, not before, so a request the engine turns
 *   away (queue full → 429, bad request → 400) still gets a proper status and JSON error.
 * - Text is detokenized incrementally (a token that ends inside a multi-byte character waits
 *   for the next one), and text that could be the start of a stop string or of a
 *   `<tool_call>` block is held back; tool calls are parsed at the end and sent as one
 *   `tool_calls` delta before the finishing chunk.
 * - The engine reports top logprobs only at the end, so with `top_logprobs > 0` the logprob
 *   entries of a stream all arrive in the finishing chunk; with `top_logprobs` 0 each chunk
 *   carries the entry of its token.
 * - The turn counts once the first chunk is out, and is recorded once `[DONE]` has been handed
 *   to the socket; a client that resets the stream before then is a 499, not recorded.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  allLogprobs,
  type ChatContext,
  extras,
  finish,
  generateRequest,
  type Prepared,
  record,
  tokenHook,
  usage,
} from './chat-completions-answer.js';
import { watchClose, whenWritten } from './openai-connection.js';
import { toOpenAiError } from './openai-errors.js';
import { ContentGate, IncrementalText, logprobEntry } from './openai-text.js';
import type { GenerateResult } from './rollout-engine.js';

export async function streamChat(
  c: ChatContext,
  request: FastifyRequest,
  reply: FastifyReply,
  p: Prepared,
): Promise<void> {
  const { model, log } = c;
  const res: ServerResponse<IncomingMessage> = reply.raw;
  const client = watchClose(res);
  const text = new IncrementalText((ids) => model.decode(ids));
  const barriers = [...p.stops, ...(p.parseTools ? [c.toolCallStart] : [])];
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

  const onToken = tokenHook(log, (token) => {
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
    result = await model.generate(generateRequest(c, p, onToken, client.signal));
  } catch (err) {
    giveUp();
    if (client.gone) {
      c.countStatus(request, 499);
      return;
    }
    if (!started) throw err; // nothing sent yet: a proper status and JSON error
    const e = toOpenAiError(err, c.bodyLimit);
    log.error({ err }, 'chat server: generation failed mid-stream');
    c.countStatus(request, e.status);
    send(e.body());
    if (!client.gone) res.end();
    return;
  }
  if (client.gone) {
    giveUp();
    c.countStatus(request, 499);
    return;
  }
  start();
  fingerprint = `clawray-w${result.weightVersion}`;
  const done = finish(model, p, result);
  const sent = gate.sent;
  const final = done.content ?? '';
  if (final.length > sent.length && final.startsWith(sent)) {
    send(chunk({ delta: { content: final.slice(sent.length) }, token_ids: [] }));
  }
  if (done.toolCalls.length > 0) {
    send(
      chunk({
        delta: {
          tool_calls: done.toolCalls.map((call, index) => ({
            index,
            id: call.id,
            type: 'function',
            function: { name: call.function.name, arguments: call.function.arguments },
          })),
        },
        token_ids: [],
      }),
    );
  }
  const logprobs = p.wantLogprobs && deferLogprobs ? allLogprobs(model, result) : null;
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
      record(c, p, result, done);
      c.countStatus(request, 200);
    },
    () => {
      p.handle?.abort();
      c.countStatus(request, 499);
    },
  );
  if (!client.gone) res.end('data: [DONE]\n\n');
}
