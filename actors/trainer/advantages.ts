/**
 * Advantage estimators on plain numbers (no TensorFlow.js): GRPO group-relative advantages,
 * on-policy distillation (OPD) token advantages and OpenClaw-RL's "combine" advantages.
 *
 * Per-token values are ragged rows, one row per sample (`number[][]`); `padRows` turns them
 * into the rectangular `[batch, seq]` values and 0/1 mask the tensor losses take.
 */

export interface GrpoOptions {
  /** Subtract the group mean (default true). slime's `--disable-rewards-normalization` turns this off too. */
  subtractMean?: boolean;
  /** Divide by the group standard deviation (+ eps) after subtracting the mean (default true). */
  normalizeStd?: boolean;
  /** Added to the standard deviation before dividing (default 1e-6, as slime). */
  eps?: number;
  /** Bessel-corrected standard deviation, as `torch.std` (default true); a group of one has std 0. */
  unbiasedStd?: boolean;
  /** Mark samples of groups whose rewards are all equal as dropped (their advantage is 0 either way). */
  dropConstantGroups?: boolean;
}

export interface GrpoResult {
  /** One advantage per sample, in input order; 0 for dropped samples. */
  advantages: number[];
  /** Per sample: true when its group was dropped (only with `dropConstantGroups`). */
  dropped: boolean[];
  /** Indices of the samples that were not dropped, ascending. */
  keptIndices: number[];
  /** Indices of the groups whose rewards are all equal (whether or not they were dropped). */
  constantGroups: number[];
  /** Per group: mean and standard deviation of the rewards. */
  groupMeans: number[];
  groupStds: number[];
}

/**
 * GRPO advantages: rewards are laid out group by group (`groupSize` consecutive samples per
 * prompt); each sample's advantage is `r − mean(group)`, divided by `std(group) + eps` when
 * `normalizeStd`. OpenClaw-RL's binary RL runs with normalisation disabled
 * (`{ subtractMean: false, normalizeStd: false }` gives A = r, its one-sample groups).
 */
export function grpoAdvantages(
  rewards: readonly number[],
  groupSize: number,
  options: GrpoOptions = {},
): GrpoResult {
  const {
    subtractMean = true,
    normalizeStd = true,
    eps = 1e-6,
    unbiasedStd = true,
    dropConstantGroups = false,
  } = options;
  if (!Number.isInteger(groupSize) || groupSize < 1) {
    throw new RangeError(`groupSize must be a positive integer, got ${groupSize}`);
  }
  if (rewards.length % groupSize !== 0) {
    throw new RangeError(`${rewards.length} rewards do not split into groups of ${groupSize}`);
  }
  for (const r of rewards) {
    if (!Number.isFinite(r)) throw new RangeError(`rewards must be finite, got ${r}`);
  }
  const advantages: number[] = [];
  const dropped: boolean[] = [];
  const keptIndices: number[] = [];
  const constantGroups: number[] = [];
  const groupMeans: number[] = [];
  const groupStds: number[] = [];
  for (let g = 0; g * groupSize < rewards.length; g++) {
    const group = rewards.slice(g * groupSize, (g + 1) * groupSize);
    const mean = group.reduce((a, b) => a + b, 0) / groupSize;
    const sq = group.reduce((a, b) => a + (b - mean) ** 2, 0);
    const denom = unbiasedStd ? groupSize - 1 : groupSize;
    const std = denom > 0 ? Math.sqrt(sq / denom) : 0;
    groupMeans.push(mean);
    groupStds.push(std);
    const constant = group.every((r) => r === group[0]);
    if (constant) constantGroups.push(g);
    const drop = constant && dropConstantGroups;
    for (let i = 0; i < groupSize; i++) {
      const index = g * groupSize + i;
      let a = subtractMean ? group[i] - mean : group[i];
      if (normalizeStd) a /= std + eps;
      advantages.push(drop ? 0 : a);
      dropped.push(drop);
      if (!drop) keptIndices.push(index);
    }
  }
  return { advantages, dropped, keptIndices, constantGroups, groupMeans, groupStds };
}

