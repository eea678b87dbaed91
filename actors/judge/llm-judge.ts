/**
 * LLM judge over an OpenAI-compatible `/v1/chat/completions` endpoint, using global `fetch` (no dependency).
 * `LlmVoter` produces one `\boxed{}` vote (the unit a `JudgeVoter` actor serves); `LlmJudge` sends m of
 * them in parallel and combines them by majority (OpenClaw-RL PRM voting); in OPD mode it also extracts
 * `[HINT_START]…[HINT_END]` hints and keeps the longest +1 hint over 10 chars.
 * Network errors, HTTP errors, timeouts and malformed bodies become invalid votes, never exceptions.
 */
import type { Registry } from 'prom-client';
import { JudgeMetrics } from './judge-metrics.js';
import { buildHintMessages, buildPrmMessages, type JudgeChatMessage, type JudgeInput } from './prompts.js';
import { extractHint, type JudgeResult, type JudgeVote, parseBoxedScore, tallyVotes } from './votes.js';

export type { JudgeResult, JudgeVote } from './votes.js';

export type JudgeMode = 'prm' | 'opd';

export interface LlmEndpointOptions {
  /** Server root (`http://host:port`) or API base (`http://host:port/v1`). */
  baseURL: string;
  apiKey?: string;
  model: string;
  /** Sampling temperature (default 1). */
  temperature?: number;
  /** `max_tokens` per vote; omitted from the request when undefined. */
  maxTokens?: number;
  /** Per-request timeout in ms (default 120000). */
  timeoutMs?: number;
  /** Injected fetch (defaults to global fetch). */
  fetch?: typeof fetch;
}

export interface LlmJudgeOptions extends LlmEndpointOptions {
  /** Number of parallel votes m (default 3). */
  votes?: number;
  /** Where votes and turns are counted (default prom-client's default registry). */
  registry?: Registry;
}

export function chatCompletionsUrl(baseURL: string): string {
  const base = baseURL.replace(/\/+$/, '');
  if (base.endsWith('/chat/completions')) return base;
  return base.endsWith('/v1') ? `${base}/chat/completions` : `${base}/v1/chat/completions`;
}

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** The judge messages of a turn for a mode. */
export function judgeMessages(input: JudgeInput, mode: JudgeMode): JudgeChatMessage[] {
  return mode === 'opd' ? buildHintMessages(input) : buildPrmMessages(input);
}

/** A judge model's chat completion: the assistant's text for `messages`, or a throw. */
export type JudgeCompletion = (
  messages: JudgeChatMessage[],
  sampling: { temperature: number; maxTokens: number | undefined },
) => Promise<string>;

/** One vote per call against an OpenAI-compatible endpoint (or a judge model the caller serves). */
export class LlmVoter {
  readonly url: string;
  readonly model: string;
  readonly temperature: number;
  readonly maxTokens: number | undefined;
  private readonly apiKey: string | undefined;
  private readonly timeoutMs: number;
  private readonly fetchImpl: typeof fetch;
  private readonly completion?: JudgeCompletion;

  constructor(opts: LlmEndpointOptions, completion?: JudgeCompletion) {
    this.url = completion ? `in-job:${opts.model}` : chatCompletionsUrl(opts.baseURL);
    this.model = opts.model;
    this.temperature = opts.temperature ?? 1;
    this.maxTokens = opts.maxTokens;
    this.apiKey = opts.apiKey;
    this.timeoutMs = opts.timeoutMs ?? 120_000;
    this.fetchImpl = opts.fetch ?? fetch;
    this.completion = completion;
  }

  /** Votes with a judge model served by the caller (the job's own judge engines) instead of an endpoint. */
  static serving(
    o: { model: string; temperature?: number; maxTokens?: number },
    completion: JudgeCompletion,
  ): LlmVoter {
    return new LlmVoter({ ...o, baseURL: 'http://in-job' }, completion);
  }

