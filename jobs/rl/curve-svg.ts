/**
 * A job's learning curves as one SVG a browser shows as it is: the held-out metric (0..1) in
 * the upper panel, the RL steps' mean reward in the lower one, both over the job step, with
 * ticks, axis labels, a legend and the job's name. Plain SVG text, no dependency: a pure
 * function of the points, so a test reads the coordinates back.
 */

/** What is drawn: see curves.ts for what the points mean. */
export interface CurveData {
  heldout: ReadonlyArray<{ step: number; value: number; phase: 'start' | 'warmup' | 'rl' }>;
  reward: ReadonlyArray<{ step: number; mean: number }>;
}

export interface CurveLabels {
  /** The picture's title, e.g. `toolcall-grpo (job-9e72…)`. */
  title: string;
  /** The upper panel's y axis: 'held-out success' or 'preference score'. */
  heldout: string;
  /** The lower panel's y axis. Default 'mean reward'. */
  reward?: string;
  /** What the lower panel says when there is no reward point. Default 'no RL step'. */
  noReward?: string;
}

/** Where the panels sit (user units of the viewBox), exported for the tests that read points back. */
export const CURVE_SVG_LAYOUT = {
  width: 840,
  height: 580,
  plotLeft: 72,
  plotRight: 600,
  heldout: { top: 60, bottom: 260 },
  reward: { top: 320, bottom: 520 },
} as const;

/** Point markers are left out of a curve longer than this (the line says enough). */
const MAX_MARKERS = 200;
const COLORS = { start: '#7f7f7f', warmup: '#e69f00', rl: '#0072b2', reward: '#009e73' } as const;
const PHASE_NAMES = { start: 'before training', warmup: 'after the warm start', rl: 'during RL' } as const;

export function curvesSvg(curves: CurveData, labels: CurveLabels): string {
  const L = CURVE_SVG_LAYOUT;
  const heldout = curves.heldout.filter((p) => Number.isFinite(p.step) && Number.isFinite(p.value));
  const reward = curves.reward.filter((p) => Number.isFinite(p.step) && Number.isFinite(p.mean));
  const steps = [...heldout.map((p) => p.step), ...reward.map((p) => p.step)];
  const xTicks = niceTicks(Math.min(0, ...steps), Math.max(1, ...steps), 6, true);
  const xDomain: Domain = [xTicks[0], xTicks.at(-1)!];
  const x = (step: number) => scale(step, xDomain, [L.plotLeft, L.plotRight]);
  const rewardTicks = rewardAxis(reward.map((p) => p.mean));
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${L.width}" height="${L.height}" viewBox="0 0 ${L.width} ${L.height}" font-family="sans-serif" font-size="12">`,
    `<title>${esc(`${labels.title}: ${labels.heldout} and ${labels.reward ?? 'mean reward'} by job step`)}</title>`,
    `<rect width="${L.width}" height="${L.height}" fill="#ffffff"/>`,
    `<text x="${L.width / 2}" y="28" text-anchor="middle" font-size="16" font-weight="bold">${esc(labels.title)}</text>`,
  ];

  // Upper panel: the held-out metric.
  const hy = (v: number) => scale(v, [0, 1], [L.heldout.bottom, L.heldout.top]);
  out.push(...frame('heldout', L.heldout, [0, 0.2, 0.4, 0.6, 0.8, 1], hy, xTicks, x, labels.heldout));
  if (heldout.length === 0) {
    out.push(emptyNote(L.heldout, 'no held-out evaluation'));
  } else {
    const solid: string[] = [];
    const dashed: string[] = [];
    // The warm start's jump (both at job step 0) is dashed: no RL step made it.
    for (let i = 1; i < heldout.length; i++) {
      const a = heldout[i - 1];
      const b = heldout[i];
      (b.phase === 'warmup' ? dashed : solid).push(
        `M${num(x(a.step))} ${num(hy(a.value))}L${num(x(b.step))} ${num(hy(b.value))}`,
      );
    }
    if (solid.length > 0) {
      out.push(
        `<path class="heldout-line" d="${solid.join('')}" fill="none" stroke="${COLORS.rl}" stroke-width="2"/>`,
      );
    }
    if (dashed.length > 0) {
      out.push(
        `<path class="heldout-warmup" d="${dashed.join('')}" fill="none" stroke="${COLORS.warmup}" stroke-width="2" stroke-dasharray="4 3"/>`,
      );
    }
    if (heldout.length <= MAX_MARKERS) {
      for (const p of heldout) {
        out.push(
          `<circle class="heldout ${p.phase}" cx="${num(x(p.step))}" cy="${num(hy(p.value))}" r="4" fill="${COLORS[p.phase]}"><title>${esc(`step ${p.step}: ${labels.heldout} ${p.value.toFixed(3)} (${PHASE_NAMES[p.phase]})`)}</title></circle>`,
        );
      }
    }
  }

  // Lower panel: the mean reward of each RL step's batch.
  const rDomain: Domain = [rewardTicks[0], rewardTicks.at(-1)!];
  const ry = (v: number) => scale(v, rDomain, [L.reward.bottom, L.reward.top]);
  out.push(...frame('reward', L.reward, rewardTicks, ry, xTicks, x, labels.reward ?? 'mean reward'));
  if (reward.length === 0) {
    out.push(emptyNote(L.reward, labels.noReward ?? 'no RL step'));
  } else {
    if (rDomain[0] < 0 && rDomain[1] > 0) {
      out.push(
        `<line x1="${L.plotLeft}" x2="${L.plotRight}" y1="${num(ry(0))}" y2="${num(ry(0))}" stroke="#999999" stroke-dasharray="2 3"/>`,
      );
    }
    const points = reward.map((p) => `${num(x(p.step))},${num(ry(p.mean))}`).join(' ');
    out.push(
      `<polyline class="reward-line" points="${points}" fill="none" stroke="${COLORS.reward}" stroke-width="1.5"/>`,
    );
    if (reward.length <= MAX_MARKERS) {
      for (const p of reward) {
        out.push(
          `<circle class="reward" cx="${num(x(p.step))}" cy="${num(ry(p.mean))}" r="2.5" fill="${COLORS.reward}"><title>${esc(`step ${p.step}: mean reward ${p.mean.toFixed(3)}`)}</title></circle>`,
        );
      }
    }
  }
  out.push(
    `<text x="${(L.plotLeft + L.plotRight) / 2}" y="${L.reward.bottom + 44}" text-anchor="middle">job step</text>`,
  );
  out.push(...legend(heldout, reward.length > 0));
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

