/**
 * Plays a simulated user's session against an agent, turn by turn, resending the whole
 * conversation each time as a chat client does.
 *
 * The agent is a function of the messages (tests and in-process drivers), or an OpenAI-compatible
 * `/v1/chat/completions` endpoint reached with `fetch` (`openAiAgent`). Over HTTP every request
 * carries the headers OpenClaw's gateway adds for OpenClaw-RL: `X-Session-Id`, `X-Turn-Type:
 * main`, and `X-Session-Done: true` on the session's last request, so a capturing server records
 * each reply with the user's reaction to it as `next_state`.
 */
import { Backoff, sleep } from '../../../common/backoff.js';
import { ClawrayError, registerErrorClass } from '../../../common/errors.js';
import { chatCompletionsUrl } from '../../judge/llm-judge.js';
import type { ChatMessage } from '../environment.js';
import { fnv1a } from '../track.js';
import type { TurnOutcome, UserSession } from './simulated-user.js';

/** Where a request sits in its session (what the capture headers say). */
export interface TurnContext {
  sessionId: string;
  /** 0-based index of the reply being asked for. */
  turn: number;
  /** This request is the session's last (`X-Session-Done`). */
  last: boolean;
}

/** An agent: the conversation so far (latest user message last) → the assistant's reply text. */
export type AgentFn = (messages: ChatMessage[], context: TurnContext) => Promise<string>;

export interface RunSessionOptions {
  /** Prepended to every request's messages (the agent's own system prompt; none by default). */
  systemPrompt?: string;
}

export interface SessionResult {
  sessionId: string;
  /** The session's number in its user's sequence. */
  index: number;
  /** The preference's name (`signoff:-- ok`). */
  preference: string;
  /** The whole conversation, ending with the user's reaction to the last reply. */
  messages: ChatMessage[];
  turns: TurnOutcome[];
  replies: number;
  satisfied: number;
  /** satisfied / replies. */
  score: number;
}

/** Plays `session` to its end against `agent` (which must not have been started). */
export async function runSession(
  session: UserSession,
  agent: AgentFn,
  options: RunSessionOptions = {},
): Promise<SessionResult> {
  session.start();
  const system: ChatMessage[] = options.systemPrompt
    ? [{ role: 'system', content: options.systemPrompt }]
    : [];
  for (let turn = 0; !session.done; turn++) {
    const context: TurnContext = {
      sessionId: session.id,
      turn,
      last: turn === session.turnsPerSession - 1,
    };
    const reply = await agent([...system, ...session.messages], context);
    session.react(typeof reply === 'string' ? reply : '');
  }
  return {
    sessionId: session.id,
    index: session.index,
    preference: session.preference.name,
    messages: [...system, ...session.messages],
    turns: [...session.turns],
    replies: session.replies,
    satisfied: session.satisfied,
    score: session.score,
  };
}

export interface OpenAiEndpoint {
  /** `http://host:port`, `…/v1` or the full `…/v1/chat/completions` URL. */
  baseUrl: string;
  model: string;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /**
   * `main` (default) turns are recorded for training; `side` turns are served only, which is
   * what an evaluation through a capturing server wants (held-out sessions must not be trained on).
   */
  turnType?: 'main' | 'side';
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  /**
   * Makes sampling repeatable: each request is sent a seed derived from this one, its session id
   * and turn, so runs repeat exactly while no two requests share a random stream.
   */
  seed?: number;
  /** Per-request timeout (default 120 s). */
  timeoutMs?: number;
  /** Retries of a 429 (queue full) or 503 (paused for a weight update) answer (default 5). */
  retries?: number;
  /** For tests; default the global fetch. */
  fetch?: typeof fetch;
}

/** A non-negative 31-bit seed for one request of one session. */
export function requestSeed(seed: number, context: TurnContext): number {
  return Number.parseInt(fnv1a(`${seed}:${context.sessionId}:${context.turn}`), 16) & 0x7fffffff;
}

/** An HTTP status the server may stop giving if asked again a little later. */
const RETRYABLE = new Set([429, 503]);

export class ChatEndpointError extends ClawrayError {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message, { fields: { status } });
    // Rate limits and server errors may pass; a 4xx for the request itself will not.
    (this as { retryable: boolean }).retryable = status === 429 || status >= 500;
  }
}
registerErrorClass(ChatEndpointError);

/** The headers OpenClaw's gateway adds to a request of an RL session. */
export function sessionHeaders(
  context: TurnContext,
  turnType: 'main' | 'side' = 'main',
): Record<string, string> {
  const headers: Record<string, string> = { 'X-Session-Id': context.sessionId, 'X-Turn-Type': turnType };
  if (context.last) headers['X-Session-Done'] = 'true';
  return headers;
}

/** An agent that asks an OpenAI-compatible chat-completions endpoint (non-streaming). */
export function openAiAgent(endpoint: OpenAiEndpoint): AgentFn {
  const url = chatCompletionsUrl(endpoint.baseUrl);
  const doFetch = endpoint.fetch ?? fetch;
  const retries = endpoint.retries ?? 5;
  const timeoutMs = endpoint.timeoutMs ?? 120_000;
  return async (messages, context) => {
    const body: Record<string, unknown> = { model: endpoint.model, messages, stream: false };
    if (endpoint.temperature !== undefined) body.temperature = endpoint.temperature;
    if (endpoint.topP !== undefined) body.top_p = endpoint.topP;
    if (endpoint.maxTokens !== undefined) body.max_tokens = endpoint.maxTokens;
    if (endpoint.seed !== undefined) body.seed = requestSeed(endpoint.seed, context);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      ...sessionHeaders(context, endpoint.turnType),
    };
    if (endpoint.apiKey) headers.authorization = `Bearer ${endpoint.apiKey}`;
    const backoff = new Backoff({ initialMs: 200, maxMs: 5000 });
    for (let attempt = 0; ; attempt++) {
      const res = await doFetch(url, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      const text = await res.text();
      if (res.ok) return replyText(text, url);
      if (RETRYABLE.has(res.status) && attempt < retries) {
        await sleep(backoff.next());
        continue;
      }
      throw new ChatEndpointError(res.status, `${url} answered ${res.status}: ${errorMessage(text)}`);
    }
  };
}

function errorMessage(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } };
    if (typeof parsed.error?.message === 'string') return parsed.error.message;
  } catch {
    // not JSON: show the start of the body
  }
  return body.slice(0, 300);
}

function replyText(body: string, url: string): string {
  let parsed: { choices?: { message?: { content?: unknown } }[] };
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new ChatEndpointError(200, `${url} answered with a body that is not JSON: ${body.slice(0, 200)}`);
  }
  const content = parsed.choices?.[0]?.message?.content;
  if (content === undefined) {
    throw new ChatEndpointError(200, `${url} answered without choices[0].message: ${body.slice(0, 200)}`);
  }
  // A reply made only of tool calls says nothing to the user.
  return typeof content === 'string' ? content : '';
}

/** Plays `session` against an OpenAI-compatible endpoint (see `openAiAgent`). */
export function runHttpSession(
  session: UserSession,
  endpoint: OpenAiEndpoint,
  options: RunSessionOptions = {},
): Promise<SessionResult> {
  return runSession(session, openAiAgent(endpoint), options);
}
