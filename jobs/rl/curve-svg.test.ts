import { describe, expect, it } from 'vitest';
import { type CurveData, curvesSvg, CURVE_SVG_LAYOUT as L, niceTicks } from './curve-svg.js';

const labels = { title: 'tc <grpo> & "friends"', heldout: 'held-out success' };

/**
 * Checks the document is well-formed XML of the kind written here (no parser is a dependency):
 * one <svg> root, every tag closed in order, attributes quoted, no stray `<` or `&` in text.
 */
function expectWellFormed(svg: string): void {
  expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
  expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
  const stack: string[] = [];
  const tag = /<(\/?)([a-zA-Z][\w-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/g;
  let last = 0;
  for (let m = tag.exec(svg); m; m = tag.exec(svg)) {
    const text = svg.slice(last, m.index);
    expect(text).not.toMatch(/[<>]/);
    expect(text).not.toMatch(/&(?!#\d+;|amp;|lt;|gt;|quot;|apos;)/);
    last = tag.lastIndex;
    const [, closing, name, , selfClosing] = m;
    if (closing) expect(stack.pop()).toBe(name);
    else if (!selfClosing) stack.push(name);
    if (stack.length === 0) expect(svg.slice(last).trim()).toBe('');
  }
  expect(svg.slice(last).trim()).toBe('');
  expect(stack).toEqual([]);
}

/** The [cx, cy] of each circle of `cls`, in document order. */
function circles(svg: string, cls: string): Array<[number, number]> {
  return [...svg.matchAll(new RegExp(`<circle class="${cls}[^"]*" cx="([^"]+)" cy="([^"]+)"`, 'g'))].map(
    (m) => [Number(m[1]), Number(m[2])],
  );
}

const ALL: CurveData = {
  heldout: [
    { step: 0, value: 0, phase: 'start' },
    { step: 0, value: 0.25, phase: 'warmup' },
    { step: 30, value: 0.5, phase: 'rl' },
    { step: 60, value: 1, phase: 'rl' },
  ],
  reward: [
    { step: 1, mean: -1 },
    { step: 30, mean: 0 },
    { step: 60, mean: 0.5 },
  ],
};

describe('curvesSvg', () => {
  it('is one well-formed <svg> with the title escaped, axis labels, ticks and a legend', () => {
    const svg = curvesSvg(ALL, labels);
    expectWellFormed(svg);
    expect(svg).toContain('tc &#60;grpo&#62; &#38; &#34;friends&#34;');
    expect(svg).not.toContain('<grpo>');
    expect(svg).toContain('>held-out success</text>');
    expect(svg).toContain('>mean reward</text>');
    expect(svg).toContain('>job step</text>');
    for (const t of ['0', '10', '60', '0.2', '1']) expect(svg).toContain(`>${t}</text>`);
    for (const t of ['held-out, before training', 'held-out, after the warm start', 'held-out, during RL'])
      expect(svg).toContain(`>${t}</text>`);
    expect(svg).not.toContain('NaN');
    expect(svg).not.toContain('Infinity');
  });

  it('puts each point at its step and value: held-out on 0..1, reward on its own axis', () => {
    const svg = curvesSvg(ALL, labels);
    const h = circles(svg, 'heldout');
    expect(h).toHaveLength(4);
    // Step 0 at the left edge, step 60 (the last x tick) at the right; 0 at the bottom, 1 at the top.
    expect(h[0]).toEqual([L.plotLeft, L.heldout.bottom]);
    expect(h[1]).toEqual([L.plotLeft, L.heldout.bottom - 0.25 * (L.heldout.bottom - L.heldout.top)]);
    expect(h[2]).toEqual([(L.plotLeft + L.plotRight) / 2, (L.heldout.top + L.heldout.bottom) / 2]);
    expect(h[3]).toEqual([L.plotRight, L.heldout.top]);
    // The warm start's jump is drawn dashed, the RL evaluations' line solid.
    expect(svg).toMatch(/class="heldout-warmup" d="M72 260L72 210"/);
    expect(svg).toMatch(/class="heldout-line" d="M72 210L336 160M336 160L600 60"/);
    const r = circles(svg, 'reward');
    expect(r).toHaveLength(3);
    // Reward −1..0.5 on ticks −1..0.5: −1 at the panel's bottom, 0.5 at its top, x shared with held-out.
    expect(r[0]).toEqual([
      Math.round((L.plotLeft + (L.plotRight - L.plotLeft) / 60) * 100) / 100,
      L.reward.bottom,
    ]);
    expect(r[1][0]).toBe(h[2][0]);
    expect(r[1][1]).toBeCloseTo(L.reward.bottom - (2 / 3) * (L.reward.bottom - L.reward.top), 1);
    expect(r[2]).toEqual([L.plotRight, L.reward.top]);
    expect(svg).toMatch(/<polyline class="reward-line" points="[\d., ]+"/);
  });

  it('draws empty curves as notes, and one point without a line, NaN-free', () => {
    const empty = curvesSvg({ heldout: [], reward: [] }, labels);
    expectWellFormed(empty);
    expect(empty).toContain('>no held-out evaluation</text>');
    expect(empty).toContain('>no RL step</text>');
    expect(empty).not.toContain('NaN');
    // A method without a reward says why its panel is empty (text escaped).
    expect(
      curvesSvg({ heldout: [], reward: [] }, { ...labels, noReward: "opd trains on the teacher's hints" }),
    ).toContain('>opd trains on the teacher&#39;s hints</text>');
    expect(circles(empty, 'heldout')).toEqual([]);

    const one = curvesSvg(
      { heldout: [{ step: 0, value: 0.5, phase: 'start' }], reward: [{ step: 1, mean: 0.3 }] },
      labels,
    );
    expectWellFormed(one);
    expect(one).not.toMatch(/NaN|Infinity/);
    expect(circles(one, 'heldout')).toEqual([[L.plotLeft, (L.heldout.top + L.heldout.bottom) / 2]]);
    expect(one).not.toContain('heldout-line');
    // A single reward sits inside its panel (the axis is padded around it).
    const [[x, y]] = circles(one, 'reward');
    expect(x).toBe(L.plotRight);
    expect(y).toBeGreaterThan(L.reward.top);
    expect(y).toBeLessThan(L.reward.bottom);
  });

  it('leaves non-finite points out rather than writing NaN', () => {
    const svg = curvesSvg(
      {
        heldout: [
          { step: 0, value: Number.NaN, phase: 'start' },
          { step: 5, value: 0.5, phase: 'rl' },
        ],
        reward: [
          { step: 1, mean: Number.POSITIVE_INFINITY },
          { step: 2, mean: 1 },
        ],
      },
      labels,
    );
    expectWellFormed(svg);
    expect(svg).not.toMatch(/NaN|Infinity/);
    expect(circles(svg, 'heldout')).toHaveLength(1);
    expect(circles(svg, 'reward')).toHaveLength(1);
  });

  it('thins nothing of a long curve but its markers', () => {
    const reward = Array.from({ length: 500 }, (_, i) => ({ step: i + 1, mean: Math.sin(i) }));
    const svg = curvesSvg({ heldout: [], reward }, labels);
    expectWellFormed(svg);
    expect(circles(svg, 'reward')).toEqual([]);
    const points = /class="reward-line" points="([^"]+)"/.exec(svg)![1].split(' ');
    expect(points).toHaveLength(500);
    expect(svg).toContain('>500</text>');
  });
});

describe('niceTicks', () => {
  it('spans the range with round steps', () => {
    expect(niceTicks(0, 60, 6, true)).toEqual([0, 10, 20, 30, 40, 50, 60]);
    expect(niceTicks(0, 3, 6, true)).toEqual([0, 1, 2, 3]);
    expect(niceTicks(0, 1, 6, true)).toEqual([0, 1]);
    expect(niceTicks(-1, 0.5, 4, false)).toEqual([-1, -0.5, 0, 0.5]);
    expect(niceTicks(0.1, 0.3, 4, false)).toEqual([0.1, 0.15, 0.2, 0.25, 0.3]);
  });
});