  /** One judgement of `input`; a turn without a next state gives an invalid vote (no evidence). */
  async voteOn(input: JudgeInput, mode: JudgeMode): Promise<JudgeVote> {
    if (input.nextState) return this.vote(judgeMessages(input, mode), mode === 'opd');
    const vote: JudgeVote = {
      score: null,
      error: 'no next state to judge the turn by',
      backend: 'llm',
      latencyMs: 0,
    };
    if (mode === 'opd') vote.hint = null;
    return vote;
  }

  /** One vote on arbitrary judge messages; never throws. */
  async vote(messages: JudgeChatMessage[], opd: boolean): Promise<JudgeVote> {
    const t0 = performance.now();
    let text: string;
    try {
      text = await this.complete(messages);
    } catch (e) {
      const failed: JudgeVote = {
        score: null,
        error: errorMessage(e),
        backend: 'llm',
        latencyMs: performance.now() - t0,
      };
      if (opd) failed.hint = null;
      return failed;
    }
    const vote: JudgeVote = {
      score: parseBoxedScore(text),
      text,
      backend: 'llm',
      latencyMs: performance.now() - t0,
    };
    if (opd) vote.hint = extractHint(text);
    return vote;
  }

  /** One chat completion; returns the assistant text or throws. */
  private async complete(messages: JudgeChatMessage[]): Promise<string> {
    if (this.completion)
      return this.completion(messages, { temperature: this.temperature, maxTokens: this.maxTokens });
    const body: Record<string, unknown> = {
      model: this.model,
      messages,
      temperature: this.temperature,
      stream: false,
    };
    if (this.maxTokens !== undefined) body.max_tokens = this.maxTokens;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;
    const res = await this.fetchImpl(this.url, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    if (!res.ok) {
      const detail = await res.text().catch(() => '');
      throw new Error(`HTTP ${res.status}${detail ? `: ${detail.slice(0, 200)}` : ''}`);
    }
    const json = (await res.json()) as {
      choices?: Array<{ message?: { content?: unknown } }>;
    };
    const msg = json.choices?.[0]?.message;
    const content = msg?.content;
    if (typeof content !== 'string') throw new Error('response has no choices[0].message.content string');
    return content;
  }
}

export class LlmJudge {
  readonly url: string;
  readonly model: string;
  readonly votes: number;
  readonly temperature: number;
  readonly maxTokens: number | undefined;
  readonly voter: LlmVoter;
  private readonly metrics: JudgeMetrics;

  constructor(opts: LlmJudgeOptions) {
    const votes = opts.votes ?? 3;
    if (!Number.isInteger(votes) || votes < 1)
      throw new RangeError(`votes must be a positive integer, got ${votes}`);
    this.voter = new LlmVoter(opts);
    this.url = this.voter.url;
    this.model = this.voter.model;
    this.votes = votes;
    this.temperature = this.voter.temperature;
    this.maxTokens = this.voter.maxTokens;
    this.metrics = new JudgeMetrics(opts.registry);
  }

  /** Process-reward judgement of one turn: majority of m boxed votes. */
  async judge(input: JudgeInput): Promise<JudgeResult> {
    return this.collect(() => this.voter.voteOn(input, 'prm'), false);
  }

  /** OPD hint judgement: majority score plus the longest +1 hint over 10 characters (or null). */
  async hint(input: JudgeInput): Promise<JudgeResult> {
    return this.collect(() => this.voter.voteOn(input, 'opd'), true);
  }

  /** Runs m votes on arbitrary judge messages. */
  async run(messages: JudgeChatMessage[], opd: boolean): Promise<JudgeResult> {
    return this.collect(() => this.voter.vote(messages, opd), opd);
  }

  private async collect(vote: () => Promise<JudgeVote>, opd: boolean): Promise<JudgeResult> {
    const t0 = performance.now();
    const votes = await Promise.all(Array.from({ length: this.votes }, vote));
    for (const v of votes) this.metrics.recordVote('llm', v);
    const result = tallyVotes(votes, opd, performance.now() - t0);
    this.metrics.recordTurn(result, opd);
    return result;
  }
}
