/**
 * Held-out evaluation: env tracks play every evaluation task once, greedily (temperature 0),
 * and report the share solved (reward ≥ 1) and the mean reward; the personal track plays the
 * simulated user's held-out sessions and reports the preference score.
 */
import { evaluatePreference } from '../../actors/envs/personal/evaluate.js';
import { SimulatedUser } from '../../actors/envs/personal/simulated-user.js';
import type { ChatMessage } from '../../actors/models/chat-template.js';
import type { Episode } from './episodes.js';

export interface EvalResult {
  /** Share solved (env) or preference score (personal). */
  success: number;
  rewardMean: number;
  episodes: number;
  seconds: number;
  /** What the policy did on the first evaluation task, in one line (for the job log). */
  sample?: string;
}

const SAMPLE_CHARS = 240;

/** The conversation after its first `skip` messages, one line: `assistant: … | tool: …`. */
export function transcriptLine(
  messages: readonly {
    role: string;
    content?: string | null;
    tool_calls?: readonly { function: { name: string; arguments: string } }[];
  }[],
  skip: number,
): string {
  const parts = messages.slice(skip).map((m) => {
    const calls = (m.tool_calls ?? []).map((c) => `${c.function.name}(${c.function.arguments})`);
    return `${m.role}: ${[m.content ?? '', ...calls].filter(Boolean).join(' ')}`.replace(/\s+/g, ' ');
  });
  const line = parts.join(' | ');
  return line.length > SAMPLE_CHARS ? `${line.slice(0, SAMPLE_CHARS)}…` : line;
}

export interface EnvEvalOptions {
  taskIds: string[];
  parallel: number;
  /** Plays task `taskId` greedily (`index` seeds it, `slot` picks the env pool). */
  play(taskId: string, index: number, slot: number): Promise<Episode>;
}

export async function evaluateEnv(o: EnvEvalOptions): Promise<EvalResult> {
  const started = performance.now();
  let next = 0;
  let solved = 0;
  let rewardSum = 0;
  let sample: string | undefined;
  const worker = async (w: number) => {
    for (let i = next++; i < o.taskIds.length; i = next++) {
      const episode = await o.play(o.taskIds[i], i, w + i);
      rewardSum += episode.reward;
      if (episode.reward >= 1) solved++;
      if (i === 0) sample = transcriptLine(episode.messages, episode.turns[0]?.messages.length ?? 0);
    }
  };
  await Promise.all(Array.from({ length: Math.min(o.parallel, o.taskIds.length) }, (_, w) => worker(w)));
  const n = o.taskIds.length;
  return {
    success: n ? solved / n : 0,
    rewardMean: n ? rewardSum / n : 0,
    episodes: n,
    seconds: (performance.now() - started) / 1000,
    sample,
  };
}

export interface PersonalEvalOptions {
  user: { preference: string; turnsPerSession: number; seed: number; evalSessions: number; parallel: number };
  maxTokens: number;
  /** One greedy reply of the current policy. */
  reply(messages: ChatMessage[], maxTokens: number): Promise<string>;
}

export async function evaluatePersonal(o: PersonalEvalOptions): Promise<EvalResult> {
  const started = performance.now();
  const user = new SimulatedUser({
    preference: o.user.preference,
    seed: o.user.seed,
    turnsPerSession: o.user.turnsPerSession,
  });
  const report = await evaluatePreference((messages) => o.reply(messages as ChatMessage[], o.maxTokens), {
    user,
    sessions: o.user.evalSessions,
    split: 'heldout',
    concurrency: o.user.parallel,
  });
  return {
    success: report.score,
    rewardMean: report.replyScore,
    episodes: report.sessions.length,
    seconds: (performance.now() - started) / 1000,
    sample: report.sessions[0] && transcriptLine(report.sessions[0].messages, 0),
  };
}
