/**
 * A finished episode as trajectory records (one per turn) for the rollout stream, and what a
 * reward plugin sees of it.
 */
import type { ChatMessage } from '../../actors/envs/environment.js';
import type { TrackTask } from '../../actors/envs/track.js';
import type { TrajectoryRecord } from '../buffer/types.js';
import type { Episode } from './episodes.js';

/** What a reward plugin gets: the finished episode; it returns the episode's reward. */
export interface RewardInput {
  taskId: string;
  task: TrackTask;
  messages: ChatMessage[];
  /** The environment's own reward. */
  reward: number;
  info: Record<string, unknown>;
}

/**
 * An episode's turns as trajectory records, appended together. Each record keeps the
 * temperature its turn was sampled with in `extra.temperature` (the turn's own, else
 * `temperature`, the episode's sampling temperature): the trainer and the teacher score its
 * logprobs at that temperature.
 */
export function episodeRecords(
  episode: Episode,
  task: TrackTask,
  item: { group: number; index: number },
  groupSize: number,
  submissionId: string,
  temperature: number,
): TrajectoryRecord[] {
  // Ids are stable across a restarted driver of the same submission: a replayed episode
  // appends as a duplicate and is stored once.
  const episodeId = `${submissionId}-g${item.group}-e${item.index}`;
  const reference: Record<string, unknown> = { reward: episode.reward };
  if (episode.customReward !== undefined) reference.custom = episode.customReward;
  const answer = (task as { answer?: unknown }).answer;
  if (typeof answer === 'string') reference.answer = answer;
  // The terminal environment reports its last test run as info.tests; the tests-passed rule reads
  // the counts from the reference.
  const tests = episode.info.tests as { passed?: unknown; total?: unknown } | undefined;
  if (typeof tests?.passed === 'number' && typeof tests.total === 'number') {
    reference.testsPassed = tests.passed;
    reference.testsTotal = tests.total;
  }
  return episode.turns.map((t, i) => ({
    trajectoryId: `${episodeId}-t${i}`,
    sessionId: episodeId,
    turn: i,
    messages: t.messages as TrajectoryRecord['messages'],
    promptTokenIds: t.promptTokenIds,
    tokenIds: t.tokenIds,
    logprobs: t.logprobs,
    nextState: (episode.turns[i + 1]?.messages.at(-1) ??
      episode.messages.at(-1) ??
      null) as TrajectoryRecord['nextState'],
    votes: [],
    score: null,
    hint: null,
    weightVersion: t.weightVersion,
    createdAtMs: Date.now(),
    extra: {
      taskId: task.id,
      group: `g${item.group}`,
      groupSize,
      episode: episodeId,
      turns: episode.turns.length,
      temperature: t.temperature ?? temperature,
      responseText: t.action.content ?? '',
      reference,
      ...(i === episode.turns.length - 1 ? { finalMessages: episode.messages } : {}),
    },
  }));
}
