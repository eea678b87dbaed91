/**
 * A hand check of a trajectory record's small fields (everything but the three long number
 * arrays), for the append path: zod's `RecordRestSchema` costs ~10 µs per record, more than the
 * encoding itself. It accepts only plain, ordinary records and returns exactly what the schema
 * would (same keys in the same order, unknown top-level keys stripped, a message's extra keys
 * kept, fresh arrays and objects around the caller's values). Anything it is unsure of returns
 * undefined, and the caller runs the schema, which accepts it or reports the error: the error
 * messages are the schema's alone.
 */
import {
  type Message,
  RECORD_SCHEMA_VERSION,
  type RecordJudgement,
  type RecordReference,
  type RecordRest,
  type RecordSampling,
  type RecordTeacher,
} from './record-schema.js';

export function checkRecordRest(value: unknown): RecordRest | undefined {
  if (!isPlain(value)) return undefined;
  const v = value as Record<string, unknown>;
  const {
    schemaVersion,
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
    responseText,
    requestId,
  } = v;
  if (schemaVersion !== RECORD_SCHEMA_VERSION) return undefined;
  if (!isText(trajectoryId) || !isText(sessionId) || !isCount(turn)) return undefined;
  const outMessages = checkMessages(messages);
  if (outMessages === undefined) return undefined;
  let outNext: Message | null = null;
  if (nextState !== null) {
    const m = checkMessage(nextState);
    if (m === undefined) return undefined;
    outNext = m;
  }
  const outVotes = copyNumbers(votes);
  if (outVotes === undefined) return undefined;
  if (score !== null && !isFiniteNumber(score)) return undefined;
  if (hint !== null && typeof hint !== 'string') return undefined;
  if (!isCount(weightVersion) || !isCount(createdAtMs)) return undefined;
  if (typeof responseText !== 'string') return undefined;
  const sampling = checkSampling(v.sampling);
  const group = checkGroup(v.group);
  const episode = checkEpisode(v.episode);
  const task = v.task === null ? null : checkTask(v.task);
  if (sampling === undefined || group === undefined || episode === undefined || task === undefined) {
    return undefined;
  }
  if (requestId !== null && !isText(requestId)) return undefined;
  const judgement = v.judgement === null ? null : checkJudgement(v.judgement);
  const teacher = v.teacher === null ? null : checkTeacher(v.teacher);
  if (judgement === undefined || teacher === undefined) return undefined;
  const out: RecordRest = {
    schemaVersion,
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
    responseText,
    sampling,
    group,
    episode,
    task,
    requestId,
    judgement,
    teacher,
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

function checkSampling(value: unknown): RecordSampling | undefined {
  if (!isPlain(value)) return undefined;
  const { temperature, topP, topK, seed } = value as Record<string, unknown>;
  if (!isFiniteNumber(temperature) || temperature < 0) return undefined;
  if (topP !== null && !(isFiniteNumber(topP) && topP > 0 && topP <= 1)) return undefined;
  if (topK !== null && !isCount(topK)) return undefined;
  if (seed !== null && !Number.isSafeInteger(seed)) return undefined;
  return { temperature, topP, topK, seed: seed as number | null };
}

function checkGroup(value: unknown): RecordRest['group'] | undefined {
  if (!isPlain(value)) return undefined;
  const { id, size, index } = value as Record<string, unknown>;
  if (!isText(id) || !isCount(size) || size < 1 || !isCount(index)) return undefined;
  return { id, size, index };
}

function checkEpisode(value: unknown): RecordRest['episode'] | undefined {
  if (!isPlain(value)) return undefined;
  const { id, turns, finalMessages } = value as Record<string, unknown>;
  if (!isText(id) || !isCount(turns) || turns < 1) return undefined;
  if (finalMessages === null) return { id, turns, finalMessages: null };
  const messages = checkMessages(finalMessages);
  return messages === undefined ? undefined : { id, turns, finalMessages: messages };
}

/** Only references without optional keys left undefined take this path (the schema keeps those). */
function checkTask(value: unknown): RecordRest['task'] | undefined {
  if (!isPlain(value)) return undefined;
  const { id, reference } = value as Record<string, unknown>;
  if (!isText(id) || !isPlain(reference)) return undefined;
  const r = reference as Record<string, unknown>;
  if (!isFiniteNumber(r.reward)) return undefined;
  const out: RecordReference = { reward: r.reward };
  if (Object.hasOwn(r, 'custom')) {
    if (r.custom !== null && !isFiniteNumber(r.custom)) return undefined;
    out.custom = r.custom as number | null;
  }
  if (Object.hasOwn(r, 'answer')) {
    if (typeof r.answer !== 'string') return undefined;
    out.answer = r.answer;
  }
  for (const key of ['testsPassed', 'testsTotal'] as const) {
    if (!Object.hasOwn(r, key)) continue;
    const x = r[key];
    if (!isCount(x)) return undefined;
    out[key] = x;
  }
  return { id, reference: out };
}

function checkJudgement(value: unknown): RecordJudgement | undefined {
  if (!isPlain(value)) return undefined;
  const { reward, step, feedback, atLeastOne } = value as Record<string, unknown>;
  if (!isNumberOrNull(reward) || typeof atLeastOne !== 'boolean') return undefined;
  let outStep: RecordJudgement['step'] = null;
  if (step !== null) {
    if (!isPlain(step)) return undefined;
    const s = step as Record<string, unknown>;
    const span = s.span;
    if (!isCount(s.index) || !isNumberOrNull(s.reward) || !isNumberOrNull(s.outcome)) return undefined;
    if (!Array.isArray(span) || span.length !== 2 || !isCount(span[0]) || !isCount(span[1])) return undefined;
    outStep = { index: s.index, span: [span[0], span[1]], reward: s.reward, outcome: s.outcome };
  }
  let outFeedback: RecordJudgement['feedback'] = null;
  if (feedback !== null) {
    if (!isPlain(feedback)) return undefined;
    const f = feedback as Record<string, unknown>;
    if (typeof f.at !== 'string') return undefined;
    outFeedback = {} as NonNullable<RecordJudgement['feedback']>;
    if (Object.hasOwn(f, 'reward')) {
      if (!isFiniteNumber(f.reward)) return undefined;
      outFeedback.reward = f.reward;
    }
    if (Object.hasOwn(f, 'correction')) {
      if (typeof f.correction !== 'string') return undefined;
      outFeedback.correction = f.correction;
    }
    outFeedback.at = f.at;
  }
  return { reward, step: outStep, feedback: outFeedback, atLeastOne };
}

function checkTeacher(value: unknown): RecordTeacher | undefined {
  if (!isPlain(value)) return undefined;
  const { logprobs, topK, reply, hintOverlap, hintCandidates } = value as Record<string, unknown>;
  const outLogprobs = copyNumbers(logprobs);
  if (outLogprobs === undefined) return undefined;
  const outTopK = topK === null ? null : checkRows(topK);
  if (outTopK === undefined) return undefined;
  let outReply: RecordTeacher['reply'] = null;
  if (reply !== null) {
    if (!isPlain(reply)) return undefined;
    const r = reply as Record<string, unknown>;
    const tokenIds = copyCounts(r.tokenIds);
    const replyLogprobs = copyNumbers(r.logprobs);
    const rows = checkRows(r.teacherTopK);
    if (
      tokenIds === undefined ||
      tokenIds.length === 0 ||
      replyLogprobs === undefined ||
      rows === undefined
    ) {
      return undefined;
    }
    outReply = { tokenIds, logprobs: replyLogprobs, teacherTopK: rows };
  }
  if (!isNumberOrNull(hintOverlap)) return undefined;
  if (hintCandidates !== null && !(isCount(hintCandidates) && hintCandidates >= 1)) return undefined;
  return {
    logprobs: outLogprobs,
    topK: outTopK,
    reply: outReply,
    hintOverlap,
    hintCandidates: hintCandidates as number | null,
  };
}

function checkRows(value: unknown): NonNullable<RecordTeacher['topK']> | undefined {
  if (!isPlain(value)) return undefined;
  const { k, ids, logprobs } = value as Record<string, unknown>;
  if (!isCount(k) || k < 1) return undefined;
  const outIds = copyCounts(ids);
  const outLogprobs = copyNumbers(logprobs);
  if (outIds === undefined || outLogprobs === undefined) return undefined;
  return { k, ids: outIds, logprobs: outLogprobs };
}

function checkMessages(value: unknown): Message[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const out = new Array<Message>(value.length);
  for (let i = 0; i < value.length; i++) {
    const m = checkMessage(value[i]);
    if (m === undefined) return undefined;
    out[i] = m;
  }
  return out;
}

/** A fresh array of finite numbers, or undefined. */
export function copyNumbers(value: unknown): number[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const out = new Array<number>(value.length);
  for (let i = 0; i < value.length; i++) {
    const x = value[i];
    if (!isFiniteNumber(x)) return undefined;
    out[i] = x;
  }
  return out;
}

/** A fresh array of non-negative safe integers, or undefined. */
export function copyCounts(value: unknown): number[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const out = new Array<number>(value.length);
  for (let i = 0; i < value.length; i++) {
    const x = value[i];
    if (!isCount(x)) return undefined;
    out[i] = x;
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

function isNumberOrNull(x: unknown): x is number | null {
  return x === null || isFiniteNumber(x);
}
