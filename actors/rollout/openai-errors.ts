/**
 * Errors in OpenAI's shape (`{error: {message, type, param, code}}` with an HTTP status), and how
 * the OpenAI-compatible routes turn what they meet (a zod failure, an engine refusal behind an
 * actor call, Fastify's own 4xx) into one. What a client reads never holds a path of the
 * server's file system (a model directory named in a template or tokenizer error): such paths
 * become `<server path>`, and the full error goes to the server's log.
 */
import { z } from 'zod';
import { closest } from '../../common/did-you-mean.js';
import { ConfigError, errorOfClass, NotFoundError } from '../../common/errors.js';
import { ContextLengthError, EngineBusyError } from './rollout-engine.js';
import { TurnAlreadyJudgedError } from './turn-feedback.js';

/** An error with its HTTP status and OpenAI's `{error: {message, type, param, code}}` body. */
export class OpenAiHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = 'OpenAiHttpError';
  }

  body(): { error: { message: string; type: string; param: string | null; code: string | null } } {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

export function invalid(
  message: string,
  param: string | null = null,
  code: string | null = null,
): OpenAiHttpError {
  return new OpenAiHttpError(400, message, 'invalid_request_error', param, code);
}

/** `['messages', 0, 'content']` → `messages[0].content`. */
function paramPath(path: readonly PropertyKey[]): string | null {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out ? `.${String(key)}` : String(key);
  }
  return out || null;
}

/** ` (did you mean 'max_tokens'?)` for a misspelt parameter, or nothing. */
function didYouMean(key: string, params: readonly string[]): string {
  const near = closest(key, params);
  return near ? ` (did you mean '${near}'?)` : '';
}

/**
 * The request's refusal. `params`: the parameters the route takes (the top-level keys of its
 * schema), for the "did you mean" of an unknown one.
 */
export function fromZod(error: z.ZodError, params: readonly string[] = []): OpenAiHttpError {
  const issues = error.issues;
  const first = issues[0];
  if (first?.code === 'unrecognized_keys' && first.path.length === 0) {
    const key = first.keys[0];
    const hint = didYouMean(key, params) || ' (this server does not implement it)';
    return invalid(`Unrecognized request argument supplied: ${key}${hint}`, key);
  }
  const param = first ? paramPath(first.path) : null;
  const describe = (issue: z.core.$ZodIssue) => {
    const p = paramPath(issue.path);
    const hints =
      issue.code === 'unrecognized_keys' && issue.path.length === 0
        ? issue.keys.map((k) => didYouMean(k, params).replace(/^ \(/, ` (${k}: `)).join('')
        : '';
    return p ? `'${p}': ${issue.message}` : `${issue.message}${hints}`;
  };
  const message =
    issues.length === 0
      ? 'invalid request'
      : `Invalid request: ${issues.slice(0, 5).map(describe).join('; ')}${issues.length > 5 ? ` (and ${issues.length - 5} more)` : ''}`;
  return invalid(
    param === null && first?.path.length === 0 ? `${message} (send a JSON object)` : message,
    param,
  );
}

/**
 * An absolute POSIX path of two or more segments (`/models/tiny/tokenizer_config.json`), not
 * part of a URL (`http://host/a/b`) nor of a relative path (`a/b/c`).
 */
const SERVER_PATH = /(?<![\w.~:/-])\/(?:[\w.@+-]+\/)+[\w.@+-]*/g;

/** `text` with the server's file-system paths replaced by `<server path>`. */
export function withoutServerPaths(text: string): string {
  return text.replace(SERVER_PATH, '<server path>');
}

/**
 * The engine's names of request fields (its `GenerateRequest`), as a client of the API sent
 * them: an engine refusal that reaches a client speaks of `max_tokens`, not `maxTokens`.
 */
const API_NAMES: Readonly<Record<string, string>> = {
  maxTokens: 'max_tokens',
  promptTokenIds: 'prompt',
  topP: 'top_p',
  topK: 'top_k',
  topLogprobs: 'top_logprobs',
  logitBias: 'logit_bias',
  presencePenalty: 'presence_penalty',
  frequencyPenalty: 'frequency_penalty',
  stopTokenIds: 'stop_token_ids',
};
const ENGINE_NAME = new RegExp(`\\b(${Object.keys(API_NAMES).join('|')})\\b`, 'g');

/** `text` with the engine's request field names replaced by the API's. */
export function withApiNames(text: string): string {
  return text.replace(ENGINE_NAME, (name) => API_NAMES[name]);
}

export function toOpenAiError(err: unknown, bodyLimit: number): OpenAiHttpError {
  if (err instanceof OpenAiHttpError) return err;
  const mapped = mapError(err, bodyLimit);
  return mapped.status >= 500
    ? mapped
    : new OpenAiHttpError(
        mapped.status,
        withApiNames(withoutServerPaths(mapped.message)),
        mapped.type,
        mapped.param === null ? null : withApiNames(mapped.param),
        mapped.code,
      );
}

function mapError(err: unknown, bodyLimit: number): OpenAiHttpError {
  if (err instanceof z.ZodError) return fromZod(err);
  // An engine behind an actor call throws inside an ActorError: look through it.
  const judged = errorOfClass(err, TurnAlreadyJudgedError);
  if (judged)
    return new OpenAiHttpError(409, judged.message, 'invalid_request_error', 'interaction_id', 'conflict');
  const missing = errorOfClass(err, NotFoundError);
  if (missing) {
    const param = typeof missing.fields.param === 'string' ? missing.fields.param : null;
    return new OpenAiHttpError(404, missing.message, 'invalid_request_error', param, 'not_found');
  }
  const busy = errorOfClass(err, EngineBusyError);
  if (busy) {
    return new OpenAiHttpError(429, busy.message, 'requests', null, 'rate_limit_exceeded');
  }
  const refused = errorOfClass(err, ConfigError);
  if (refused) {
    const param = typeof refused.fields.param === 'string' ? refused.fields.param : null;
    const code =
      refused instanceof ContextLengthError || /context/.test(refused.message)
        ? 'context_length_exceeded'
        : null;
    return invalid(refused.message, param, code);
  }
  const status = (err as { statusCode?: unknown }).statusCode;
  if (status === 413) {
    return new OpenAiHttpError(
      413,
      `Request body is larger than this server's limit of ${bodyLimit} bytes: far more than the model's context holds`,
      'invalid_request_error',
      'messages',
      'request_too_large',
    );
  }
  if (typeof status === 'number' && status >= 400 && status < 500) {
    // Fastify's own: bad JSON, unsupported content type, body too large, …
    return new OpenAiHttpError(status, (err as Error).message, 'invalid_request_error');
  }
  return new OpenAiHttpError(
    500,
    'The server had an error while processing your request; see the rollout server log',
    'server_error',
  );
}
