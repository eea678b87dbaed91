/**
 * Vote parsing and aggregation for LLM judges (OpenClaw-RL PRM / OPD hint judge semantics).
 *
 * - A judge answer ends in `\boxed{1}`, `\boxed{-1}` or `\boxed{0}`; the LAST complete box wins.
 * - m votes are combined by majority: invalid votes are dropped, a tie or no valid vote gives 0.
 * - OPD hint judges wrap a hint in `[HINT_START]…[HINT_END]`; the longest hint over 10 characters
 *   among +1 votes is kept, otherwise there is no teacher sample (`hintCandidates` lists them
 *   all, for top-K select).
 */

export type JudgeScore = 1 | -1 | 0;

const BOX_OPEN = '\\boxed';

/**
 * Contents of every complete `\boxed{…}` in `text`, in order. Braces nest (`\boxed{\frac{1}{2}}` yields
 * `\frac{1}{2}`); an unterminated box is skipped. Whitespace between `\boxed` and `{` is allowed.
 */
export function boxedContents(text: string): string[] {
  const out: string[] = [];
  let from = 0;
  for (;;) {
    const at = text.indexOf(BOX_OPEN, from);
    if (at < 0) return out;
    let i = at + BOX_OPEN.length;
    while (i < text.length && /\s/.test(text[i])) i++;
    if (text[i] !== '{') {
      from = at + BOX_OPEN.length;
      continue;
    }
    let depth = 0;
    let end = -1;
    for (let j = i; j < text.length; j++) {
      const c = text[j];
      if (c === '{') depth++;
      else if (c === '}') {
        depth--;
        if (depth === 0) {
          end = j;
          break;
        }
      }
    }
    if (end < 0) {
      // Unterminated: not a box; a later complete `\boxed{…}` may still follow.
      from = at + BOX_OPEN.length;
      continue;
    }
    out.push(text.slice(i + 1, end));
    from = end + 1;
  }
}

/** Content of the last complete `\boxed{…}`, or null when there is none. */
export function lastBoxedContent(text: string): string | null {
  const all = boxedContents(text);
  return all.length > 0 ? all[all.length - 1] : null;
}

/**
 * The judge's score: the last `\boxed{…}` decides. Accepts `1`, `+1`, `-1`, `0` with any whitespace and
 * redundant inner braces (`\boxed{ {-1} }`); anything else in the last box — or no box — is invalid (null).
 */
export function parseBoxedScore(text: string): JudgeScore | null {
  const raw = lastBoxedContent(text);
  if (raw === null) return null;
  let s = raw.replace(/\s+/g, '');
  while (s.startsWith('{') && s.endsWith('}')) s = s.slice(1, -1);
  switch (s) {
    case '1':
    case '+1':
      return 1;
    case '-1':
      return -1;
    case '0':
    case '+0':
    case '-0':
      return 0;
    default:
      return null;
  }
}

export interface MajorityResult {
  /** Majority score; 0 on a tie for first place or when no vote is valid. */
  score: JudgeScore;
  /** Number of valid votes (1, -1 or 0). */
  valid: number;
  /** Share of valid votes equal to `score` (0 when there is no valid vote). */
  agreement: number;
}

/** Majority vote over judge scores; null and anything other than 1/-1/0 are dropped. */
export function majority(votes: ReadonlyArray<number | null | undefined>): MajorityResult {
  const counts = new Map<JudgeScore, number>([
    [1, 0],
    [-1, 0],
    [0, 0],
  ]);
  let valid = 0;
  for (const v of votes) {
    if (v === 1 || v === -1 || v === 0) {
      counts.set(v, (counts.get(v) ?? 0) + 1);
      valid++;
    }
  }
  if (valid === 0) return { score: 0, valid: 0, agreement: 0 };
  let best: JudgeScore = 0;
  let bestCount = -1;
  let tie = false;
  for (const [score, n] of counts) {
    if (n > bestCount) {
      best = score;
      bestCount = n;
      tie = false;
    } else if (n === bestCount) {
      tie = true;
    }
  }
  const score: JudgeScore = tie ? 0 : best;
  return { score, valid, agreement: (counts.get(score) ?? 0) / valid };
}

const HINT_RE = /\[HINT_START\]([\s\S]*?)\[HINT_END\]/g;

/** The last `[HINT_START]…[HINT_END]` content, trimmed; null when absent or empty. */
export function extractHint(text: string): string | null {
  let last: string | null = null;
  for (const m of text.matchAll(HINT_RE)) last = m[1].trim();
  return last ? last : null;
}

export interface HintVote {
  score: number | null;
  hint?: string | null;
}

/** Minimum hint length (exclusive) for a hint to be used, as in OpenClaw-RL. */
export const MIN_HINT_CHARS = 10;

/**
 * Every usable hint of the votes: the trimmed hints over 10 characters of +1 votes, each once,
 * longest first (equal length: in vote order). `selectHint` keeps the first; top-K select
 * (`train.hintSelect: topk-overlap`) scores each with the teacher and keeps the best.
 */
export function hintCandidates(votes: ReadonlyArray<HintVote>): string[] {
  const seen = new Set<string>();
  for (const v of votes) {
    if (v.score !== 1 || typeof v.hint !== 'string') continue;
    const h = v.hint.trim();
    if (h.length > MIN_HINT_CHARS) seen.add(h);
  }
  // Array.prototype.sort is stable: equal lengths keep their vote order.
  return [...seen].sort((a, b) => b.length - a.length);
}

/** Longest trimmed hint over 10 characters among +1 votes (first wins on equal length), else null. */
export function selectHint(votes: ReadonlyArray<HintVote>): string | null {
  return hintCandidates(votes)[0] ?? null;
}

/** Where a vote came from (a low-cardinality metric label too). */
export type JudgeBackend = 'llm' | 'onnx-prm' | 'rule';

export interface JudgeVote {
  /** Parsed score; null when the vote is invalid (no verdict, or the backend failed). */
  score: JudgeScore | null;
  /** Raw completion text, when one came back (LLM backend). */
  text?: string;
  /** Extracted hint (OPD mode only; null when the vote carried none). */
  hint?: string | null;
  /** Why the vote is invalid (network / HTTP / body / model / missing reference), when it is. */
  error?: string;
  /** Probability of the positive class (ONNX PRM backend). */
  probability?: number;
  /** The rule's continuous outcome reward, e.g. 2·passed/total − 1 (rule backend). */
  reward?: number;
  backend?: JudgeBackend;
  /** Time this one vote took, measured where it was produced. */
  latencyMs: number;
}

export interface JudgeResult {
  score: JudgeScore;
  votes: JudgeVote[];
  /** Number of valid votes. */
  valid: number;
  /** Share of valid votes equal to `score`. */
  agreement: number;
  /** OPD mode: selected hint, or null when no +1 vote carried a hint over 10 chars. Absent in PRM mode. */
  hint?: string | null;
  latencyMs: number;
}

/** Combines the votes of one turn: majority score, agreement and, in OPD mode, the selected hint. */
export function tallyVotes(
  votes: JudgeVote[],
  opd: boolean,
  latencyMs: number,
  threshold?: number,
): JudgeResult {
  const m = majority(votes.map((v) => v.score));
  // With a threshold, a ±1 verdict needs that share of all votes cast (invalid ones count against it).
  const agreeing = m.agreement * m.valid;
  const score = threshold !== undefined && m.score !== 0 && agreeing < threshold * votes.length ? 0 : m.score;
  const result: JudgeResult = { score, votes, valid: m.valid, agreement: m.agreement, latencyMs };
  if (opd) result.hint = selectHint(votes);
  return result;
}
