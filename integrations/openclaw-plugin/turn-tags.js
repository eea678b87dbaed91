/**
 * What the clawray OpenClaw plugin puts on a model request, decided from what OpenClaw tells a
 * plugin (no OpenClaw import here, so it is unit-tested without OpenClaw).
 *
 * Why this shape: on OpenClaw 2026.9 the provider stream wrapper sees each request's
 * `options.sessionId` (the user's session, also for memory-flush runs) and `options.requestId`,
 * which is `<runId>:model:<n>` for agent runs and `<sessionId>:compaction:<id>:model:<n>` for
 * compaction summaries. The run's trigger (`user`, `memory`, `heartbeat`, `cron`, `manual`,
 * `overflow`) is only in the agent hooks' context, keyed by the same run id, so the hooks note
 * it and the wrapper looks it up.
 *
 * Turn types follow OpenClaw-RL: `main` is the agent answering its user (trigger `user`); every
 * other run OpenClaw makes on a session's behalf is `side` and must not be trained on.
 *
 * Plain ESM JavaScript so OpenClaw loads the plugin without a build step.
 */

export const SESSION_HEADER = 'X-Session-Id';
export const TURN_TYPE_HEADER = 'X-Turn-Type';

/** Runs remembered at once; a run's entry goes at `agent_end`, this only bounds a leak. */
export const MAX_TRACKED_RUNS = 4096;

/**
 * `main` for a user-triggered run, `side` for any other known trigger, undefined when the
 * trigger is unknown (the server then classifies the request itself).
 * @param {string | undefined} trigger
 * @returns {'main' | 'side' | undefined}
 */
export function turnTypeOfTrigger(trigger) {
  if (typeof trigger !== 'string' || trigger === '') return undefined;
  return trigger === 'user' ? 'main' : 'side';
}

/**
 * Splits an OpenClaw model request id.
 * @param {unknown} requestId
 * @returns {{ runId?: string, compactionOf?: string }}
 */
export function parseRequestId(requestId) {
  if (typeof requestId !== 'string' || requestId === '') return {};
  const compaction = requestId.lastIndexOf(':compaction:');
  if (compaction > 0) return { compactionOf: requestId.slice(0, compaction) };
  const model = requestId.lastIndexOf(':model:');
  return { runId: model > 0 ? requestId.slice(0, model) : requestId };
}

/** Run id → trigger, noted by the agent hooks, read by the stream wrapper. */
export class RunTriggers {
  /** @param {number} [max] */
  constructor(max = MAX_TRACKED_RUNS) {
    this.max = max;
    /** @type {Map<string, string>} */
    this.byRun = new Map();
  }

  /**
   * @param {unknown} runId
   * @param {unknown} trigger
   */
  note(runId, trigger) {
    if (typeof runId !== 'string' || !runId || typeof trigger !== 'string' || !trigger) return;
    this.byRun.delete(runId);
    this.byRun.set(runId, trigger);
    if (this.byRun.size > this.max) this.byRun.delete(this.byRun.keys().next().value);
  }

  /** @param {string | undefined} runId */
  get(runId) {
    return runId === undefined ? undefined : this.byRun.get(runId);
  }

  /** @param {unknown} runId */
  end(runId) {
    if (typeof runId === 'string') this.byRun.delete(runId);
  }

  get size() {
    return this.byRun.size;
  }
}

/**
 * The headers for one model request.
 * @param {{ sessionId?: unknown, requestId?: unknown }} options the stream call's options
 * @param {RunTriggers} runs
 * @param {{ utility?: boolean }} [kind] `utility`: a simple-completion call (titles, summaries), never a turn
 * @returns {Record<string, string>}
 */
export function tagsFor(options, runs, kind = {}) {
  const { runId, compactionOf } = parseRequestId(options?.requestId);
  const sessionId =
    typeof options?.sessionId === 'string' && options.sessionId !== '' ? options.sessionId : compactionOf;
  const turnType = compactionOf !== undefined || kind.utility ? 'side' : turnTypeOfTrigger(runs.get(runId));
  /** @type {Record<string, string>} */
  const headers = {};
  if (sessionId) headers[SESSION_HEADER] = sessionId;
  if (turnType) headers[TURN_TYPE_HEADER] = turnType;
  return headers;
}