function checkSameShape(
  a: readonly (readonly number[])[],
  b: readonly (readonly number[])[],
  what: string,
): void {
  if (a.length !== b.length) throw new RangeError(`${what}: ${a.length} rows vs ${b.length} rows`);
  for (let i = 0; i < a.length; i++) {
    if (a[i].length !== b[i].length) {
      throw new RangeError(`${what}: row ${i} has ${a[i].length} vs ${b[i].length} tokens`);
    }
  }
}

/** OPD advantages per token: teacher logprob − student logprob of the sampled token. */
export function opdAdvantages(
  teacherLogprobs: readonly number[],
  studentLogprobs: readonly number[],
): number[];
export function opdAdvantages(
  teacherLogprobs: readonly (readonly number[])[],
  studentLogprobs: readonly (readonly number[])[],
): number[][];
export function opdAdvantages(
  teacherLogprobs: readonly (number | readonly number[])[],
  studentLogprobs: readonly (number | readonly number[])[],
): number[] | number[][] {
  const nested = teacherLogprobs.length > 0 && Array.isArray(teacherLogprobs[0]);
  const t = (nested ? teacherLogprobs : [teacherLogprobs]) as readonly (readonly number[])[];
  const s = (nested ? studentLogprobs : [studentLogprobs]) as readonly (readonly number[])[];
  checkSameShape(t, s, 'opdAdvantages');
  const out = t.map((row, i) => row.map((v, j) => v - s[i][j]));
  return nested ? out : out[0];
}

export interface CombineInput {
  /** Teacher logprobs per sample and token; `null` for a sample without a teacher (OPD term 0). */
  teacher: readonly (readonly number[] | null)[];
  /** Old (rollout) student logprobs per sample and token. */
  old: readonly (readonly number[])[];
  /** One scalar reward (or RL advantage) per sample, broadcast over its tokens. */
  reward: readonly number[];
  wOpd?: number;
  wRl?: number;
}

/**
 * OpenClaw-RL's combine advantage per token: `wOpd·(teacher − old) + wRl·reward`. A sample
 * without a teacher (RL only) gets `wRl·reward` on every token, as OpenClaw-RL setting
 * teacher = rollout logprobs.
 */
export function combineAdvantages({ teacher, old, reward, wOpd = 1, wRl = 1 }: CombineInput): number[][] {
  if (teacher.length !== old.length || reward.length !== old.length) {
    throw new RangeError(
      `combineAdvantages: ${teacher.length} teacher rows, ${old.length} old rows, ${reward.length} rewards`,
    );
  }
  return old.map((oldRow, i) => {
    const t = teacher[i];
    if (t !== null && t.length !== oldRow.length) {
      throw new RangeError(
        `combineAdvantages: row ${i} has ${t.length} teacher vs ${oldRow.length} old tokens`,
      );
    }
    return oldRow.map((o, j) => (t === null ? 0 : wOpd * (t[j] - o)) + wRl * reward[i]);
  });
}

/** Broadcasts one value per sample over that sample's `lengths[i]` tokens. */
export function broadcastPerSample(values: readonly number[], lengths: readonly number[]): number[][] {
  if (values.length !== lengths.length) {
    throw new RangeError(`broadcastPerSample: ${values.length} values vs ${lengths.length} lengths`);
  }
  return values.map((v, i) => new Array<number>(lengths[i]).fill(v));
}

/**
 * Right-pads ragged rows to `length` (default: the longest row) with `pad`, and returns the
 * matching 0/1 mask, ready for `tf.tensor2d`.
 */
export function padRows(
  rows: readonly (readonly number[])[],
  length?: number,
  pad = 0,
): { values: number[][]; mask: number[][] } {
  const width = length ?? rows.reduce((m, r) => Math.max(m, r.length), 0);
  const values: number[][] = [];
  const mask: number[][] = [];
  for (const [i, row] of rows.entries()) {
    if (row.length > width) throw new RangeError(`padRows: row ${i} has ${row.length} > ${width} values`);
    values.push([...row, ...new Array<number>(width - row.length).fill(pad)]);
    mask.push([...new Array<number>(row.length).fill(1), ...new Array<number>(width - row.length).fill(0)]);
  }
  return { values, mask };
}
