/**
 * RL capture for the OpenAI-compatible server. A request's session is, first found wins:
 *
 * - a per-session API key (`Authorization: Bearer <key>` from `POST /rl/start_session`, AReaL's
 *   model): the key names its session, and nothing in the request may name another;
 * - `X-Session-Id`, then body `session_id` (OpenClaw-RL's gateway headers);
 * - body `prompt_cache_key` (what current OpenClaw sends, `"<sessionId>:<n>"` → `<sessionId>`,
 *   when its provider model sets `compat.supportsPromptCacheKey`).
 *
 * `X-Turn-Type` (or body `turn_type`): `main` turns are trained on, `side` turns (memory
 * flushes, summaries, anything not part of the agent's own trajectory) are served only. A
 * request without it is matched against the side-call markers (side-calls.ts) and is a main
 * turn otherwise. `X-Session-Done` (or body `session_done`): `1|true|yes|on` ends the session.
 *
 * Headers win over body keys. The record of main turn k is completed with `next_state`: the
 * LAST message of the session's next main request (the user's reply or the tool result that
 * followed turn k; a gateway's trailing context block is skipped), which is what the judge
 * scores turn k against. A record is therefore
 * written when the next main turn is answered, when the session is marked done (`next_state`
 * null, `session_done` true), when the session is evicted for being idle, or at shutdown.
 *
 * Only what was served counts. A turn is registered as it arrives (`begin`), so next states
 * follow arrival order, but its message becomes the previous turn's next state only once the
 * server starts answering it (`commit`; `complete` and `abort` imply it). A request refused
 * before that (the engine turned it away, the client left before the first byte) is withdrawn
 * (`withdraw`): no record, no next state, and its turn number is given back when no later turn
 * took one. A turn whose client went away after its answer had begun is aborted: no record of
 * its own, but its message stays the previous turn's next state (the user did send it).
 *
 * Differences from OpenClaw-RL, on purpose:
 * - A missing turn type defaults to `main` (after the side-call markers), with a counter and
 *   one warning per session. OpenClaw-RL defaults to `side`, which silently trains on nothing
 *   when a gateway does not send the header (its issues #31 and #36: every turn logged as
 *   `unknown`/`side`).
 * - A missing session id is served but not recorded (and counted): OpenClaw-RL files such
 *   turns under one `"unknown"` session, chaining unrelated conversations into each other.
 * - Records carry the engine's own prompt token ids, sampled token ids and logprobs; nothing
 *   is re-rendered or re-tokenized (OpenClaw-RL re-tokenizes and pads/truncates logprobs to
 *   fit, a source of train/rollout drift).
 * - The last turn of a done session is kept (with `next_state` null, `session_done` true)
 *   rather than dropped, so the judge and the trainer decide what to do with it (explicit
 *   feedback can still score it).
 */
import { appendFile, mkdir } from 'node:fs/promises';
import type { IncomingHttpHeaders } from 'node:http';
import { dirname } from 'node:path';
import { ConfigError } from '../../common/errors.js';
import { type Logger, silentLogger } from '../../common/logger.js';
import type { ChatMessage, ToolCall, ToolSchema } from './chat-model.js';
import { lastRealMessage, type SideCallClassifier } from './side-calls.js';

export type TurnType = 'main' | 'side';

/** Where a request sits in an RL session, from its headers or body keys. */
export interface CaptureContext {
  /** Absent when neither `X-Session-Id` nor `session_id` was sent. */
  sessionId?: string;
  turnType: TurnType;
  /** Neither `X-Turn-Type` nor `turn_type` was sent: the type defaulted to `main`. */
  turnTypeDefaulted: boolean;
  /** `X-Session-Done` / `session_done` was true. */
  done: boolean;
  /** Where the session id came from. */
  sessionSource?: SessionSource;
  /** A side call recognised by its markers (no turn type was sent): its kind. */
  sideKind?: string;
}

export type SessionSource = 'api_key' | 'header' | 'body' | 'prompt_cache_key';

/** The RL keys a chat request body may carry (same meaning as the headers). */
export interface CaptureBodyKeys {
  session_id?: unknown;
  turn_type?: unknown;
  session_done?: unknown;
  prompt_cache_key?: unknown;
}

/** What identifies a request beyond its headers and body keys. */
export interface CaptureExtras {
  /** The session a per-session API key belongs to. */
  keySession?: string;
  /** The request's messages, for the side-call markers. */
  messages?: readonly ChatMessage[];
  sideCalls?: SideCallClassifier;
}

