/**
 * What the two ways of answering `POST /v1/chat/completions` (one JSON body, or SSE chunks in
 * chat-completions-stream.ts) share: the route's context, a request prepared for the engine,
 * the engine's request built from it, the generated text turned into content and tool calls,
 * and the turn handed to the RL capture once it has been served.
 */
import type { FastifyRequest } from 'fastify';
import type { Logger } from '../../common/logger.js';
import type { CaptureContext, TurnHandle, TurnRecorder, TurnSampling } from './capture-recorder.js';
import type { ChatMessage, ChatModel, ToolCall, ToolSchema } from './chat-model.js';
import type { ChatRequest } from './chat-request.js';
import type { ServerMetrics } from './openai-metrics.js';
import { cutAtStop, logprobEntry } from './openai-text.js';
import { DEFAULT_MAX_TOKENS, type GenerateRequest, type GenerateResult } from './rollout-engine.js';
import type { Sampled } from './sampler.js';
import type { SideCallClassifier } from './side-calls.js';
import type { TurnFeedback } from './turn-feedback.js';

/** What the chat route needs of the server it is part of. */
export interface ChatContext {
  model: ChatModel;
  log: Logger;
  /** RL capture of main turns; without it the capture headers are accepted and ignored. */
  recorder?: TurnRecorder;
  /** Told of each recorded turn, so that feedback can name it. */
  feedback?: TurnFeedback;
  sideCalls: SideCallClassifier;
  metrics?: ServerMetrics;
  /** `max_tokens` when a request gives none. */
  defaultMaxTokens?: number;
  /** Text that opens a tool call in generated text. */
  toolCallStart: string;
  /** The server's body limit: an error met mid-stream is worded as the error handler would. */
  bodyLimit: number;
  /** The session a request's per-session key names; undefined for the server's key. */
  keySession(request: FastifyRequest): string | undefined;
  /** Counts a request's HTTP status, once per request (499: the client went away). */
  countStatus(request: FastifyRequest, status: number): void;
}

export interface Prepared {
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

export interface Finished {
  text: string;
  content: string | null;
  toolCalls: ToolCall[];
  finishReason: 'stop' | 'length' | 'tool_calls';
}

/** `onToken` is given when tokens go to the client as they come (streaming). */
export function generateRequest(
  c: ChatContext,
  p: Prepared,
  onToken: ((token: Sampled) => void) | undefined,
  signal: AbortSignal,
  choice = 0,
): GenerateRequest {
  const { model } = c;
  const b = p.body;
  const gen = model.samplingDefaults;
  let maxTokens = b.max_completion_tokens ?? b.max_tokens ?? undefined;
  if (maxTokens === undefined && model.maxContext !== undefined) {
    // As vLLM: a request that sets no limit gets what the context has room for (up to the default).
    const room = Math.max(1, model.maxContext - p.promptTokenIds.length);
    maxTokens = Math.min(c.defaultMaxTokens ?? gen?.maxTokens ?? DEFAULT_MAX_TOKENS, room);
  }
  maxTokens ??= c.defaultMaxTokens ?? gen?.maxTokens;
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
export function tokenHook(log: Logger, inner?: (token: Sampled) => void): (token: Sampled) => void {
  return (token) => {
    try {
      inner?.(token);
    } catch (err) {
      log.error({ err }, 'chat server: handling a streamed token failed');
    }
  };
}

/** The generated text as the answer: cut at a stop string, its tool calls parsed out. */
export function finish(model: ChatModel, p: Prepared, result: GenerateResult): Finished {
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

/** Every token's logprob entry (with its top alternatives), as a choice's `logprobs`. */
export function allLogprobs(model: ChatModel, result: GenerateResult) {
  return {
    content: result.tokenIds.map((id, i) =>
      logprobEntry(model, id, result.logprobs[i], result.topLogprobs?.[i]),
    ),
    refusal: null,
  };
}

/**
 * What the turn was drawn with, as the engine reports it (the request's omissions resolved to
 * generation_config.json's and the engine's defaults, and the seed it drew when none was
 * asked), so the trainer scores the turn at the temperature it was really sampled at.
 */
function sampling(c: ChatContext, p: Prepared, result: GenerateResult): TurnSampling {
  const b = p.body;
  const gen = c.model.samplingDefaults;
  return {
    temperature: result.sampling.temperature,
    top_p: result.sampling.topP,
    top_k: result.sampling.topK,
    max_tokens: b.max_completion_tokens ?? b.max_tokens ?? c.defaultMaxTokens ?? gen?.maxTokens ?? null,
    seed: result.sampling.seed,
  };
}

/** The served turn to the RL capture (a request without a turn handle records nothing). */
export function record(c: ChatContext, p: Prepared, result: GenerateResult, done: Finished): void {
  // Known to the feedback book before the record can be written (and judged).
  if (c.feedback && p.handle?.recorded && p.capture?.sessionId)
    c.feedback.noteTurn(p.capture.sessionId, p.id);
  p.handle?.complete({
    requestId: p.id,
    model: c.model.id,
    weightVersion: result.weightVersion,
    promptTokenIds: result.promptTokenIds,
    tokenIds: result.tokenIds,
    logprobs: result.logprobs,
    text: done.text,
    toolCalls: done.toolCalls,
    finishReason: done.finishReason,
    sampling: sampling(c, p, result),
  });
}

export function usage(result: GenerateResult) {
  return {
    prompt_tokens: result.promptTokenIds.length,
    completion_tokens: result.tokenIds.length,
    total_tokens: result.promptTokenIds.length + result.tokenIds.length,
  };
}

/** The non-standard fields a response adds for RL clients beyond the token ids. */
export function extras(p: Prepared): Record<string, unknown> {
  return p.capture?.sessionId ? { session_id: p.capture.sessionId } : {};
}
