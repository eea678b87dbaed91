/**
 * Judged turns → training samples. A group is one prompt's samplesPerPrompt episodes (GRPO);
 * every turn of an episode is one sample carrying its episode's advantage (RL), the teacher −
 * rollout logprob gap per token (OPD), or both (combine: w_opd·(teacher − old) + w_rl·A).
 */
import { combineAdvantages, grpoAdvantages } from '../../actors/trainer/advantages.js';
import type { TrainSample } from '../../actors/trainer/policy-trainer.js';
import type { TrajectoryRecord } from '../buffer/types.js';

export interface GroupKey {
  group: string;
  groupSize: number;
  episode: string;
  turns: number;
}

export function groupKey(r: TrajectoryRecord): GroupKey {
  const e = r.extra ?? {};
  return {
    group: String(e.group ?? r.trajectoryId),
    groupSize: Number(e.groupSize ?? 1),
    episode: String(e.episode ?? r.trajectoryId),
    turns: Number(e.turns ?? 1),
  };
}

/** Collects judged turns until each group has all turns of all its episodes. */
export class GroupAssembler {
  private readonly open = new Map<string, Map<string, TrajectoryRecord[]>>();
  private readonly ready: TrajectoryRecord[][][] = [];

  add(record: TrajectoryRecord): void {
    const k = groupKey(record);
    const episodes = this.open.get(k.group) ?? new Map<string, TrajectoryRecord[]>();
    this.open.set(k.group, episodes);
    const turns = episodes.get(k.episode) ?? [];
    turns.push(record);
    episodes.set(k.episode, turns);
    const complete =
      episodes.size === k.groupSize && [...episodes.values()].every((t) => t.length === groupKey(t[0]).turns);
    if (complete) {
      this.open.delete(k.group);
      this.ready.push([...episodes.values()].map((t) => t.sort((a, b) => a.turn - b.turn)));
    }
  }

  /** Complete groups waiting to be trained on. */
  get size(): number {
    return this.ready.length;
  }

  take(n: number): TrajectoryRecord[][][] {
    return this.ready.splice(0, n);
  }
}

export interface AdvantageOptions {
  method: 'rl' | 'opd' | 'combine';
  samplesPerPrompt: number;
  combine?: { opdWeight: number; rlWeight: number };
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

const rewardOf = (episode: TrajectoryRecord[]) => Number(episode[0].extra?.reward ?? 0);

/** Samples with a nonzero learning signal, and what the batch looked like. */
export function buildSamples(
  groups: TrajectoryRecord[][][],
  version: number,
  o: AdvantageOptions,
): { samples: TrainSample[]; stats: BatchStats } {
  const samples: TrainSample[] = [];
  let episodes = 0;
  let rewardSum = 0;
  let solved = 0;
  let lagSum = 0;
  let turns = 0;
  for (const group of groups) {
    const rewards = group.map(rewardOf);
    // One sample per prompt (OpenClaw-RL's live turns): A = r, no normalisation.
    const single = group.length === 1 && o.samplesPerPrompt === 1;
    const adv = grpoAdvantages(
      rewards,
      group.length,
      single ? { subtractMean: false, normalizeStd: false } : {},
    ).advantages;
    group.forEach((episode, i) => {
      episodes++;
      rewardSum += rewards[i];
      if (rewards[i] >= 1) solved++;
      for (const r of episode) {
        turns++;
        lagSum += version - r.weightVersion;
        if (r.tokenIds.length === 0) continue;
        const teacher = (r.extra?.teacherLogprobs as number[] | undefined) ?? null;
        let advantages: number | number[];
        if (o.method === 'rl') {
          advantages = adv[i];
          if (advantages === 0) continue;
        } else if (o.method === 'opd') {
          if (!teacher) continue;
          advantages = teacher.map((t, k) => t - r.logprobs[k]);
        } else {
          if (!teacher && adv[i] === 0) continue;
          advantages = combineAdvantages({
            teacher: [teacher],
            old: [r.logprobs],
            reward: [adv[i]],
            wOpd: o.combine?.opdWeight,
            wRl: o.combine?.rlWeight,
          })[0];
        }
        samples.push({
          tokenIds: [...r.promptTokenIds, ...r.tokenIds],
          responseStart: r.promptTokenIds.length,
          oldLogprobs: r.logprobs,
          advantages,
        });
      }
    });
  }
  return {
    samples,
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