/** `"<sessionId>:<n>"` (OpenClaw's) → `<sessionId>`; any other key is the session id itself. */
export function sessionFromPromptCacheKey(key: string): string {
  const m = /^(.+):\d+$/.exec(key);
  return (m ? m[1] : key).trim();
}

const MAX_SESSION_ID_LENGTH = 512;

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined ? undefined : first.trim();
}

/** `1|true|yes|on` → true, `0|false|no|off|''` → false (OpenClaw-RL's spelling), booleans as is. */
export function parseFlag(value: unknown, param: string): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'number') return value !== 0;
  if (typeof value === 'string') {
    const v = value.trim().toLowerCase();
    if (['1', 'true', 'yes', 'on'].includes(v)) return true;
    if (['', '0', 'false', 'no', 'off'].includes(v)) return false;
  }
  throw new ConfigError(
    `${param} must be true or false (1|true|yes|on or 0|false|no|off), got ${JSON.stringify(value)}`,
    {
      fields: { param },
    },
  );
}

/**
 * Reads the capture headers, falling back to the body keys. Throws `ConfigError` (with
 * `fields.param`) for a turn type other than main/side, an unreadable done flag or an
 * over-long session id: a gateway that sends them wrong should hear about it, not train on
 * nothing.
 */
export function parseCaptureContext(
  headers: IncomingHttpHeaders,
  body: CaptureBodyKeys = {},
  extras: CaptureExtras = {},
): CaptureContext {
  let sessionId: string | undefined;
  let sessionParam = 'X-Session-Id';
  let sessionSource: SessionSource | undefined;
  const fromHeader = header(headers, 'x-session-id');
  const fromBody =
    typeof body.session_id === 'string' || typeof body.session_id === 'number'
      ? String(body.session_id).trim()
      : undefined;
  const fromCacheKey =
    typeof body.prompt_cache_key === 'string' && body.prompt_cache_key.trim()
      ? sessionFromPromptCacheKey(body.prompt_cache_key)
      : undefined;
  if (extras.keySession !== undefined) {
    // The key is the credential: a request may not file itself under somebody else's session.
    for (const [named, param] of [
      [fromHeader, 'X-Session-Id'],
      [fromBody, 'session_id'],
    ] as const) {
      if (named && named !== extras.keySession) {
        throw new ConfigError(
          `${param} '${named}' is not the session of this request's API key ('${extras.keySession}'); send one or the other`,
          { fields: { param } },
        );
      }
    }
    sessionId = extras.keySession;
    sessionSource = 'api_key';
  } else if (fromHeader) {
    sessionId = fromHeader;
    sessionSource = 'header';
  } else if (fromBody) {
    sessionId = fromBody;
    sessionParam = 'session_id';
    sessionSource = 'body';
  } else if (fromCacheKey) {
    sessionId = fromCacheKey;
    sessionParam = 'prompt_cache_key';
    sessionSource = 'prompt_cache_key';
  }
  if (sessionId !== undefined && sessionId.length > MAX_SESSION_ID_LENGTH) {
    throw new ConfigError(`${sessionParam} is longer than ${MAX_SESSION_ID_LENGTH} characters`, {
      fields: { param: sessionParam },
    });
  }

  let rawType: unknown = header(headers, 'x-turn-type');
  let typeParam = 'X-Turn-Type';
  if (!rawType && body.turn_type !== undefined && body.turn_type !== null && body.turn_type !== '') {
    rawType = body.turn_type;
    typeParam = 'turn_type';
  }
  let turnType: TurnType = 'main';
  const turnTypeDefaulted = !rawType;
  if (rawType) {
    const t = typeof rawType === 'string' ? rawType.trim().toLowerCase() : rawType;
    if (t !== 'main' && t !== 'side') {
      throw new ConfigError(`${typeParam} must be 'main' or 'side', got ${JSON.stringify(rawType)}`, {
        fields: { param: typeParam },
      });
    }
    turnType = t;
  }

  const doneHeader = header(headers, 'x-session-done');
  const done = doneHeader
    ? parseFlag(doneHeader, 'X-Session-Done')
    : parseFlag(body.session_done, 'session_done');

  const out: CaptureContext = { turnType, turnTypeDefaulted, done };
  if (sessionId) {
    out.sessionId = sessionId;
    out.sessionSource = sessionSource;
  }
  if (turnTypeDefaulted && extras.sideCalls && extras.messages) {
    const kind = extras.sideCalls.classify(extras.messages);
    if (kind) {
      out.turnType = 'side';
      out.turnTypeDefaulted = false;
      out.sideKind = kind;
    }
  }
  return out;
}

