/**
 * The body of `POST /v1/chat/completions`: its schema (unknown fields refused by name, as
 * OpenAI does), the messages as the chat template takes them, and the checks of what the
 * engine would refuse, made before a turn is registered with the RL capture so that a refused
 * request leaves no trace there.
 */
import { z } from 'zod';
import type { ChatMessage } from './chat-model.js';
import { invalid } from './openai-errors.js';

/** Most choices one request may ask for (`n`). */
export const MAX_CHOICES = 16;

const contentPart = z.object({ type: z.string(), text: z.string().optional() }).superRefine((part, ctx) => {
  if (part.type !== 'text') {
    ctx.addIssue({
      code: 'custom',
      path: ['type'],
      message: `content part type '${part.type}' is not supported: this model takes text parts only`,
    });
  } else if (typeof part.text !== 'string') {
    ctx.addIssue({ code: 'custom', path: ['text'], message: 'a text part needs a string `text`' });
  }
});

const toolCallSchema = z.object({
  id: z.string(),
  type: z.literal('function').default('function'),
  function: z.object({
    name: z.string(),
    arguments: z.union([z.string(), z.record(z.string(), z.unknown())]).default('{}'),
  }),
});

const messageSchema = z.object({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
  content: z.union([z.string(), z.array(contentPart)]).nullish(),
  name: z.string().optional(),
  tool_calls: z.array(toolCallSchema).nullish(),
  tool_call_id: z.string().optional(),
});

const toolSchema = z.object({
  type: z.literal('function'),
  function: z.object({
    name: z.string().min(1),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
  }),
});

export const chatRequestSchema = z
  .object({
    model: z.string(),
    messages: z.array(messageSchema).min(1, 'messages must hold at least one message'),
    tools: z.array(toolSchema).nullish(),
    tool_choice: z
      .union([
        z.enum(['auto', 'none', 'required']),
        z.object({ type: z.literal('function'), function: z.object({ name: z.string().min(1) }) }),
      ])
      .nullish(),
    parallel_tool_calls: z.boolean().nullish(),
    temperature: z.number().min(0).max(2).nullish(),
    top_p: z.number().gt(0).max(1).nullish(),
    top_k: z.number().int().min(-1).nullish(),
    max_tokens: z.number().int().min(1).nullish(),
    max_completion_tokens: z.number().int().min(1).nullish(),
    stop: z.union([z.string(), z.array(z.string())]).nullish(),
    seed: z.number().int().nullish(),
    logprobs: z.boolean().nullish(),
    top_logprobs: z.number().int().min(0).max(20).nullish(),
    stream: z.boolean().nullish(),
    stream_options: z.object({ include_usage: z.boolean().nullish() }).nullish(),
    n: z.number().int().min(1).max(MAX_CHOICES).nullish(),
    logit_bias: z.record(z.string().regex(/^\d+$/, 'a token id'), z.number().min(-100).max(100)).nullish(),
    presence_penalty: z.number().min(-2).max(2).nullish(),
    frequency_penalty: z.number().min(-2).max(2).nullish(),
    response_format: z.looseObject({ type: z.string() }).nullish(),
    chat_template_kwargs: z.record(z.string(), z.unknown()).nullish(),
    // Accepted and without effect here, as their meaning allows: end-user ids and tags for the
    // caller's own bookkeeping, and the service tier (there is one).
    user: z.string().nullish(),
    safety_identifier: z.string().nullish(),
    metadata: z.record(z.string(), z.string()).nullish(),
    service_tier: z.string().nullish(),
    store: z.boolean().nullish(),
    // Read for the session it names (OpenClaw's); there is no prompt cache to key.
    prompt_cache_key: z.string().nullish(),
    session_id: z.union([z.string(), z.number()]).nullish(),
    turn_type: z.string().nullish(),
    session_done: z.union([z.boolean(), z.string(), z.number()]).nullish(),
  })
  // Anything else is refused by name (as OpenAI does), never dropped without a word.
  .strict();

export type ChatRequest = z.infer<typeof chatRequestSchema>;

/** The parameters a chat request may carry, for the "did you mean" of an unknown one. */
export const CHAT_REQUEST_PARAMS: readonly string[] = Object.keys(chatRequestSchema.shape);

function joinContent(content: ChatRequest['messages'][number]['content']): string | null {
  if (content === undefined || content === null) return null;
  if (typeof content === 'string') return content;
  return content.map((p) => p.text ?? '').join('\n');
}

export function normalizeMessages(messages: ChatRequest['messages']): ChatMessage[] {
  return messages.map((m) => {
    const out: ChatMessage = {
      role: m.role === 'developer' ? 'system' : m.role,
      content: joinContent(m.content),
    };
    if (m.tool_calls && m.tool_calls.length > 0) {
      out.tool_calls = m.tool_calls.map((c) => ({
        id: c.id,
        type: 'function',
        function: {
          name: c.function.name,
          arguments:
            typeof c.function.arguments === 'string'
              ? c.function.arguments
              : JSON.stringify(c.function.arguments),
        },
      }));
    }
    if (m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id;
    if (m.name !== undefined) out.name = m.name;
    return out;
  });
}

/**
 * What the engine refuses about a request's sampling, checked before the turn is registered:
 * `logit_bias` ids outside the vocabulary, and `max_tokens` past the room the prompt leaves in
 * the context (as vLLM words it). `promptTokens` is the prompt as it will be generated from.
 */
export function checkSampling(
  body: ChatRequest,
  promptTokens: number,
  limits: { vocabSize?: number; maxContext?: number },
): void {
  const { vocabSize, maxContext } = limits;
  if (body.logit_bias && vocabSize !== undefined) {
    const outside = Object.keys(body.logit_bias).find((id) => !(Number(id) < vocabSize));
    if (outside !== undefined) {
      throw invalid(
        `'logit_bias' names token ${outside}, outside this model's vocabulary (ids 0..${vocabSize - 1})`,
        'logit_bias',
      );
    }
  }
  const asked = body.max_completion_tokens ?? body.max_tokens ?? undefined;
  if (asked !== undefined && maxContext !== undefined && promptTokens + asked > maxContext) {
    const param = body.max_completion_tokens != null ? 'max_completion_tokens' : 'max_tokens';
    throw invalid(
      `This model's maximum context length is ${maxContext} tokens. However, you requested ${promptTokens + asked} tokens (${promptTokens} in the messages, ${asked} in the completion). Please reduce the length of the messages or completion ('${param}').`,
      param,
      'context_length_exceeded',
    );
  }
}
