/**
 * Judged turns → training samples. A group is one prompt's samplesPerPrompt episodes (GRPO);
 * every turn of an episode is one sample carrying its episode's advantage (RL), the teacher −
 * rollout logprob gap per token (OPD), or both (combine: w_opd·(teacher − old) + w_rl·A), and
 * the temperature it was sampled with (the trainer scores at it).
 *
 * Top-K distillation (a turn whose record has `teacher.topK`, train.distillTopK): the
 * teacher's top-K replaces the sampled-token gap teacher − old, which is a one-sample estimate
 * of the same reverse KL's gradient. opd: advantage 0, the sample's loss is the top-K KL
 * (distillWeight 1); combine: advantage w_rl·A in the PPO term plus w_opd · the top-K KL
 * (distillWeight w_opd), so w_opd weighs the distillation exactly where it weighed the gap.
 * With train.distillOn teacher | both, a turn that carries the teacher's own reply under the hint
 * (`teacher.reply`) also gives a sample of that reply after the turn's own prompt, distilled
 * the same way (advantage 0): context distillation.
 */
import { combineAdvantages, grpoAdvantages } from '../../actors/trainer/advantages.js';
import type { TeacherTopK, TrainSample } from '../../actors/trainer/policy-trainer.js';
import { ConfigError } from '../../common/errors.js';
import type { RecordJudgement, TrajectoryRecord } from '../buffer/types.js';

export interface GroupKey {
  group: string;
  groupSize: number;
  episode: string;
  turns: number;
}

export function groupKey(r: TrajectoryRecord): GroupKey {
  return { group: r.group.id, groupSize: r.group.size, episode: r.episode.id, turns: r.episode.turns };
}

/** A complete group: its episodes' turns (in turn order) and the stream entries they came from. */
export interface ReadyGroup {
  episodes: TrajectoryRecord[][];
  entryIds: string[];
}

/** Collects judged turns until each group has all turns of all its episodes. */
export class GroupAssembler {
  private readonly open = new Map<
    string,
    { episodes: Map<string, TrajectoryRecord[]>; entryIds: string[] }
  >();
  private readonly ready: ReadyGroup[] = [];
  private readonly seen = new Set<string>();

  /** Adds one judged turn; a trajectory id seen before (a replayed entry) only adds its entry id. */
  add(record: TrajectoryRecord, entryId: string): void {
    const k = groupKey(record);
    const open = this.open.get(k.group) ?? { episodes: new Map<string, TrajectoryRecord[]>(), entryIds: [] };
    this.open.set(k.group, open);
    open.entryIds.push(entryId);
    if (this.seen.has(record.trajectoryId)) return;
    this.seen.add(record.trajectoryId);
    const turns = open.episodes.get(k.episode) ?? [];
    turns.push(record);
    open.episodes.set(k.episode, turns);
    const complete =
      open.episodes.size === k.groupSize &&
      [...open.episodes.values()].every((t) => t.length === groupKey(t[0]).turns);
    if (complete) {
      this.open.delete(k.group);
      for (const t of open.episodes.values()) for (const r of t) this.seen.delete(r.trajectoryId);
      this.ready.push({
        episodes: [...open.episodes.values()].map((t) => t.sort((a, b) => a.turn - b.turn)),
        entryIds: open.entryIds,
      });
    }
  }

  /** Complete groups waiting to be trained on. */
  get size(): number {
    return this.ready.length;
  }

  take(n: number): ReadyGroup[] {
    return this.ready.splice(0, n);
  }
}

export interface AdvantageOptions {
  method: 'rl' | 'opd' | 'combine';
  samplesPerPrompt: number;
  combine?: { opdWeight: number; rlWeight: number };
  /**
   * train.distillOn (top-K distillation): `student` distils the turn's own tokens (OpenClaw-RL,
   * the default), `teacher` the teacher's own reply under the hint instead (context
   * distillation), `both` both of them.
   */
  distillOn?: 'student' | 'teacher' | 'both';
}

export interface BatchStats {
  episodes: number;
  rewardMean: number;
  /** Share of episodes with reward ≥ 1 (solved). */
  successRate: number;
  /** Mean of (trainer version − the sample's weight version). */
  staleness: number;
  /** Samples left after dropping those without a learning signal. */
  samples: number;
}