/** Why a record was written (and where its `next_state` came from). */
export type RecordEnd = 'next_turn' | 'session_done' | 'idle_eviction' | 'shutdown';

/** One main turn, as written to the capture sink (snake_case like OpenClaw-RL's records). */
export interface TurnRecord {
  session_id: string;
  /** Index of this main turn in its session (0-based; restarts after done or eviction). */
  turn: number;
  /** The `chatcmpl-…` id the client got. */
  request_id: string;
  model: string;
  /** The weight version every generated token was sampled with. */
  weight_version: number;
  messages: ChatMessage[];
  tools: ToolSchema[] | null;
  /** The engine's own prompt ids (the chat template applied by the model, never re-rendered). */
  prompt_token_ids: number[];
  /** Exactly the sampled ids, including any end-of-sequence token. */
  response_token_ids: number[];
  /** Logprob of each sampled id, as the engine computed it. */
  response_logprobs: number[];
  response_text: string;
  tool_calls: ToolCall[];
  finish_reason: 'stop' | 'length' | 'tool_calls';
  sampling: TurnSampling;
  /** The last message of the session's next main request; null when there was none. */
  next_state: ChatMessage | null;
  session_done: boolean;
  end: RecordEnd;
  /** The turn type was not sent and defaulted to main. */
  turn_type_defaulted: boolean;
  started_at: string;
  finished_at: string;
}

export interface TurnSampling {
  temperature: number | null;
  top_p: number | null;
  top_k: number | null;
  max_tokens: number | null;
  seed: number | null;
}

/** Where records go. Writes are issued one at a time, in order. */
export interface TurnSink {
  write(record: TurnRecord): Promise<void>;
  close?(): Promise<void>;
}

/** Appends one JSON line per record to a file, creating its directory. */
export class JsonlTurnSink implements TurnSink {
  private ready?: Promise<unknown>;

  constructor(readonly file: string) {}

  async write(record: TurnRecord): Promise<void> {
    this.ready ??= mkdir(dirname(this.file), { recursive: true });
    await this.ready;
    await appendFile(this.file, `${JSON.stringify(record)}\n`, 'utf8');
  }
}

/** Keeps records in memory (tests, and in-process drivers that read them directly). */
export class MemoryTurnSink implements TurnSink {
  readonly records: TurnRecord[] = [];

  async write(record: TurnRecord): Promise<void> {
    this.records.push(record);
  }
}

/** What the server knows when a turn's generation has finished. */
export interface TurnOutcome {
  requestId: string;
  model: string;
  weightVersion: number;
  promptTokenIds: number[];
  tokenIds: number[];
  logprobs: number[];
  text: string;
  toolCalls: ToolCall[];
  finishReason: TurnRecord['finish_reason'];
  sampling: TurnSampling;
}

/**
 * One request's place in the capture; the server settles it exactly once: `complete`, `abort`
 * or `withdraw` (the first call wins).
 */
export interface TurnHandle {
  /** True when completing this turn will produce a record (a main turn of a known session). */
  readonly recorded: boolean;
  /**
   * The server started answering: the turn's message goes to the previous turn as its next
   * state. Implied by `complete` and `abort`; idempotent.
   */
  commit(): void;
  /** The generation finished and the client got the whole answer. */
  complete(outcome: TurnOutcome): void;
  /** The answer had begun but the generation failed or the client went away: no record. */
  abort(): void;
  /**
   * The request was refused (or its client left) before any answer began: it leaves no trace.
   * After `commit` it is the same as `abort`.
   */
  withdraw(): void;
}

export interface TurnRecorderOptions {
  sink: TurnSink;
  /** Sessions with nothing in flight for this long are evicted (pending record written with next_state null). Default 30 minutes. */
  idleMs?: number;
  /** Most sessions tracked at once; past it the least recently active idle one is evicted. Default 10 000. */
  maxSessions?: number;
  /** How often idle sessions are looked for. Default min(idleMs / 2, 60 s); 0 turns the timer off (call `sweep`). */
  sweepMs?: number;
  logger?: Logger;
  /** Clock, for tests. */
  now?: () => number;
}

export interface SessionTurnCounts {
  mainTurns: number;
  sideTurns: number;
}

