/**
 * JSON request bodies of the OpenAI-compatible server, with a bound on how deeply they nest.
 * Everything after the parser (zod, the chat template, JSON.stringify of tool-call arguments)
 * walks values recursively; a body of 20,000 nested arrays parses fine and then overflows the
 * stack of whatever walks it next. The bound is checked on the raw text before parsing, in one
 * linear pass, and refused with a 400 naming the limit. Prototype-poisoning keys
 * (`__proto__`, `constructor.prototype`) stay refused as Fastify's own parser does.
 */
import type { FastifyInstance } from 'fastify';
import { OpenAiHttpError } from './openai-errors.js';

/**
 * Arrays and objects one body may nest. A chat request with tools, JSON-schema parameters and
 * object arguments uses well under 20; 64 leaves room and stays far from any stack limit.
 */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** True when JSON text nests arrays and objects deeper than `limit` (strings are skipped). */
export function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > limit) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}

export function tooDeep(limit = MAX_JSON_DEPTH): OpenAiHttpError {
  return new OpenAiHttpError(
    400,
    `the request body nests arrays and objects more than ${limit} levels deep (this server's limit is ${limit}); flatten the deepest value, e.g. send tool-call arguments as a JSON string`,
    'invalid_request_error',
    null,
    'json_too_deep',
  );
}

/** Replaces the server's `application/json` parser with one that bounds nesting first. */
export function registerJsonBody(app: FastifyInstance, limit = MAX_JSON_DEPTH): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = String(body);
    if (nestsDeeperThan(text, limit)) {
      done(tooDeep(limit), undefined);
      return;
    }
    parse(request, text, done);
  });
}