/** Which trajectories a batch trained on, and which it could not use and why. */
export interface BatchUse {
  trained: string[];
  noSignal: string[];
  truncated: string[];
  /**
   * Greedy turns (temperature 0): no sample of the policy's distribution, so PPO has no
   * behaviour probability to correct with; they are not trained (a no_signal drop, counted).
   */
  greedy: string[];
  /**
   * Groups whose judge gave a reward that is not a finite number (a custom judge's NaN): GRPO
   * cannot compare them, and one NaN advantage would make the whole step's loss NaN, so the
   * group is dropped (as `non_finite`) and the rest of the batch trains.
   */
  nonFinite: string[];
}

/** The judge stage's verdict on a turn; the trainer reads judged turns only. */
function judgementOf(r: TrajectoryRecord): RecordJudgement {
  if (r.judgement !== null) return r.judgement;
  throw new ConfigError(
    `trajectory record ${JSON.stringify(r.trajectoryId)}: judgement is null: only judged turns are trained`,
    { fields: { field: 'judgement', trajectoryId: r.trajectoryId } },
  );
}

/** An episode's reward; NaN when the judge's value was not a finite number (the group is dropped). */
const rewardOf = (episode: TrajectoryRecord[]) => judgementOf(episode[0]).reward ?? Number.NaN;
const finiteStepReward = (r: TrajectoryRecord) => {
  const step = judgementOf(r).step;
  return step === null || step.reward !== null;
};

/**
 * OpenClaw-RL's step-wise estimator for process + outcome rewards (judging.ts writes each
 * turn's `stepReward` = outcome + coef · its judge score): a turn's advantage is its value
 * normalised over the group's episodes at the same step index; a constant bucket carries no
 * signal. Returns per episode, per turn; undefined when the group has no step rewards.
 */
function stepWiseAdvantages(group: TrajectoryRecord[][], single: boolean): number[][] | undefined {
  if (!group.some((episode) => episode.some((r) => judgementOf(r).step !== null))) return undefined;
  const value = (r: TrajectoryRecord) => {
    const j = judgementOf(r);
    return j.step?.reward ?? j.reward ?? 0;
  };
  const out = group.map((episode) => episode.map(() => 0));
  const steps = Math.max(...group.map((e) => e.length));
  for (let t = 0; t < steps; t++) {
    const members = group.flatMap((episode, i) => (t < episode.length ? [{ i, v: value(episode[t]) }] : []));
    const adv = single
      ? members.map((m) => m.v)
      : grpoAdvantages(
          members.map((m) => m.v),
          members.length,
        ).advantages;
    members.forEach((m, k) => {
      out[m.i][t] = adv[k];
    });
  }
  return out;
}