export interface TurnRecorderStats {
  sessions: number;
  records: number;
  mainTurns: number;
  sideTurns: number;
  missingSessionId: number;
  defaultedTurnType: number;
  evictedSessions: number;
  writeErrors: number;
  /** Turns that completed after `close()`. */
  dropped: number;
}

interface PendingTurn {
  turn: number;
  messages: ChatMessage[];
  tools: ToolSchema[] | null;
  turnTypeDefaulted: boolean;
  startedAt: string;
  outcome?: TurnOutcome;
  finishedAt?: string;
  /** Its message, for the turn before it once this one is committed (absent: nothing to give). */
  handoff?: { to: number; message: ChatMessage };
  committed: boolean;
  /** It ended its session when it arrived (X-Session-Done). */
  endedSession: boolean;
}

interface SessionState {
  id: string;
  nextTurn: number;
  /** Main turns still generating. */
  inflight: Map<number, PendingTurn>;
  /** Completed main turns waiting for their next state. */
  waiting: Map<number, PendingTurn>;
  /** Next states that arrived while their turn was still generating. */
  nextStates: Map<number, ChatMessage>;
  /** Set once the session is over; turns still in flight are then written with next_state null. */
  ended?: Exclude<RecordEnd, 'next_turn'>;
  warnedDefaultType: boolean;
  lastActive: number;
  sideTurns: number;
}

const NOOP_HANDLE: TurnHandle = { recorded: false, commit() {}, complete() {}, abort() {}, withdraw() {} };

export class TurnRecorder {
  private readonly sink: TurnSink;
  private readonly logger: Logger;
  private readonly now: () => number;
  private readonly idleMs: number;
  private readonly maxSessions: number;
  /** In least-recently-active order (re-inserted on activity). */
  private readonly sessions = new Map<string, SessionState>();
  private readonly timer?: NodeJS.Timeout;
  private chain: Promise<void> = Promise.resolve();
  private closed = false;
  private warnedMissingSession = false;
  private readonly counts = {
    records: 0,
    mainTurns: 0,
    sideTurns: 0,
    missingSessionId: 0,
    defaultedTurnType: 0,
    evictedSessions: 0,
    writeErrors: 0,
    dropped: 0,
  };

  constructor(options: TurnRecorderOptions) {
    this.sink = options.sink;
    this.logger = options.logger ?? silentLogger;
    this.now = options.now ?? Date.now;
    this.idleMs = options.idleMs ?? 30 * 60_000;
    this.maxSessions = options.maxSessions ?? 10_000;
    const sweepMs = options.sweepMs ?? Math.min(this.idleMs / 2, 60_000);
    if (sweepMs > 0) {
      this.timer = setInterval(() => this.sweep(), sweepMs);
      this.timer.unref();
    }
  }

  /**
   * Registers a request as it arrives (before generation), so that a main turn hands its last
   * message to the previous main turn as `next_state` in arrival order.
   */
  begin(ctx: CaptureContext, input: { messages: ChatMessage[]; tools?: ToolSchema[] }): TurnHandle {
    if (this.closed) return NOOP_HANDLE;
    if (ctx.turnType === 'side') this.counts.sideTurns++;
    else this.counts.mainTurns++;
    if (!ctx.sessionId) {
      this.counts.missingSessionId++;
      if (!this.warnedMissingSession) {
        this.warnedMissingSession = true;
        this.logger.warn(
          'a chat request came without X-Session-Id (or body session_id): it is served but not recorded for RL; ' +
            'set the header on every request of an agent session (logged once)',
        );
      }
      return NOOP_HANDLE;
    }
    let state = this.sessions.get(ctx.sessionId);
    if (!state) {
      this.makeRoom();
      state = {
        id: ctx.sessionId,
        nextTurn: 0,
        inflight: new Map(),
        waiting: new Map(),
        nextStates: new Map(),
        warnedDefaultType: false,
        lastActive: this.now(),
        sideTurns: 0,
      };
    }
    this.touch(state);
    if (ctx.turnTypeDefaulted) {
      this.counts.defaultedTurnType++;
      if (!state.warnedDefaultType) {
        state.warnedDefaultType = true;
        this.logger.warn(
          { sessionId: state.id },
          'chat request without X-Turn-Type (or body turn_type): treated as a main turn and recorded for RL ' +
            "(OpenClaw-RL would treat it as 'side' and train on nothing); send 'main' or 'side' explicitly " +
            '(logged once per session)',
        );
      }
    }

    let handle: TurnHandle = NOOP_HANDLE;
    if (ctx.turnType === 'side') state.sideTurns++;
    if (ctx.turnType === 'main') {
      const k = state.nextTurn++;
      const last = lastRealMessage(input.messages);
      const pending: PendingTurn = {
        turn: k,
        messages: input.messages,
        tools: input.tools && input.tools.length > 0 ? input.tools : null,
        turnTypeDefaulted: ctx.turnTypeDefaulted,
        startedAt: new Date(this.now()).toISOString(),
        // Given to turn k-1 once this one is answered (commit), never if it is withdrawn.
        ...(k > 0 && last ? { handoff: { to: k - 1, message: last } } : {}),
        committed: false,
        endedSession: ctx.done && !state.ended,
      };
      state.inflight.set(k, pending);
      handle = this.mainHandle(state, pending);
    }
    if (ctx.done) this.end(state, 'session_done');
    return handle;
  }

