/**
 * The teacher's half of an OPD turn (opd / combine): given the turn's hint candidates, the
 * teacher scores the turn's own response under the hint-augmented prompt, at the temperature
 * the response was sampled with, and the record's `teacher` keeps what the trainer needs:
 *
 * - `logprobs`: the teacher's logprob of each response token (token-level OPD:
 *   advantage teacher − rollout).
 * - with `train.distillTopK: K` (OpenClaw-RL's top-K OPD, `top_logprobs_num=K`) also
 *   `topK = { k, ids, logprobs }`: the teacher's K most likely tokens at every
 *   response position, flat and row-major (K·L numbers each; no nested arrays, so a record
 *   stays one compact msgpack map).
 *
 * Which hint: the longest (OpenClaw-RL), or with `train.hintSelect: topk-overlap` (OpenClaw-RL
 * PR #109, overlap-guided hint selection) the candidate under which the teacher's top-K sets
 * overlap most with the student's own: see `topKOverlap`. A user's correction is the only
 * candidate of its turn.
 *
 * With `train.distillOn: teacher | both` the teacher also writes its own reply under the chosen
 * hint (greedy), and the record keeps it as `teacher.reply`: its tokens, the teacher's top-K
 * along them and the student's logprobs of them under the turn's own prompt. The trainer then
 * distils that reply into the student without the hint (context distillation): the whole
 * preferred reply, where on-policy OPD only scores the student's own tokens and so teaches a
 * multi-token opener ("Sam," is four tokens of the tiny tokenizer) one token per round of
 * sampling (README "personal").
 */
import type { ScoredTokens, TopLogprobRows } from '../../actors/rollout/top-k.js';
import type { RecordTeacher, TrajectoryRecord } from '../buffer/types.js';

/** How a turn's hint is chosen among its candidates. */
export type HintSelect = 'longest' | 'topk-overlap';

/** Scores `response` after `prompt` at `temperature`, with the top `k` tokens at every position. */
export type TopKScorer = (
  promptTokenIds: number[],
  responseTokenIds: number[],
  temperature: number,
  k: number,
) => Promise<ScoredTokens>;

/** Top-K distillation (`train.distillTopK`) and top-K select (`train.hintSelect`). */
export interface DistillOptions {
  /** K: tokens per position the teacher returns. */
  k: number;
  hintSelect: HintSelect;
  /** The teacher engines (frozen or tracking) under the hint-augmented prompt. */
  teacherTopK: TopKScorer;
  /**
   * The student (the rollout engines, which serve the policy being trained) under the turn's
   * own prompt: topk-overlap's reference. Without it topk-overlap keeps the longest hint.
   */
  studentTopK?: TopKScorer;
}

export interface TeachOptions {
  /** Token-level OPD's teacher: the logprob of each response token (without `distill`). */
  teacher(promptTokenIds: number[], responseTokenIds: number[], temperature: number): Promise<number[]>;
  distill?: DistillOptions;
  /** train.distillOn teacher | both (needs `distill`): the teacher's own reply under the hint. */
  teacherReply?: TeacherReplyOptions;
}

/** How the teacher writes its reply under the hint, and how the student scores it. */
export interface TeacherReplyOptions {
  /** The teacher engines' greedy reply to `promptTokenIds` (its token ids, end of turn included). */
  generate(promptTokenIds: number[], maxTokens: number): Promise<number[]>;
  /** The student's logprob of each of `responseTokenIds` after `promptTokenIds`, at `temperature`. */
  studentLogprobs(
    promptTokenIds: number[],
    responseTokenIds: number[],
    temperature: number,
  ): Promise<number[]>;
  /** Longest reply (rollout.maxTokens), within the context's room after the hinted prompt. */
  maxTokens: number;
  /** The model's context: a reply is cut to fit both the hinted prompt and the turn's own. */
  maxContext: number;
}

/**
 * The teacher's own reply to a turn (`teacher.reply`): what the student distils without the
 * hint under `train.distillOn: teacher | both`. `logprobs` are the student's (the policy that
 * sampled the turn), so the trainer's drift and PPO ratio compare like with like.
 */
export interface TeacherReply {
  tokenIds: number[];
  logprobs: number[];
  teacherTopK: TopLogprobRows;
}

/**
 * The top-K overlap of a teacher's rows with the student's over one response:
 *
 *   overlap = (1/L) · Σ_{p=1..L} |T_p ∩ S_p| / K
 *
 * where T_p is the set of the teacher's K most likely tokens at response position p (under the
 * hint-augmented prompt), S_p the student's K most likely tokens at p (under the turn's own
 * prompt), both at the sample's temperature, and L the response length. 1: at every position
 * the teacher ranks the same K tokens on top as the student (the hint moves mass only among
 * tokens the student already considers); 0: disjoint everywhere (the hint asks for tokens the
 * student would not sample, a target its on-policy samples cannot reach). 0 for an empty response.
 */
