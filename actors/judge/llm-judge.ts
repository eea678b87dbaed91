/**
 * LLM judge over an OpenAI-compatible `/v1/chat/completions` endpoint, using global `fetch` (no dependency).
 * Sends m requests in parallel and combines the `\boxed{}` verdicts by majority (OpenClaw-RL PRM voting);
 * in OPD mode it also extracts `[HINT_START]…[HINT_END]` hints and keeps the longest +1 hint over 10 chars.
 * Network errors, HTTP errors, timeouts and malformed bodies become invalid votes, never exceptions.
 */
import { buildHintMessages, buildPrmMessages, type JudgeChatMessage, type JudgeInput } from './prompts.js';
import { extractHint, type JudgeScore, majority, parseBoxedScore, selectHint } from './votes.js';

export interface LlmJudgeOptions {
  /** Server root (`http://host:port`) or API base (`http://host:port/v1`). */
  baseURL: string;
  apiKey?: string;
  model: string;
  /** Number of parallel votes m (default 3). */
  votes?: number;
  /** Sampling temperature (default 1). */
  temperature?: number;
  /** `max_tokens` per vote; omitted from the request when undefined. */
  maxTokens?: number;
  /** Per-request timeout in ms (default 120000). */
  timeoutMs?: number;
  /** Injected fetch (defaults to global fetch). */
  fetch?: typeof fetch;
}

export interface JudgeVote {
  /** Parsed boxed score; null when the vote is invalid. */
  score: JudgeScore | null;
  /** Raw completion text, when one came back. */
  text?: string;
  /** Extracted hint (OPD mode only). */
  hint?: string | null;
  /** Why the request failed (network / HTTP / body), when it did. */
  error?: string;
}

export interface JudgeResult {
  score: JudgeScore;
  votes: JudgeVote[];
  /** Number of valid votes. */
  valid: number;
  /** Share of valid votes equal to `score`. */
  agreement: number;
  /** OPD mode: selected hint, or null when no +1 vote carried a hint over 10 chars. Absent in PRM mode. */
  hint?: string | null;
  latencyMs: number;
}

export function chatCompletionsUrl(baseURL: string): string {
  const base = baseURL.replace(/\/+$/, '');
  if (base.endsWith('/chat/completions')) return base;
  return base.endsWith('/v1') ? `${base}/chat/completions` : `${base}/v1/chat/completions`;
}

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export class LlmJudge {
  readonly url: string;
  readonly model: string;
  readonly votes: number;
  readonly temperature: number;
  readonly maxTokens: number | undefined;
  private readonly apiKey: string | undefined;
  private readonly timeoutMs: number;
  private readonly fetchImpl: typeof fetch;

  constructor(opts: LlmJudgeOptions) {
    const votes = opts.votes ?? 3;
    if (!Number.isInteger(votes) || votes < 1)
      throw new RangeError(`votes must be a positive integer, got ${votes}`);
    this.url = chatCompletionsUrl(opts.baseURL);
    this.model = opts.model;
    this.votes = votes;
    this.temperature = opts.temperature ?? 1;
    this.maxTokens = opts.maxTokens;
    this.apiKey = opts.apiKey;
    this.timeoutMs = opts.timeoutMs ?? 120_000;
    this.fetchImpl = opts.fetch ?? fetch;
  }

  /** Process-reward judgement of one turn: majority of m boxed votes. */
  async judge(input: JudgeInput): Promise<JudgeResult> {
    return this.run(buildPrmMessages(input), false);
  }

  /** OPD hint judgement: majority score plus the longest +1 hint over 10 characters (or null). */
  async hint(input: JudgeInput): Promise<JudgeResult> {
    return this.run(buildHintMessages(input), true);
  }

  /** Runs m votes on arbitrary judge messages. */
  async run(messages: JudgeChatMessage[], opd: boolean): Promise<JudgeResult> {
    const t0 = performance.now();
    const votes = await Promise.all(
      Array.from({ length: this.votes }, async (): Promise<JudgeVote> => {
        let text: string;
        try {
          text = await this.complete(messages);
        } catch (e) {
          return opd
            ? { score: null, hint: null, error: errorMessage(e) }
            : { score: null, error: errorMessage(e) };
        }
        const score = parseBoxedScore(text);
        return opd ? { score, text, hint: extractHint(text) } : { score, text };
      }),
    );
    const m = majority(votes.map((v) => v.score));
    const result: JudgeResult = {
      score: m.score,
      votes,
      valid: m.valid,
      agreement: m.agreement,
      latencyMs: performance.now() - t0,
    };
    if (opd) result.hint = selectHint(votes.map((v) => ({ score: v.score, hint: v.hint })));
    return result;
  }

  /** One chat completion; returns the assistant text or throws. */
  private async complete(messages: JudgeChatMessage[]): Promise<string> {
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
