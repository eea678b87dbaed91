/**
 * AReaL's session routes beside the OpenAI ones: `POST /rl/start_session` (a per-session key),
 * `POST /rl/set_reward` (explicit feedback on a turn), `POST /rl/end_session`, and
 * `GET /rl/stats`. A request with a session key acts on its own session and sees only its own
 * counts; one with the server's key (or any request on a server without auth) names the
 * session it acts on and sees every session. Bodies are checked with one zod schema per route:
 * unknown fields are refused by name, as on the chat route.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { TurnRecorder } from './capture-recorder.js';
import { fromZod, invalid, OpenAiHttpError } from './openai-errors.js';
import type { SessionKeys } from './session-keys.js';
import type { TurnFeedback } from './turn-feedback.js';

export interface RlRoutesOptions {
  /** The weights being served (`/rl/stats`). */
  weightVersion(): number;
  recorder?: TurnRecorder;
  sessionKeys?: SessionKeys;
  feedback?: TurnFeedback;
  /** The session a request's per-session key names; undefined for the server's key. */
  keySession(request: FastifyRequest): string | undefined;
}

/** As long as a session id may be anywhere (capture-recorder.ts refuses longer ones). */
const MAX_SESSION_ID_CHARS = 512;
/** `chatcmpl-` and 24 hex digits; generous room for ids of other servers' shapes. */
const MAX_INTERACTION_ID_CHARS = 256;

const sessionId = z
  .string()
  .min(1, 'a session id is a non-empty string')
  .max(MAX_SESSION_ID_CHARS, `a session id has at most ${MAX_SESSION_ID_CHARS} characters`);

const startSessionBody = z.object({ session_id: sessionId.nullish() }).strict();

const endSessionBody = z.object({ session_id: sessionId.nullish() }).strict();

const setRewardBody = z
  .object({
    session_id: sessionId.nullish(),
    interaction_id: z
      .string()
      .min(1)
      .max(MAX_INTERACTION_ID_CHARS, `an interaction id has at most ${MAX_INTERACTION_ID_CHARS} characters`)
      .nullish(),
    // Any finite number here: the range a reward must fall in is the feedback book's rule.
    reward: z.number().nullish(),
    correction: z.string().nullish(),
  })
  .strict();

/** A route's body checked by its schema; no body at all (or an empty one) is `{}`. */
function bodyOf<S extends z.ZodType>(schema: S, request: FastifyRequest): z.infer<S> {
  const body = request.body;
  const parsed = schema.safeParse(body === undefined || body === null || body === '' ? {} : body);
  if (!parsed.success) throw fromZod(parsed.error);
  return parsed.data;
}

export function registerRlRoutes(app: FastifyInstance, o: RlRoutesOptions): void {
  const { recorder, sessionKeys, feedback } = o;

  /** The session a request acts on: its key's, or the one it names with the server's key. */
  const sessionOf = (request: FastifyRequest, named: string | null | undefined): string => {
    const own = o.keySession(request);
    if (own !== undefined) {
      if (named != null && named !== own) {
        throw invalid(`session_id '${named}' is not the session of this API key`, 'session_id');
      }
      return own;
    }
    if (named == null) throw invalid('session_id is required with the server key', 'session_id');
    return named;
  };

  app.post('/rl/start_session', async (request) => {
    if (!sessionKeys)
      throw new OpenAiHttpError(404, 'this server issues no session keys', 'invalid_request_error');
    if (o.keySession(request) !== undefined) {
      throw new OpenAiHttpError(
        403,
        'a session key cannot start sessions; use the server key',
        'invalid_request_error',
      );
    }
    const body = bodyOf(startSessionBody, request);
    const issued = sessionKeys.issue(body.session_id ?? undefined);
    return { session_id: issued.sessionId, api_key: issued.apiKey };
  });

  app.post('/rl/end_session', async (request) => {
    const body = bodyOf(endSessionBody, request);
    const session = sessionOf(request, body.session_id);
    recorder?.endSession(session);
    sessionKeys?.revoke(session);
    return { session_id: session, ended: true };
  });

  app.post('/rl/set_reward', async (request) => {
    if (!feedback || !recorder) {
      throw new OpenAiHttpError(
        404,
        'this server records no turns to give feedback on',
        'invalid_request_error',
      );
    }
    const body = bodyOf(setRewardBody, request);
    const session = sessionOf(request, body.session_id);
    const given = feedback.give({
      sessionId: session,
      ...(body.interaction_id != null ? { interactionId: body.interaction_id } : {}),
      ...(body.reward != null ? { reward: body.reward } : {}),
      ...(body.correction != null ? { correction: body.correction } : {}),
    });
    return { session_id: given.sessionId, interaction_id: given.interactionId };
  });

  app.get('/rl/stats', async (request) => {
    const own = o.keySession(request);
    if (own !== undefined) {
      // A session key's holder learns about its own session only.
      return {
        weight_version: o.weightVersion(),
        session_id: own,
        capture: recorder ? { perSession: { [own]: recorder.sessionCounts(own) } } : null,
      };
    }
    return {
      weight_version: o.weightVersion(),
      capture: recorder ? { ...recorder.stats(), perSession: recorder.perSession() } : null,
      feedback: feedback?.stats() ?? null,
      session_keys: sessionKeys?.size ?? 0,
    };
  });
}
