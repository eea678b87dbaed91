/**
 * Records written before the typed schema (record schema 1: no `schemaVersion`, the loops' fields
 * in `extra`) as schema-2 records, so that a job resumed on a stream (or a JSONL export) written
 * by an older clawray goes on. What schema 1 did not record is null where the schema allows it
 * (the sampling's top-p, top-k and seed); a record that lacks what training needs — the
 * temperature its logprobs were taken at — is refused by field, never guessed at. A record of a
 * newer schema than this build's is refused by name.
 */
import type { ConfigError } from '../../common/errors.js';
import { RECORD_SCHEMA_VERSION, recordError } from './record-schema.js';

/** `extra` keys schema 1 used for what schema 2 types; the rest stay in `extra` (plugins' data). */
const V1_KEYS = new Set([
  'taskId',
  'group',
  'groupSize',
  'episode',
  'turns',
  'temperature',
  'responseText',
  'reference',
  'finalMessages',
  'requestId',
  'reward',
  'outcome',
  'stepIndex',
  'stepSpan',
  'stepReward',
  'feedback',
  'atLeastOne',
  'teacherLogprobs',
  'teacherTopK',
  'teacherReply',
  'hintOverlap',
  'hintCandidates',
]);

/**
 * The value as a current record, for the schema to validate: a current (or malformed) one as it
 * is, a schema-1 record upgraded. Throws ConfigError for a newer schema or a schema-1 record
 * without its sampling temperature.
 */
export function upgradeRecord(value: unknown, where?: string): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const v = value as Record<string, unknown>;
  if (Object.hasOwn(v, 'schemaVersion')) {
    const version = v.schemaVersion;
    if (typeof version === 'number' && Number.isInteger(version) && version > RECORD_SCHEMA_VERSION) {
      throw refusal(
        v,
        'schemaVersion',
        `is ${version}: written by a newer clawray; this one reads record schemas 1–${RECORD_SCHEMA_VERSION}`,
        where,
      );
    }
    return value;
  }
  const e =
    typeof v.extra === 'object' && v.extra !== null && !Array.isArray(v.extra)
      ? (v.extra as Record<string, unknown>)
      : {};
  if (typeof e.temperature !== 'number') {
    throw refusal(
      v,
      'extra.temperature',
      'is missing: a schema-1 record written before clawray kept the temperature its logprobs were taken at; it cannot be trained (run the rollouts again)',
      where,
    );
  }
  const trajectoryId = v.trajectoryId;
  const groupSize = e.groupSize ?? 1;
  const episodeId = e.episode ?? trajectoryId;
  const judged = Object.hasOwn(e, 'reward');
  const stepped = Object.hasOwn(e, 'stepReward');
  const plugins = Object.fromEntries(Object.entries(e).filter(([key]) => !V1_KEYS.has(key)));
  const { extra: _, ...rest } = v;
  return {
    schemaVersion: RECORD_SCHEMA_VERSION,
    ...rest,
    responseText: e.responseText ?? '',
    sampling: { temperature: e.temperature, topP: null, topK: null, seed: null },
    group: { id: e.group ?? trajectoryId, size: groupSize, index: episodeIndex(episodeId, groupSize) },
    episode: { id: episodeId, turns: e.turns ?? 1, finalMessages: e.finalMessages ?? null },
    task: typeof e.taskId === 'string' ? { id: e.taskId, reference: e.reference ?? { reward: 0 } } : null,
    requestId: e.requestId ?? null,
    judgement: judged
      ? {
          reward: finiteOrNull(e.reward),
          step: stepped
            ? {
                index: e.stepIndex,
                span: e.stepSpan,
                reward: finiteOrNull(e.stepReward),
                outcome: finiteOrNull(e.outcome),
              }
            : null,
          feedback: e.feedback ?? null,
          atLeastOne: e.atLeastOne === true,
        }
      : null,
    teacher: Array.isArray(e.teacherLogprobs)
      ? {
          logprobs: e.teacherLogprobs,
          topK: e.teacherTopK ?? null,
          reply: e.teacherReply ?? null,
          hintOverlap: e.hintOverlap ?? null,
          hintCandidates: e.hintCandidates ?? null,
        }
      : null,
    ...(Object.keys(plugins).length > 0 ? { extra: plugins } : {}),
  };
}

/**
 * Schema 1 did not store an episode's index in its group: env episode ids end in `-e<index>`
 * (records.ts), and a group of one is index 0. Anything else is left to the schema to refuse.
 */
function episodeIndex(episodeId: unknown, groupSize: unknown): number | undefined {
  const m = typeof episodeId === 'string' ? /-e(\d+)$/.exec(episodeId) : null;
  if (m) return Number(m[1]);
  return groupSize === 1 ? 0 : undefined;
}

function finiteOrNull(x: unknown): unknown {
  return typeof x === 'number' && !Number.isFinite(x) ? null : x;
}

function refusal(v: Record<string, unknown>, field: string, message: string, where?: string): ConfigError {
  return recordError(v, { path: field.split('.'), message }, where);
}
