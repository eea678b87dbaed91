/**
 * A finished episode as trajectory records (one per turn) for the rollout stream, and what a
 * reward plugin sees of it.
 */
import type { ChatMessage } from '../../actors/envs/environment.js';
import type { TrackTask } from '../../actors/envs/track.js';
import {
  RECORD_SCHEMA_VERSION,
  type RecordReference,
  type RecordSampling,
  type TrajectoryRecord,
} from '../buffer/types.js';
import type { Episode, Sampling } from './episodes.js';

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
 * An episode's turns as trajectory records, appended together. Each record keeps what its turn
 * was sampled with (the engine's report, else `sampling`, what the episode asked for): the
 * trainer and the teacher score its logprobs at that temperature.
 */
export function episodeRecords(
  episode: Episode,
  task: TrackTask,
  item: { group: number; index: number },
  groupSize: number,
  submissionId: string,
  sampling: Sampling,
): TrajectoryRecord[] {
  // Ids are stable across a restarted driver of the same submission: a replayed episode
  // appends as a duplicate and is stored once.
  const episodeId = `${submissionId}-g${item.group}-e${item.index}`;
  const reference: RecordReference = { reward: episode.reward };
  // A plugin's value that is not a finite number is kept as null: the group is dropped, not trained.
  if (episode.customReward !== undefined) {
    reference.custom = Number.isFinite(episode.customReward) ? episode.customReward : null;
  }
  const answer = (task as { answer?: unknown }).answer;
  if (typeof answer === 'string') reference.answer = answer;
  // The terminal environment reports its last test run as info.tests; the tests-passed rule reads
  // the counts from the reference.
  const tests = episode.info.tests as { passed?: unknown; total?: unknown } | undefined;
  if (typeof tests?.passed === 'number' && typeof tests.total === 'number') {
    reference.testsPassed = tests.passed;
    reference.testsTotal = tests.total;
  }
  const asked: RecordSampling = {
    temperature: sampling.temperature,
    topP: sampling.topP,
    topK: null,
    seed: sampling.seed ?? null,
  };
  return episode.turns.map((t, i) => ({
    schemaVersion: RECORD_SCHEMA_VERSION,
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
    responseText: t.action.content ?? '',
    sampling: t.sampling ?? asked,
    group: { id: `g${item.group}`, size: groupSize, index: item.index },
    episode: {
      id: episodeId,
      turns: episode.turns.length,
      finalMessages:
        i === episode.turns.length - 1 ? (episode.messages as TrajectoryRecord['messages']) : null,
    },
    task: { id: task.id, reference },
    requestId: null,
    judgement: null,
    teacher: null,
  }));
}