type Domain = readonly [number, number];

/** The panel's box, grid lines, y ticks and label, and x ticks along its bottom. */
function frame(
  name: string,
  box: { top: number; bottom: number },
  yTicks: readonly number[],
  y: (v: number) => number,
  xTicks: readonly number[],
  x: (v: number) => number,
  yLabel: string,
): string[] {
  const L = CURVE_SVG_LAYOUT;
  const parts = [`<g class="${name}-axes">`];
  for (const t of yTicks) {
    const ty = num(y(t));
    parts.push(
      `<line x1="${L.plotLeft}" x2="${L.plotRight}" y1="${ty}" y2="${ty}" stroke="#e5e5e5"/>`,
      `<text x="${L.plotLeft - 6}" y="${ty}" text-anchor="end" dominant-baseline="middle">${esc(tickLabel(t))}</text>`,
    );
  }
  for (const t of xTicks) {
    const tx = num(x(t));
    parts.push(
      `<line x1="${tx}" x2="${tx}" y1="${box.bottom}" y2="${box.bottom + 5}" stroke="#333333"/>`,
      `<text x="${tx}" y="${box.bottom + 18}" text-anchor="middle">${esc(tickLabel(t))}</text>`,
    );
  }
  parts.push(
    `<rect x="${L.plotLeft}" y="${box.top}" width="${L.plotRight - L.plotLeft}" height="${box.bottom - box.top}" fill="none" stroke="#333333"/>`,
    `<text transform="translate(${L.plotLeft - 48} ${(box.top + box.bottom) / 2}) rotate(-90)" text-anchor="middle">${esc(yLabel)}</text>`,
    '</g>',
  );
  return parts;
}

function emptyNote(box: { top: number; bottom: number }, text: string): string {
  const L = CURVE_SVG_LAYOUT;
  return `<text x="${(L.plotLeft + L.plotRight) / 2}" y="${(box.top + box.bottom) / 2}" text-anchor="middle" fill="#7f7f7f">${esc(text)}</text>`;
}

/** A marker and a name for each kind of point drawn, right of the panels. */
function legend(heldout: CurveData['heldout'], reward: boolean): string[] {
  const L = CURVE_SVG_LAYOUT;
  const left = L.plotRight + 20;
  const entries: Array<{ color: string; text: string; line?: boolean }> = [];
  for (const phase of ['start', 'warmup', 'rl'] as const) {
    if (heldout.some((p) => p.phase === phase)) {
      entries.push({ color: COLORS[phase], text: `held-out, ${PHASE_NAMES[phase]}` });
    }
  }
  if (reward) entries.push({ color: COLORS.reward, text: 'mean reward', line: true });
  const parts = ['<g class="legend">'];
  entries.forEach((e, i) => {
    const y = L.heldout.top + 10 + i * 20;
    parts.push(
      e.line
        ? `<line x1="${left - 6}" x2="${left + 6}" y1="${y}" y2="${y}" stroke="${e.color}" stroke-width="2"/>`
        : `<circle cx="${left}" cy="${y}" r="4" fill="${e.color}"/>`,
      `<text x="${left + 12}" y="${y}" dominant-baseline="middle">${esc(e.text)}</text>`,
    );
  });
  parts.push('</g>');
  return parts;
}

/** The reward panel's ticks: nice values around the rewards seen (−1..1 with none). */
function rewardAxis(values: readonly number[]): number[] {
  if (values.length === 0) return niceTicks(-1, 1, 4, false);
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  if (hi - lo < 1e-9) {
    const pad = Math.max(0.5, Math.abs(lo) * 0.1);
    lo -= pad;
    hi += pad;
  }
  return niceTicks(lo, hi, 4, false);
}

/**
 * About `count` evenly spaced round values (1, 2 or 5 × 10^k apart) from at or below `lo` to at
 * or above `hi`; whole numbers only when `integer`.
 */
export function niceTicks(lo: number, hi: number, count: number, integer: boolean): number[] {
  const raw = (hi - lo) / Math.max(1, count);
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  let step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw) ?? 10 * magnitude;
  if (integer) step = Math.max(1, Math.round(step));
  const first = Math.floor(lo / step + 1e-9);
  const last = Math.ceil(hi / step - 1e-9);
  const ticks: number[] = [];
  for (let i = first; i <= last; i++) ticks.push(clean(i * step));
  return ticks;
}

function scale(v: number, [d0, d1]: Domain, [r0, r1]: Domain): number {
  return r0 + ((v - d0) / (d1 - d0)) * (r1 - r0);
}

/** 0.30000000000000004 → 0.3 */
function clean(v: number): number {
  return Number.parseFloat(v.toPrecision(12));
}

function tickLabel(v: number): string {
  return String(clean(v));
}

/** A coordinate with two decimals at most. */
function num(v: number): string {
  return String(Math.round(v * 100) / 100);
}

/** Text and attribute values as XML wants them. */
function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
