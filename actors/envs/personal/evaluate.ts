/**
 * The personal track's metric: the simulated user's preference score, the share of requests
 * whose first reply met the user's preference, over sessions on held-out requests (never asked
 * in training). It is what OpenClaw-RL reports as its personalization score (0.17 → 0.81 there):
 * how the model answers a request, not whether it can obey "start with my name" once told. A redo
 * after a correction (the user's words in the context) counts only in `replyScore`, the sessions'
 * mean reward; a base that heeds corrections scores there without having learned anything. An
 * earlier request's correction may still be in the context of a later first reply, as it is in a
 * real conversation.
 *
 * Sessions are numbered from 0 and each is a fixed script for the user's seed, so two agents (or
 * one agent before and after training) are scored on exactly the same requests and wording.
 */
import type { Split } from '../track.js';
import type { SimulatedUser } from './simulated-user.js';
import { type AgentFn, type RunSessionOptions, runSession, type SessionResult } from './user-session.js';

export const DEFAULT_EVAL_SESSIONS = 16;

export interface PreferenceScoreOptions extends RunSessionOptions {
  /** Whose preference, seed and session length to use; its own split is ignored. */
  user: SimulatedUser;
  /** Sessions to play (default 16). */
  sessions?: number;
  /** Requests to ask (default 'heldout'). */
  split?: Split | 'all';
  /** Sessions in flight at once (default 1); the score does not depend on it. */
  concurrency?: number;
  /** Number of the first session (default 0): disjoint ranges give independent samples. */
  firstSession?: number;
}

export interface PreferenceReport {
  /** Requests whose first reply met the preference / requests: the preference score. */
  score: number;
  /** Satisfied replies / replies, redos after a correction included (the sessions' mean reward). */
  replyScore: number;
  requests: number;
  replies: number;
  satisfied: number;
  preference: string;
  split: Split | 'all';
  sessions: SessionResult[];
}

/** Plays the sessions and reports the preference score with its parts. */
export async function evaluatePreference(
  agent: AgentFn,
  options: PreferenceScoreOptions,
): Promise<PreferenceReport> {
  const split = options.split ?? 'heldout';
  const count = options.sessions ?? DEFAULT_EVAL_SESSIONS;
  const first = options.firstSession ?? 0;
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? 1));
  if (!Number.isInteger(count) || count < 1) throw new RangeError(`sessions must be >= 1, got ${count}`);
  const user = options.user.withSplit(split);
  const results: SessionResult[] = new Array(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      results[i] = await runSession(user.openSession(first + i), agent, options);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));

  let replies = 0;
  let satisfied = 0;
  let requests = 0;
  let firstSatisfied = 0;
  for (const r of results) {
    for (const t of r.turns) {
      replies++;
      if (t.satisfied) satisfied++;
      if (t.attempt === 1) {
        requests++;
        if (t.satisfied) firstSatisfied++;
      }
    }
  }
  return {
    score: requests === 0 ? 0 : firstSatisfied / requests,
    replyScore: replies === 0 ? 0 : satisfied / replies,
    requests,
    replies,
    satisfied,
    preference: user.preference.name,
    split,
    sessions: results,
  };
}

/** The preference score alone: first replies that met the preference (see evaluatePreference). */
export async function preferenceScore(agent: AgentFn, options: PreferenceScoreOptions): Promise<number> {
  return (await evaluatePreference(agent, options)).score;
}