/** Samples with a nonzero learning signal, and what the batch looked like. */
export function buildSamples(
  groups: TrajectoryRecord[][][],
  version: number,
  o: AdvantageOptions,
): { samples: TrainSample[]; stats: BatchStats; use: BatchUse } {
  const samples: TrainSample[] = [];
  const use: BatchUse = { trained: [], noSignal: [], truncated: [], greedy: [], nonFinite: [] };
  let episodes = 0;
  let rewardSum = 0;
  let solved = 0;
  let lagSum = 0;
  let turns = 0;
  for (const group of groups) {
    const rewards = group.map(rewardOf);
    if (!group.every((episode, i) => Number.isFinite(rewards[i]) && episode.every(finiteStepReward))) {
      use.nonFinite.push(...group.flatMap((episode) => episode.map((r) => r.trajectoryId)));
      continue;
    }
    // One sample per prompt (OpenClaw-RL's live turns): A = r, no normalisation.
    const single = group.length === 1 && o.samplesPerPrompt === 1;
    const adv = grpoAdvantages(
      rewards,
      group.length,
      single ? { subtractMean: false, normalizeStd: false } : {},
    ).advantages;
    const stepAdv = stepWiseAdvantages(group, single);
    group.forEach((episode, i) => {
      episodes++;
      rewardSum += rewards[i];
      if (rewards[i] >= 1) solved++;
      episode.forEach((r, t) => {
        const a = stepAdv ? stepAdv[i][t] : adv[i];
        turns++;
        lagSum += version - r.weightVersion;
        if (r.tokenIds.length === 0) {
          use.truncated.push(r.trajectoryId);
          return;
        }
        const temperature = r.sampling.temperature;
        if (!(temperature > 0)) {
          use.greedy.push(r.trajectoryId);
          return;
        }
        const teacher = r.teacher?.logprobs ?? null;
        const topK: TeacherTopK | undefined = r.teacher?.topK ?? undefined;
        // train.distillOn teacher | both: the teacher's own reply under the hint trains too.
        const reply = (o.distillOn ?? 'student') === 'student' ? undefined : (r.teacher?.reply ?? undefined);
        // distillOn teacher: the turn's own tokens are not distilled; its teacher's reply is.
        const ownTopK = reply && o.distillOn === 'teacher' ? undefined : topK;
        const distillWeight = o.method === 'combine' ? (o.combine?.opdWeight ?? 1) : 1;
        // Kept at advantage 0 by the at-least-one rule (judging.ts): it still counts as trained.
        const keep = judgementOf(r).atLeastOne;
        let advantages: number | number[];
        if (o.method === 'rl') {
          advantages = a;
          if (advantages === 0 && !keep) {
            use.noSignal.push(r.trajectoryId);
            return;
          }
        } else if (o.method === 'opd') {
          if (!teacher) {
            use.noSignal.push(r.trajectoryId);
            return;
          }
          advantages = topK ? 0 : teacher.map((t, k) => t - r.logprobs[k]);
        } else if (topK) {
          advantages = (o.combine?.rlWeight ?? 1) * a;
        } else {
          if (!teacher && a === 0 && !keep) {
            use.noSignal.push(r.trajectoryId);
            return;
          }
          advantages = combineAdvantages({
            teacher: [teacher],
            old: [r.logprobs],
            reward: [a],
            wOpd: o.combine?.opdWeight,
            wRl: o.combine?.rlWeight,
          })[0];
        }
        use.trained.push(r.trajectoryId);
        // The turn's own sample: unless all it would carry is a distillation distillOn moved to
        // the teacher's reply (opd; combine at advantage 0).
        const own = ownTopK !== undefined || !topK || (advantages !== 0 && o.method === 'combine') || keep;
        if (own) {
          samples.push({
            tokenIds: [...r.promptTokenIds, ...r.tokenIds],
            responseStart: r.promptTokenIds.length,
            oldLogprobs: r.logprobs,
            advantages,
            temperature,
            weightVersion: r.weightVersion,
            ...(ownTopK ? { teacherTopK: ownTopK, distillWeight } : {}),
          });
        }
        if (reply) {
          // The teacher's reply under the turn's own prompt, at the turn's temperature: a pure
          // distillation sample (advantage 0), what the student should have said unhinted.
          samples.push({
            tokenIds: [...r.promptTokenIds, ...reply.tokenIds],
            responseStart: r.promptTokenIds.length,
            oldLogprobs: reply.logprobs,
            advantages: 0,
            temperature,
            // Scored by the engines after the turn, not drawn by the policy: in neither drift metric.
            weightVersion: null,
            teacherTopK: reply.teacherTopK,
            distillWeight,
          });
        }
      });
    });
  }
  return {
    samples,
    use,
    stats: {
      episodes,
      rewardMean: episodes ? rewardSum / episodes : 0,
      successRate: episodes ? solved / episodes : 0,
      staleness: turns ? lagSum / turns : 0,
      samples: samples.length,
    },
  };
}

/** Splits samples over shards with about equal token counts (longest first, to the lightest). */
export function shardSamples<T extends { tokenIds: number[] }>(samples: T[], shards: number): T[][] {
  const out: T[][] = Array.from({ length: shards }, () => []);
  const load = new Array<number>(shards).fill(0);
  for (const s of [...samples].sort((a, b) => b.tokenIds.length - a.tokenIds.length)) {
    const i = load.indexOf(Math.min(...load));
    out[i].push(s);
    load[i] += s.tokenIds.length;
  }
  return out;
}