export function topKOverlap(teacher: TopLogprobRows, student: TopLogprobRows): number {
  const k = teacher.k;
  if (student.k !== k || student.ids.length !== teacher.ids.length) {
    throw new RangeError(
      `topKOverlap: the teacher has ${teacher.ids.length / k} rows of ${k}, the student ${student.ids.length / student.k} rows of ${student.k}`,
    );
  }
  const positions = teacher.ids.length / k;
  if (positions === 0) return 0;
  let shared = 0;
  for (let p = 0; p < positions; p++) {
    const mine = new Set(student.ids.slice(p * k, (p + 1) * k));
    for (let j = p * k; j < (p + 1) * k; j++) if (mine.has(teacher.ids[j])) shared++;
  }
  return shared / (positions * k);
}

/**
 * Picks the turn's hint among `hints` (the judge's own pick first: its longest +1 hint) and
 * stores the teacher's scores under it on the record (`hint`, `teacher.logprobs`, with top-K
 * `teacher.topK`; topk-overlap with several candidates also `teacher.hintOverlap` and
 * `teacher.hintCandidates`). `longest` keeps the first hint; topk-overlap the one with the highest
 * overlap, ties to the longest, then the earlier. No usable hint: `hint` and `teacher` null, no teacher call.
 */
export async function teachTurn(
  r: TrajectoryRecord,
  hints: readonly string[],
  promptFor: (hint: string) => number[],
  o: TeachOptions,
): Promise<void> {
  const candidates = [...new Set(hints.filter((h) => h.length > 0))];
  if (candidates.length === 0) {
    r.hint = null;
    r.teacher = null;
    return;
  }
  const temperature = r.sampling.temperature;
  const teacher: RecordTeacher = {
    logprobs: [],
    topK: null,
    reply: null,
    hintOverlap: null,
    hintCandidates: null,
  };
  const d = o.distill;
  if (!d) {
    r.hint = candidates[0];
    teacher.logprobs = await o.teacher(promptFor(r.hint), r.tokenIds, temperature);
    r.teacher = teacher;
    return;
  }
  let chosen = 0;
  let scored: ScoredTokens;
  if (d.hintSelect === 'topk-overlap' && d.studentTopK && candidates.length > 1) {
    const [student, ...teachers] = await Promise.all([
      d.studentTopK(r.promptTokenIds, r.tokenIds, temperature, d.k),
      ...candidates.map((h) => d.teacherTopK(promptFor(h), r.tokenIds, temperature, d.k)),
    ]);
    const overlaps = teachers.map((t) => topKOverlap(t.top, student.top));
    for (let i = 1; i < overlaps.length; i++) {
      const better = overlaps[i] > overlaps[chosen];
      const tieLonger = overlaps[i] === overlaps[chosen] && candidates[i].length > candidates[chosen].length;
      if (better || tieLonger) chosen = i;
    }
    scored = teachers[chosen];
    teacher.hintOverlap = overlaps[chosen];
    teacher.hintCandidates = candidates.length;
  } else {
    scored = await d.teacherTopK(promptFor(candidates[0]), r.tokenIds, temperature, d.k);
  }
  r.hint = candidates[chosen];
  teacher.logprobs = scored.logprobs;
  teacher.topK = scored.top;
  if (o.teacherReply) teacher.reply = (await teacherReply(r, promptFor(r.hint), d, o.teacherReply)) ?? null;
  r.teacher = teacher;
}

/**
 * The teacher's greedy reply under the hinted prompt, its top-K along it and the student's
 * logprobs of it under the turn's own prompt; undefined when there is no room for a token.
 */
async function teacherReply(
  r: TrajectoryRecord,
  hinted: number[],
  d: DistillOptions,
  o: TeacherReplyOptions,
): Promise<TeacherReply | undefined> {
  const room = o.maxContext - Math.max(hinted.length, r.promptTokenIds.length);
  const maxTokens = Math.min(o.maxTokens, room);
  if (maxTokens < 1) return undefined;
  const tokenIds = await o.generate(hinted, maxTokens);
  if (tokenIds.length === 0) return undefined;
  const temperature = r.sampling.temperature;
  const [scored, logprobs] = await Promise.all([
    d.teacherTopK(hinted, tokenIds, temperature, d.k),
    o.studentLogprobs(r.promptTokenIds, tokenIds, temperature),
  ]);
  return { tokenIds, logprobs, teacherTopK: scored.top };
}
