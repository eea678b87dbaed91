/**
 * The RL data contract: one versioned, typed record per policy turn, as it crosses the loops
 * (rollout → judge → trainer) through the buffer, Redis and JSONL files. OpenClaw-RL's per-turn
 * sample (messages, prompt and response ids, logprobs, next state, votes, score, hint, weight
 * version) plus what clawray's loops read of it, each in one typed place:
 *
 * - rollout: the sampling parameters the engine actually used, the response text, the group
 *   (id, size, the episode's index in it), the episode (id, turns, the final conversation on its
 *   last turn), the env task (id, the reference its rule checks) or the live request id;
 * - judgement (the judge stage): the reward the turn trains with, step-wise rewards, the user's
 *   explicit feedback, the at-least-one mark;
 * - teacher (OPD): the teacher's logprobs of the response, its top-K rows, its own reply.
 *
 * `extra` is for plugins only: clawray's loops never read it. Records written before this schema
 * (version 1, the loops' fields in `extra`) are upgraded on read or refused by field
 * (record-upgrade.ts). A value that is not a finite number (a custom judge's NaN) is stored as
 * null where a field says so; the trainer drops such a group (batches.ts).
 */
import { z } from 'zod';
import { ConfigError } from '../../common/errors.js';

/** The record format this build writes; record-upgrade.ts reads the older ones. */
export const RECORD_SCHEMA_VERSION = 2;

/** A chat message as OpenClaw-RL records it (`role`, `content`, tool calls, ...); extra keys kept. */
export const MessageSchema = z.looseObject({
  role: z.string().min(1),
  content: z.unknown(),
});
export type Message = z.infer<typeof MessageSchema>;

const count = () => z.number().int().nonnegative();

/**
 * The sampling parameters the engine drew the response with (its own report, defaults resolved).
 * Null: not known (a custom rollout whose engine did not report it, a schema-1 record).
 */
export const RecordSamplingSchema = z.object({
  /** Its logprobs are under softmax(logits / T); 0 is greedy (no sample of the policy: not trained). */
  temperature: z.number().nonnegative(),
  /** 1: off. */
  topP: z.number().gt(0).lte(1).nullable(),
  /** 0: off. */
  topK: count().nullable(),
  seed: z.number().int().nullable(),
});
export type RecordSampling = z.infer<typeof RecordSamplingSchema>;

/** The GRPO group the turn's episode belongs to (one prompt's samplesPerPrompt episodes). */
export const RecordGroupSchema = z.object({
  id: z.string().min(1),
  size: z.number().int().positive(),
  /** The episode's index in the group, below `size`. */
  index: count(),
});

export const RecordEpisodeSchema = z.object({
  id: z.string().min(1),
  /** How many turns (records) the episode has; the trainer waits for all of them. */
  turns: z.number().int().positive(),
  /** The whole conversation at the episode's end, on its last turn only (null elsewhere). */
  finalMessages: z.array(MessageSchema).nullable(),
});

/** What an env track's rule checks the episode's outcome against (actors/judge JudgeReference). */
export const RecordReferenceSchema = z.object({
  /** The environment's own reward. */
  reward: z.number(),
  /** A reward plugin's value, which replaces the outcome; null when it was not a finite number. */
  custom: z.number().nullable().optional(),
  answer: z.string().optional(),
  testsPassed: count().optional(),
  testsTotal: count().optional(),
});
export type RecordReference = z.infer<typeof RecordReferenceSchema>;

export const RecordTaskSchema = z.object({
  id: z.string().min(1),
  reference: RecordReferenceSchema,
});

/** The user's explicit feedback on a live turn (POST /rl/set_reward). */
export const RecordFeedbackSchema = z.object({
  reward: z.number().optional(),
  correction: z.string().optional(),
  /** When it was given (ISO). */
  at: z.string(),
});

/** OpenClaw-RL's step-wise rewards: outcome + coef · the turn's process score. */
export const RecordStepSchema = z.object({
  /** The turn's index in its episode (its step). */
  index: count(),
  /** Where its response tokens sit among the episode's responses: [start, end). */
  span: z.tuple([count(), count()]),
  /** outcome + coef · its judge score; null when not a finite number. */
  reward: z.number().nullable(),
  /** The episode's outcome; null when not a finite number. */
  outcome: z.number().nullable(),
});

export const RecordJudgementSchema = z.object({
  /** The reward every turn of the episode trains with (before group normalisation); null: not finite. */
  reward: z.number().nullable(),
  step: RecordStepSchema.nullable(),
  feedback: RecordFeedbackSchema.nullable(),
  /** OpenClaw-RL's at-least-one rule kept the turn at reward 0 (judging.ts). */
  atLeastOne: z.boolean(),
});
export type RecordJudgement = z.infer<typeof RecordJudgementSchema>;

/** K most likely tokens at every response position, flat: row p is ids[p·k .. p·k+k). */
export const TopKRowsSchema = z.object({
  k: z.number().int().positive(),
  ids: z.array(count()),
  logprobs: z.array(z.number()),
});

export const TeacherReplySchema = z.object({
  tokenIds: z.array(count()).min(1),
  /** The student's logprobs of the reply (the policy that sampled the turn). */
  logprobs: z.array(z.number()),
  teacherTopK: TopKRowsSchema,
});

export const RecordTeacherSchema = z.object({
  /** The teacher's logprob of each response token under the hinted prompt. */
  logprobs: z.array(z.number()),
  /** train.distillTopK: the teacher's top-K at every response position. */
  topK: TopKRowsSchema.nullable(),
  /** train.distillOn teacher | both: the teacher's own reply under the hint. */
  reply: TeacherReplySchema.nullable(),
  /** hintSelect topk-overlap with several candidates: the chosen hint's overlap, and how many there were. */
  hintOverlap: z.number().nullable(),
  hintCandidates: z.number().int().positive().nullable(),
});
export type RecordTeacher = z.infer<typeof RecordTeacherSchema>;

