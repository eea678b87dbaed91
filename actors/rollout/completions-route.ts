/**
 * `POST /v1/completions`: OpenAI's text completions (what lm-eval and many GRPO scripts call) —
 * a plain prompt, no chat template, the same engine and sampling as chat. The prompt is a
 * string, a one-string array, or token ids; `logprobs: k` gives the legacy
 * `{tokens, token_logprobs, top_logprobs, text_offset}`. `echo` puts the prompt before each
 * completion (with `logprobs`, the prompt's tokens scored by the model: the first is null, and a
 * prompt position lists only its own token among the top ones); `best_of` samples that many and
 * returns the `n` with the highest mean logprob per token, as OpenAI does. Refused by name, with
 * the reason: `suffix` (a chat model has no fill-in-the-middle format), several prompts in one
 * request, and streaming with n > 1 or best_of > 1.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { ChatModel } from './chat-model.js';
import { modelNotFound } from './models-route.js';
import { watchClose } from './openai-connection.js';
import { fromZod, invalid, toOpenAiError } from './openai-errors.js';
import { cutAtStop, finiteLogprob, IncrementalText } from './openai-text.js';
import { encodeWithin } from './prompt-budget.js';
import { DEFAULT_MAX_TOKENS, type GenerateRequest, type GenerateResult } from './rollout-engine.js';

const MAX_CHOICES = 16;

const completionRequestSchema = z
  .object({
    model: z.string(),
    // Token ids are safe integers (zod's int()); whether the vocabulary has them is the engine's check.
    prompt: z.union([z.string(), z.array(z.string()).min(1), z.array(z.number().int().min(0)).min(1)]),
    max_tokens: z.number().int().min(1).nullish(),
    temperature: z.number().min(0).max(2).nullish(),
    top_p: z.number().gt(0).max(1).nullish(),
    top_k: z.number().int().min(-1).nullish(),
    n: z.number().int().min(1).max(MAX_CHOICES).nullish(),
    stream: z.boolean().nullish(),
    stream_options: z.object({ include_usage: z.boolean().nullish() }).nullish(),
    stop: z.union([z.string(), z.array(z.string())]).nullish(),
    seed: z.number().int().nullish(),
    logprobs: z.number().int().min(0).max(20).nullish(),
    echo: z.boolean().nullish(),
    suffix: z.string().nullish(),
    best_of: z.number().int().min(1).nullish(),
    logit_bias: z.record(z.string().regex(/^\d+$/, 'a token id'), z.number().min(-100).max(100)).nullish(),
    presence_penalty: z.number().min(-2).max(2).nullish(),
    frequency_penalty: z.number().min(-2).max(2).nullish(),
    user: z.string().nullish(),
  })
  .strict();

type CompletionRequest = z.infer<typeof completionRequestSchema>;

export interface CompletionsDeps {
  model: ChatModel;
  /** `max_tokens` of a request that sets none, within the context's room. */
  defaultMaxTokens?: number;
}