  /** Ends a session as if a request had carried `X-Session-Done` (e.g. from a driver). */
  endSession(sessionId: string): void {
    const state = this.sessions.get(sessionId);
    if (state) this.end(state, 'session_done');
  }

  /** Evicts sessions idle for longer than `idleMs` (nothing in flight); returns how many. */
  sweep(now = this.now()): number {
    let evicted = 0;
    for (const state of [...this.sessions.values()]) {
      if (now - state.lastActive < this.idleMs) break;
      if (state.inflight.size > 0) continue;
      this.end(state, 'idle_eviction');
      this.counts.evictedSessions++;
      evicted++;
    }
    return evicted;
  }

  stats(): TurnRecorderStats {
    return { sessions: this.sessions.size, ...this.counts };
  }

  /** The open sessions (at most `maxSessions`): main turns seen and side calls served, by id. */
  perSession(): Record<string, SessionTurnCounts> {
    const out: Record<string, SessionTurnCounts> = {};
    for (const [id, state] of this.sessions)
      out[id] = { mainTurns: state.nextTurn, sideTurns: state.sideTurns };
    return out;
  }

  /** One session's counts (zeros when it is not open: never seen, ended or evicted). */
  sessionCounts(sessionId: string): SessionTurnCounts {
    const state = this.sessions.get(sessionId);
    return state ? { mainTurns: state.nextTurn, sideTurns: state.sideTurns } : { mainTurns: 0, sideTurns: 0 };
  }

  /** Resolves once every record handed to the sink so far has been written. */
  async flush(): Promise<void> {
    await this.chain;
  }

  /** Writes every pending record (next_state null), waits for the sink, and closes it. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.timer) clearInterval(this.timer);
    for (const state of [...this.sessions.values()]) this.end(state, 'shutdown');
    this.closed = true;
    await this.chain;
    await this.sink.close?.();
  }

  private mainHandle(state: SessionState, pending: PendingTurn): TurnHandle {
    let settled = false;
    const commit = () => {
      if (pending.committed) return;
      pending.committed = true;
      if (pending.handoff) this.giveNextState(state, pending.handoff.to, pending.handoff.message);
    };
    return {
      recorded: true,
      commit: () => {
        if (!settled) commit();
      },
      complete: (outcome) => {
        if (settled) return;
        settled = true;
        commit();
        state.inflight.delete(pending.turn);
        pending.outcome = outcome;
        pending.finishedAt = new Date(this.now()).toISOString();
        if (!state.ended) this.touch(state);
        const next = state.nextStates.get(pending.turn);
        if (next !== undefined) {
          state.nextStates.delete(pending.turn);
          this.write(state, pending, next, 'next_turn');
        } else if (state.ended && (this.closed || !this.awaited(state).has(pending.turn))) {
          this.write(state, pending, null, state.ended);
        } else {
          state.waiting.set(pending.turn, pending);
        }
      },
      abort: () => {
        if (settled) return;
        settled = true;
        commit();
        state.inflight.delete(pending.turn);
        state.nextStates.delete(pending.turn);
      },
      withdraw: () => {
        if (settled) return;
        settled = true;
        if (pending.committed) {
          state.inflight.delete(pending.turn);
          state.nextStates.delete(pending.turn);
          return;
        }
        this.withdraw(state, pending);
      },
    };
  }

  /** Takes back a turn that was never answered, as if its request had not arrived. */
  private withdraw(state: SessionState, pending: PendingTurn): void {
    const k = pending.turn;
    state.inflight.delete(k);
    this.counts.mainTurns--;
    if (pending.turnTypeDefaulted) this.counts.defaultedTurnType--;
    const before = pending.handoff?.to ?? k - 1;
    // A later turn already gave turn k its message: it goes to the turn before k instead.
    const given = state.nextStates.get(k);
    state.nextStates.delete(k);
    if (given !== undefined && k > 0) this.giveNextState(state, before, given);
    // A later turn not answered yet will give its message to the turn before k.
    for (const later of state.inflight.values()) {
      if (later.handoff?.to === k) later.handoff = k > 0 ? { ...later.handoff, to: before } : undefined;
    }
    if (state.nextTurn === k + 1) state.nextTurn = k;
    if (pending.endedSession && state.ended === 'session_done' && !this.sessions.has(state.id)) {
      // Its X-Session-Done did not happen either: the session goes on.
      state.ended = undefined;
      this.sessions.set(state.id, state);
    } else if (state.ended) {
      // The session ended meanwhile: the turn that waited for this one's message gets none.
      this.flushWaiting(state, state.ended);
    }
  }