const RecordShape = z.object({
  schemaVersion: z.literal(RECORD_SCHEMA_VERSION),
  /** Idempotency key: appending the same id twice stores it once. */
  trajectoryId: z.string().min(1),
  sessionId: z.string().min(1),
  turn: count(),
  messages: z.array(MessageSchema),
  promptTokenIds: z.array(count()),
  tokenIds: z.array(count()),
  /** One per response token, at `sampling.temperature`. */
  logprobs: z.array(z.number()),
  /** The message that followed this turn (user reply, tool result), or null at the end. */
  nextState: MessageSchema.nullable(),
  /** The PRM judge's m votes (+1 / -1 / 0 for invalid). */
  votes: z.array(z.number()),
  /** Majority / mean of the votes; null until judged. */
  score: z.number().nullable(),
  /** OPD hindsight hint (the longest +1 hint), or null. */
  hint: z.string().nullable(),
  /** The policy weight version that produced the response. */
  weightVersion: count(),
  createdAtMs: count(),
  responseText: z.string(),
  sampling: RecordSamplingSchema,
  group: RecordGroupSchema,
  episode: RecordEpisodeSchema,
  /** Env tracks: the task the episode played; null for live turns. */
  task: RecordTaskSchema.nullable(),
  /** Live turns: the `chatcmpl-…` id feedback names; null for env turns. */
  requestId: z.string().min(1).nullable(),
  /** Null until the judge stage has judged the turn. */
  judgement: RecordJudgementSchema.nullable(),
  /** OPD turns with a hint: the teacher's scores; null otherwise. */
  teacher: RecordTeacherSchema.nullable(),
  /** Plugins' own data; clawray's loops never read it. */
  extra: z.record(z.string(), z.unknown()).optional(),
});

/** The record's cross-field rules, one issue each (shared by the hand check: `recordMismatch`). */
export function recordMismatch(r: {
  tokenIds: readonly unknown[];
  logprobs: readonly unknown[];
  group: { size: number; index: number };
  teacher: z.infer<typeof RecordTeacherSchema> | null;
}): { path: string[]; message: string } | undefined {
  const n = r.tokenIds.length;
  if (r.logprobs.length !== n) {
    return { path: ['logprobs'], message: `has ${r.logprobs.length} entries but tokenIds has ${n}` };
  }
  if (r.group.index >= r.group.size) {
    return { path: ['group', 'index'], message: `is ${r.group.index}, not below group.size ${r.group.size}` };
  }
  const t = r.teacher;
  if (t === null) return undefined;
  if (t.logprobs.length !== n) {
    return {
      path: ['teacher', 'logprobs'],
      message: `has ${t.logprobs.length} entries but tokenIds has ${n}`,
    };
  }
  if (t.topK !== null) {
    const bad = rowsMismatch(t.topK, n);
    if (bad) return { path: ['teacher', 'topK', bad.field], message: bad.message };
  }
  if (t.reply !== null) {
    const m = t.reply.tokenIds.length;
    if (t.reply.logprobs.length !== m) {
      return {
        path: ['teacher', 'reply', 'logprobs'],
        message: `has ${t.reply.logprobs.length} entries but reply.tokenIds has ${m}`,
      };
    }
    const bad = rowsMismatch(t.reply.teacherTopK, m);
    if (bad) return { path: ['teacher', 'reply', 'teacherTopK', bad.field], message: bad.message };
  }
  return undefined;
}

function rowsMismatch(
  rows: { k: number; ids: readonly unknown[]; logprobs: readonly unknown[] },
  positions: number,
): { field: string; message: string } | undefined {
  const want = rows.k * positions;
  if (rows.ids.length !== want) {
    return {
      field: 'ids',
      message: `has ${rows.ids.length} entries, not k × ${positions} positions = ${want}`,
    };
  }
  if (rows.logprobs.length !== want) {
    return {
      field: 'logprobs',
      message: `has ${rows.logprobs.length} entries, not k × ${positions} positions = ${want}`,
    };
  }
  return undefined;
}

export const TrajectoryRecordSchema = RecordShape.superRefine((r, ctx) => {
  const bad = recordMismatch(r);
  if (bad) ctx.addIssue({ code: 'custom', path: bad.path, message: bad.message });
});
export type TrajectoryRecord = z.infer<typeof TrajectoryRecordSchema>;

/** Every field but the three long number arrays, which are checked by hand (types.ts `fastParse`). */
export const RecordRestSchema = RecordShape.omit({ promptTokenIds: true, tokenIds: true, logprobs: true });
export type RecordRest = z.infer<typeof RecordRestSchema>;

/** The refusal of a record by its first bad field, e.g. `invalid trajectory record "t1": turn: …`. */
export function recordError(
  value: unknown,
  issue: { path: readonly PropertyKey[]; message: string },
  where?: string,
): ConfigError {
  const id =
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { trajectoryId?: unknown }).trajectoryId === 'string'
      ? (value as { trajectoryId: string }).trajectoryId
      : undefined;
  const field = issue.path.length > 0 ? issue.path.map(String).join('.') : '(record)';
  return new ConfigError(
    `invalid trajectory record${id !== undefined ? ` ${JSON.stringify(id)}` : ''}${where ? ` (${where})` : ''}: ${field}: ${issue.message}`,
    { fields: { field, trajectoryId: id } },
  );
}