export function registerCompletions(app: FastifyInstance, d: CompletionsDeps): void {
  const { model } = d;
  app.post('/v1/completions', async (request: FastifyRequest, reply: FastifyReply) => {
    const parsed = completionRequestSchema.safeParse(request.body);
    if (!parsed.success) throw fromZod(parsed.error, Object.keys(completionRequestSchema.shape));
    const body = parsed.data;
    if (body.model !== model.id) throw modelNotFound(model.id, body.model);
    if (body.suffix) {
      throw invalid(
        "'suffix' asks for fill-in-the-middle, which needs the model's FIM tokens and format; this model's chat template defines none",
        'suffix',
      );
    }
    const n = body.n ?? 1;
    const bestOf = body.best_of ?? n;
    if (bestOf < n) throw invalid(`'best_of' (${bestOf}) must be at least 'n' (${n})`, 'best_of');
    if (bestOf > MAX_CHOICES) throw invalid(`'best_of' is at most ${MAX_CHOICES} (got ${bestOf})`, 'best_of');
    if (n > 1 && body.stream) throw invalid(`'n' > 1 is served without streaming only (got ${n})`, 'n');
    if (bestOf > 1 && body.stream) {
      throw invalid("'best_of' > 1 picks among finished completions, so it cannot stream", 'best_of');
    }
    if (body.echo && body.logprobs != null && !model.computeLogprobs) {
      throw invalid(
        "'echo' with 'logprobs' needs a model that can score its prompt; this one cannot",
        'echo',
      );
    }
    const prompt = await promptIds(body);
    // The client's signal stops the generation when the client goes away.
    const client = watchClose(reply.raw);
    const id = `cmpl-${randomBytes(12).toString('hex')}`;
    const created = Math.floor(Date.now() / 1000);
    const stops = (typeof body.stop === 'string' ? [body.stop] : (body.stop ?? [])).filter(
      (s) => s.length > 0,
    );
    const generate = (choice: number, onToken?: GenerateRequest['onToken']) =>
      model.generate({
        ...generateRequest(body, prompt, stops, choice),
        signal: client.signal,
        ...(onToken ? { onToken } : {}),
      });
    const echoText = body.echo ? promptText(body, prompt) : '';
    if (body.stream) return stream(reply, { id, created, body, generate, stops, client, echoText });
    const candidates = await Promise.all(Array.from({ length: bestOf }, (_, i) => generate(i)));
    const results =
      bestOf > n ? [...candidates].sort((a, b) => meanLogprob(b) - meanLogprob(a)).slice(0, n) : candidates;
    const completion = candidates.reduce((k, r) => k + r.tokenIds.length, 0);
    const promptLogprobs =
      body.echo && body.logprobs != null
        ? await model.computeLogprobs!(prompt, 1, body.temperature ?? 1)
        : undefined;
    return {
      id,
      object: 'text_completion',
      created,
      model: model.id,
      system_fingerprint: `clawray-w${Math.min(...results.map((r) => r.weightVersion))}`,
      choices: results.map((r, index) => {
        const { text, finishReason } = finish(r, stops);
        const logprobs = legacyLogprobs(
          r,
          body.logprobs,
          body.echo ? { ids: prompt, logprobs: promptLogprobs! } : undefined,
        );
        return { index, text: echoText + text, logprobs, finish_reason: finishReason };
      }),
      usage: {
        prompt_tokens: prompt.length,
        completion_tokens: completion,
        total_tokens: prompt.length + completion,
      },
      prompt_token_ids: prompt,
      weight_version: Math.min(...results.map((r) => r.weightVersion)),
    };
  });

  /** The prompt as text (echo): as sent, or decoded from its token ids. */
  function promptText(body: CompletionRequest, ids: number[]): string {
    const { prompt } = body;
    if (typeof prompt === 'string') return prompt;
    if (typeof prompt[0] === 'string') return prompt[0] as string;
    return model.decode(ids);
  }

  /** best_of's ranking: mean logprob per generated token. */
  function meanLogprob(r: GenerateResult): number {
    return r.logprobs.length
      ? r.logprobs.reduce((a, b) => a + b, 0) / r.logprobs.length
      : Number.NEGATIVE_INFINITY;
  }

  async function promptIds(body: CompletionRequest): Promise<number[]> {
    const { prompt } = body;
    if (Array.isArray(prompt) && typeof prompt[0] === 'number') return prompt as number[];
    if (Array.isArray(prompt) && prompt.length > 1) {
      throw invalid(`'prompt' with ${prompt.length} prompts: send one prompt per request here`, 'prompt');
    }
    if (!model.encodeText) throw invalid('this model cannot encode plain text', 'prompt');
    const text = Array.isArray(prompt) ? (prompt[0] as string) : prompt;
    const encode = model.encodeText.bind(model);
    return model.maxContext !== undefined
      ? encodeWithin(text, encode, model.maxContext - 1, { param: 'prompt' })
      : encode(text);
  }

  function generateRequest(
    body: CompletionRequest,
    prompt: number[],
    stops: string[],
    choice: number,
  ): GenerateRequest {
    const gen = model.samplingDefaults;
    let maxTokens = body.max_tokens ?? undefined;
    if (maxTokens === undefined) {
      const room =
        model.maxContext !== undefined
          ? Math.max(1, model.maxContext - prompt.length)
          : Number.POSITIVE_INFINITY;
      maxTokens = Math.min(d.defaultMaxTokens ?? gen?.maxTokens ?? DEFAULT_MAX_TOKENS, room);
    }
    const req: GenerateRequest = { promptTokenIds: prompt, maxTokens };
    // What the request omits falls back to the model's generation_config.json.
    const temperature = body.temperature ?? gen?.temperature;
    const topP = body.top_p ?? gen?.topP;
    const topK = body.top_k ?? gen?.topK;
    if (temperature !== undefined) req.temperature = temperature;
    if (topP !== undefined) req.topP = topP;
    if (topK !== undefined) req.topK = Math.max(0, topK);
    if (body.seed != null) req.seed = body.seed + choice;
    if (stops.length > 0) req.stop = stops;
    if (body.logprobs) req.topLogprobs = body.logprobs;
    if (body.logit_bias) req.logitBias = Object.entries(body.logit_bias).map(([k, v]) => [Number(k), v]);
    if (body.presence_penalty) req.presencePenalty = body.presence_penalty;
    if (body.frequency_penalty) req.frequencyPenalty = body.frequency_penalty;
    return req;
  }

  function finish(r: GenerateResult, stops: string[]): { text: string; finishReason: 'stop' | 'length' } {
    let text = r.text ?? model.decode(r.tokenIds);
    let finishReason = r.finishReason;
    if (r.text === undefined && stops.length > 0) {
      const cut = cutAtStop(text, stops);
      text = cut.text;
      if (cut.hit) finishReason = 'stop';
    }
    return { text, finishReason };
  }

  /** OpenAI's legacy logprobs: per token its text, logprob, top alternatives and character offset. */
  function legacyLogprobs(
    r: GenerateResult,
    k: number | null | undefined,
    echoed?: { ids: number[]; logprobs: number[] },
  ) {
    if (k === undefined || k === null) return null;
    let offset = 0;
    // An echoed prompt: its first token has no logprob (nothing comes before it).
    const promptLps: (number | null)[] = echoed ? [null, ...echoed.logprobs.map(finiteLogprob)] : [];
    const promptTokens = (echoed?.ids ?? []).map((t) => model.tokenText(t));
    const tokens = [...promptTokens, ...r.tokenIds.map((t) => model.tokenText(t))];
    return {
      tokens,
      token_logprobs: [...promptLps, ...r.logprobs.map(finiteLogprob)],
      top_logprobs: [
        ...promptTokens.map((t, i) => (promptLps[i] === null ? null : { [t]: promptLps[i] })),
        ...r.tokenIds.map((_, i) =>
          Object.fromEntries(
            (r.topLogprobs?.[i] ?? []).map((t) => [model.tokenText(t.tokenId), finiteLogprob(t.logprob)]),
          ),
        ),
      ],
      text_offset: tokens.map((t) => {
        const at = offset;
        offset += t.length;
        return at;
      }),
    };
  }

  async function stream(
    reply: FastifyReply,
    s: {
      id: string;
      created: number;
      body: CompletionRequest;
      generate: (choice: number, onToken?: GenerateRequest['onToken']) => Promise<GenerateResult>;
      stops: string[];
      client: { readonly gone: boolean };
      echoText: string;
    },
  ) {
    const res = reply.raw;
    const text = new IncrementalText((ids) => model.decode(ids));
    let started = false;
    let sent = '';
    const send = (data: unknown) => {
      if (!s.client.gone && !res.writableEnded) res.write(`data: ${JSON.stringify(data)}\n\n`);
    };
    const chunk = (delta: string, finishReason: string | null) => ({
      id: s.id,
      object: 'text_completion',
      created: s.created,
      model: model.id,
      choices: [{ index: 0, text: delta, logprobs: null, finish_reason: finishReason }],
    });
    const start = () => {
      if (started) return;
      started = true;
      reply.hijack();
      if (!s.client.gone)
        res.writeHead(200, {
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-cache',
        });
      if (s.echoText) send(chunk(s.echoText, null));
    };
    // Stop strings are cut at the end; with them, text streams only once it is final.
    const holdBack = s.stops.length > 0;
    const result = await s
      .generate(0, (token) => {
        start();
        const delta = text.push(token.tokenId);
        if (delta && !holdBack) {
          sent += delta;
          send(chunk(delta, null));
        }
      })
      .catch((err: unknown) => {
        if (!started) throw err;
        // Mid-stream: the error as the error handler would answer it (no internals).
        send(toOpenAiError(err, 0).body());
        if (!s.client.gone) res.end();
        return undefined;
      });
    if (!result) return;
    start();
    const done = finish(result, s.stops);
    if (done.text.length > sent.length && done.text.startsWith(sent))
      send(chunk(done.text.slice(sent.length), null));
    send(chunk('', done.finishReason));
    if (s.body.stream_options?.include_usage) {
      const usage = {
        prompt_tokens: result.promptTokenIds.length,
        completion_tokens: result.tokenIds.length,
        total_tokens: result.promptTokenIds.length + result.tokenIds.length,
      };
      send({ id: s.id, object: 'text_completion', created: s.created, model: model.id, choices: [], usage });
    }
    if (!s.client.gone) res.end('data: [DONE]\n\n');
  }
}