  private giveNextState(state: SessionState, turn: number, message: ChatMessage): void {
    const waiting = state.waiting.get(turn);
    if (waiting) {
      state.waiting.delete(turn);
      this.write(state, waiting, message, 'next_turn');
    } else if (state.inflight.has(turn)) {
      state.nextStates.set(turn, message);
    }
    // Otherwise turn k-1 failed or its client went away: it has nothing to complete.
  }

  private end(state: SessionState, why: Exclude<RecordEnd, 'next_turn'>): void {
    if (state.ended) return;
    state.ended = why;
    this.flushWaiting(state, why);
    // Turns still generating keep a reference to `state` and are written when they complete.
    if (this.sessions.get(state.id) === state) this.sessions.delete(state.id);
  }

  /**
   * Writes the completed turns of an ended session with no next state, except those whose next
   * turn is still to be answered: they are written when it is (or is withdrawn).
   */
  private flushWaiting(state: SessionState, why: Exclude<RecordEnd, 'next_turn'>): void {
    // At shutdown nothing waits: what a turn not yet answered would have given is lost.
    const awaited = why === 'shutdown' ? new Set<number>() : this.awaited(state);
    for (const pending of [...state.waiting.values()].sort((a, b) => a.turn - b.turn)) {
      if (awaited.has(pending.turn)) continue;
      state.waiting.delete(pending.turn);
      this.write(state, pending, null, why);
    }
  }

  /** Turns whose next state is promised by a later turn not answered yet. */
  private awaited(state: SessionState): Set<number> {
    const out = new Set<number>();
    for (const later of state.inflight.values())
      if (later.handoff && !later.committed) out.add(later.handoff.to);
    return out;
  }

  private touch(state: SessionState): void {
    state.lastActive = this.now();
    this.sessions.delete(state.id);
    this.sessions.set(state.id, state);
  }

  private makeRoom(): void {
    if (this.sessions.size < this.maxSessions) return;
    for (const state of this.sessions.values()) {
      if (state.inflight.size > 0) continue;
      this.logger.warn(
        { sessionId: state.id, maxSessions: this.maxSessions },
        'capture: too many open sessions; evicting the least recently active one',
      );
      this.end(state, 'idle_eviction');
      this.counts.evictedSessions++;
      return;
    }
  }

  private write(state: SessionState, pending: PendingTurn, next: ChatMessage | null, end: RecordEnd): void {
    const outcome = pending.outcome;
    if (!outcome) return;
    if (this.closed) {
      this.counts.dropped++;
      return;
    }
    const record: TurnRecord = {
      session_id: state.id,
      turn: pending.turn,
      request_id: outcome.requestId,
      model: outcome.model,
      weight_version: outcome.weightVersion,
      messages: pending.messages,
      tools: pending.tools,
      prompt_token_ids: outcome.promptTokenIds,
      response_token_ids: outcome.tokenIds,
      response_logprobs: outcome.logprobs,
      response_text: outcome.text,
      tool_calls: outcome.toolCalls,
      finish_reason: outcome.finishReason,
      sampling: outcome.sampling,
      next_state: next,
      session_done: end === 'session_done',
      end,
      turn_type_defaulted: pending.turnTypeDefaulted,
      started_at: pending.startedAt,
      finished_at: pending.finishedAt ?? new Date(this.now()).toISOString(),
    };
    this.counts.records++;
    this.chain = this.chain
      .then(() => this.sink.write(record))
      .catch((err: unknown) => {
        this.counts.writeErrors++;
        this.logger.error(
          { err, sessionId: state.id, turn: pending.turn },
          'capture: writing a turn record failed',
        );
      });
  }
}
