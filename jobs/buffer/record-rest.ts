/**
 * A hand check of a trajectory record's small fields (everything but the three long number
 * arrays), for the append path: zod's `RecordRestSchema` costs ~10 µs per record, more than the
 * encoding itself. It accepts only plain, ordinary records and returns exactly what the schema
 * would (same keys in the same order, unknown top-level keys stripped, a message's extra keys
 * kept, fresh arrays and objects around the caller's values). Anything it is unsure of returns
 * undefined, and the caller runs the schema, which accepts it or reports the error: the error
 * messages are the schema's alone.
 */
import type { Message, RecordRest } from './types.js';

export function checkRecordRest(value: unknown): RecordRest | undefined {
  if (!isPlain(value)) return undefined;
  const v = value as Record<string, unknown>;
  const {
    trajectoryId,
    sessionId,
    turn,
    messages,
    nextState,
    votes,
    score,
    hint,
    weightVersion,
    createdAtMs,
  } = v;
  if (!isText(trajectoryId) || !isText(sessionId) || !isCount(turn)) return undefined;
  if (!Array.isArray(messages)) return undefined;
  const outMessages = new Array<Message>(messages.length);
  for (let i = 0; i < messages.length; i++) {
    const m = checkMessage(messages[i]);
    if (m === undefined) return undefined;
    outMessages[i] = m;
  }
  let outNext: Message | null = null;
  if (nextState !== null) {
    const m = checkMessage(nextState);
    if (m === undefined) return undefined;
    outNext = m;
  }
  if (!Array.isArray(votes)) return undefined;
  const outVotes = new Array<number>(votes.length);
  for (let i = 0; i < votes.length; i++) {
    const x = votes[i];
    if (!isFiniteNumber(x)) return undefined;
    outVotes[i] = x;
  }
  if (score !== null && !isFiniteNumber(score)) return undefined;
  if (hint !== null && typeof hint !== 'string') return undefined;
  if (!isCount(weightVersion) || !isCount(createdAtMs)) return undefined;
  const out: RecordRest = {
    trajectoryId,
    sessionId,
    turn,
    messages: outMessages,
    nextState: outNext,
    votes: outVotes,
    score,
    hint,
    weightVersion,
    createdAtMs,
  };
  // An optional key: absent stays absent, an explicit undefined is kept (as the schema does).
  if (Object.hasOwn(v, 'extra')) {
    const extra = v.extra;
    if (extra === undefined) out.extra = undefined;
    else {
      const copy = copyPlain(extra);
      if (copy === undefined) return undefined;
      out.extra = copy;
    }
  }
  return out;
}

/** `role` and `content` first, then the message's other keys in their order. */
function checkMessage(value: unknown): Message | undefined {
  if (!isPlain(value)) return undefined;
  const m = value as Record<string, unknown>;
  const role = m.role;
  if (!isText(role) || !Object.hasOwn(m, 'content')) return undefined;
  const keys = Object.keys(m);
  const out: Message = { role, content: m.content };
  if (keys.length === 2) return out;
  for (const key of keys) {
    if (key === 'role' || key === 'content') continue;
    if (key === '__proto__') return undefined;
    out[key] = m[key];
  }
  return out;
}

/** A shallow copy of a plain object with only enumerable string keys; undefined otherwise. */
function copyPlain(value: unknown): Record<string, unknown> | undefined {
  if (!isPlain(value)) return undefined;
  const o = value as Record<string, unknown>;
  const keys = Object.keys(o);
  if (Object.getOwnPropertyNames(o).length !== keys.length) return undefined;
  if (Object.getOwnPropertySymbols(o).length !== 0) return undefined;
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    if (key === '__proto__') return undefined;
    out[key] = o[key];
  }
  return out;
}

/** An object literal (or JSON.parse result); class instances and the like go to the schema. */
function isPlain(value: unknown): boolean {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

function isText(x: unknown): x is string {
  return typeof x === 'string' && x.length > 0;
}

function isCount(x: unknown): x is number {
  return Number.isSafeInteger(x) && (x as number) >= 0;
}

function isFiniteNumber(x: unknown): x is number {
  return typeof x === 'number' && Number.isFinite(x);
}
