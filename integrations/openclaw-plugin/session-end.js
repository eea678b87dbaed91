/**
 * Ends a clawray session when OpenClaw ends the user's session (`/new`, `/reset`, idle or daily
 * rollover, deletion, compaction into a new session): `POST <origin>/rl/end_session`, so the job
 * judges the session's last turn at once instead of after its idle timeout.
 *
 * Why these reasons and not `shutdown` / `restart` / `unknown`: a gateway that restarts resumes
 * its sessions under the same ids, and ending them would judge a turn whose next state is still
 * to come.
 *
 * Plain ESM JavaScript, no OpenClaw import, so it is unit-tested without OpenClaw.
 */

/** OpenClaw 2026.9's `session_end` reasons after which the session gets no further turn. */
export const ENDING_REASONS = new Set(['new', 'reset', 'idle', 'daily', 'deleted', 'compaction']);

/** @param {unknown} reason */
export function endsSession(reason) {
  return typeof reason === 'string' && ENDING_REASONS.has(reason);
}

/**
 * The job's end-session URL from the provider's `baseUrl` (the OpenAI base, `…/v1`): the RL
 * routes live beside `/v1`, not under it.
 * @param {string} baseUrl
 */
export function endSessionUrl(baseUrl) {
  const url = new URL(baseUrl);
  url.pathname = `${url.pathname.replace(/\/+$/, '').replace(/\/v1$/, '')}/rl/end_session`;
  url.search = '';
  url.hash = '';
  return url.toString();
}

/**
 * @param {{ baseUrl: string, apiKey?: string, sessionId: string, timeoutMs?: number, fetchImpl?: typeof fetch }} o
 * @returns {Promise<{ ok: boolean, status: number }>}
 */
export async function endSession(o) {
  const headers = /** @type {Record<string, string>} */ ({ 'content-type': 'application/json' });
  if (o.apiKey) headers.authorization = `Bearer ${o.apiKey}`;
  const res = await (o.fetchImpl ?? fetch)(endSessionUrl(o.baseUrl), {
    method: 'POST',
    headers,
    body: JSON.stringify({ session_id: o.sessionId }),
    signal: AbortSignal.timeout(o.timeoutMs ?? 5000),
  });
  await res.arrayBuffer();
  return { ok: res.ok, status: res.status };
}
