import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { AdamW, canonicalOrder, flattenGrads, unflatten } from './optimizer.js';

const f32 = (...xs: number[]) => Float32Array.from(xs);

describe('AdamW', () => {
  it('matches a hand-computed 2-step example', () => {
    // lr = 0.1, wd = 0.01, β = (0.9, 0.999), ε = 1e-8, p₀ = 1.
    // Step 1, g = 0.5:
    //   decay: p = 1 · (1 − 0.1·0.01)            = 0.999
    //   m = 0.1 · 0.5                           = 0.05
    //   v = 0.001 · 0.25                        = 0.00025
    //   m̂ = 0.05 / (1 − 0.9)                    = 0.5
    //   v̂ = 0.00025 / (1 − 0.999)               = 0.25,  √v̂ = 0.5
    //   p = 0.999 − 0.1 · 0.5 / (0.5 + 1e-8)     ≈ 0.999 − 0.1 = 0.899000002
    // Step 2, g = −0.25:
    //   decay: p = 0.899000002 · 0.999           = 0.898101002
    //   m = 0.9 · 0.05 + 0.1 · (−0.25)           = 0.02
    //   v = 0.999 · 0.00025 + 0.001 · 0.0625     = 0.00031225
    //   m̂ = 0.02 / (1 − 0.81)                   = 0.105263158
    //   v̂ = 0.00031225 / (1 − 0.998001)         = 0.156203102,  √v̂ = 0.395225382
    //   p = 0.898101002 − 0.1 · 0.105263158 / 0.395225382 = 0.898101002 − 0.026633704 = 0.871467298
    const opt = new AdamW({ lr: 0.1, weightDecay: 0.01 });
    const params = new Map([['w', f32(1)]]);
    opt.step(params, new Map([['w', f32(0.5)]]));
    expect(params.get('w')![0]).toBeCloseTo(0.899000002, 6);
    opt.step(params, new Map([['w', f32(-0.25)]]));
    expect(params.get('w')![0]).toBeCloseTo(0.871467298, 6);
    const st = opt.state();
    expect(st.step).toBe(2);
    expect(st.m.get('w')![0]).toBeCloseTo(0.02, 7);
    expect(st.v.get('w')![0]).toBeCloseTo(0.00031225, 9);
  });

  it('decays weights decoupled from the gradient moments', () => {
    // A zero gradient leaves m = v = 0 and the Adam term 0; only p · (1 − lr·wd) remains.
    const opt = new AdamW({ lr: 0.1, weightDecay: 0.5 });
    const params = new Map([['w', f32(2, -4)]]);
    opt.step(params, new Map([['w', f32(0, 0)]]));
    expect([...params.get('w')!]).toEqual([Math.fround(2 * 0.95), Math.fround(-4 * 0.95)]);
    expect([...opt.state().m.get('w')!]).toEqual([0, 0]);
    expect([...opt.state().v.get('w')!]).toEqual([0, 0]);

    // The Adam step size does not depend on wd (unlike L2 regularisation folded into g).
    const a = new AdamW({ lr: 0.1, weightDecay: 0 });
    const b = new AdamW({ lr: 0.1, weightDecay: 0.5 });
    const pa = new Map([['w', f32(1)]]);
    const pb = new Map([['w', f32(1)]]);
    a.step(pa, new Map([['w', f32(0.3)]]));
    b.step(pb, new Map([['w', f32(0.3)]]));
    // a: 1 − 0.1;  b: 1·0.95 − 0.1.
    expect(pa.get('w')![0]).toBeCloseTo(0.9, 6);
    expect(pb.get('w')![0]).toBeCloseTo(0.85, 6);
  });

  it('a per-call lr overrides the default; params without grads are untouched', () => {
    const opt = new AdamW({ lr: 1, weightDecay: 0 });
    const params = new Map([
      ['a', f32(1)],
      ['b', f32(5)],
    ]);
    opt.step(params, new Map([['a', f32(2)]]), 0.01);
    expect(params.get('a')![0]).toBeCloseTo(0.99, 6);
    expect(params.get('b')![0]).toBe(5);
    expect(opt.state().m.has('b')).toBe(false);
  });

  it('resetMoments() steps as a fresh AdamW does, keeps counting steps, and survives state()/loadState()', () => {
    const grads = (t: number) => new Map([['x', f32(Math.sin(t), 0.5 - t / 10)]]);
    const used = new AdamW({ lr: 0.01 });
    const p = new Map([['x', f32(0.1, -0.2)]]);
    for (let t = 0; t < 4; t++) used.step(p, grads(t));
    used.resetMoments();
    expect(used.stepsTaken).toBe(4);
    const fresh = new AdamW({ lr: 0.01 });
    const q = new Map([['x', p.get('x')!.slice()]]);
    used.step(p, grads(7));
    fresh.step(q, grads(7));
    expect(new Uint32Array(p.get('x')!.buffer)).toEqual(new Uint32Array(q.get('x')!.buffer));
    expect(used.stepsTaken).toBe(5);
    // A checkpoint taken after the reset resumes with the reset's bias correction.
    const saved = used.state();
    expect(saved).toMatchObject({ step: 5, momentSteps: 1 });
    const resumed = new AdamW({ lr: 0.01 });
    resumed.loadState(saved);
    const r = new Map([['x', p.get('x')!.slice()]]);
    used.step(p, grads(8));
    resumed.step(r, grads(8));
    expect(new Uint32Array(r.get('x')!.buffer)).toEqual(new Uint32Array(p.get('x')!.buffer));
    expect(() => resumed.loadState({ ...saved, momentSteps: 9 })).toThrow(
      /momentSteps must be a whole number in \[0, step 5\]/,
    );
  });

  it('state()/loadState() continue bit-identically', () => {
    const make = () =>
      new Map([
        ['x', f32(0.1, -0.2, 0.3)],
        ['y', f32(1.5)],
      ]);
    const grads = (t: number) =>
      new Map([
        ['x', f32(Math.sin(t), Math.cos(t), 0.5 - t / 10)],
        ['y', f32(t % 2 ? 0.25 : -0.75)],
      ]);
    const ref = new AdamW({ lr: 0.01 });
    const pRef = make();
    for (let t = 0; t < 6; t++) ref.step(pRef, grads(t));

    const first = new AdamW({ lr: 0.01 });
    const p = make();
    for (let t = 0; t < 3; t++) first.step(p, grads(t));
    const saved = first.state();
    const p2 = new Map([...p].map(([k, a]) => [k, a.slice()] as const));
    first.step(p, grads(99)); // mutating the live optimizer must not touch the saved copy
    const resumed = new AdamW({ lr: 0.01 });
    resumed.loadState(saved);
    for (let t = 3; t < 6; t++) resumed.step(p2, grads(t));
    expect(resumed.stepsTaken).toBe(6);
    for (const name of ['x', 'y']) {
      expect(new Uint32Array(p2.get(name)!.buffer)).toEqual(new Uint32Array(pRef.get(name)!.buffer));
    }
    const a = ref.state();
    const b = resumed.state();
    for (const name of ['x', 'y']) {
      expect(new Uint32Array(b.m.get(name)!.buffer)).toEqual(new Uint32Array(a.m.get(name)!.buffer));
      expect(new Uint32Array(b.v.get(name)!.buffer)).toEqual(new Uint32Array(a.v.get(name)!.buffer));
    }
  });

  it('rejects bad options and mismatched grads, naming them', () => {
    expect(() => new AdamW({ lr: -1 })).toThrow(/lr/);
    expect(() => new AdamW({ lr: 0.1, betas: [1, 0.9] })).toThrow(/betas\[0\]/);
    expect(() => new AdamW({ lr: 0.1, eps: Number.NaN })).toThrow(ConfigError);
    const opt = new AdamW({ lr: 0.1 });
    expect(() => opt.step(new Map([['w', f32(1)]]), new Map([['v', f32(1)]]))).toThrow(
      /'v' names no parameter/,
    );
    expect(() => opt.step(new Map([['w', f32(1)]]), new Map([['w', f32(1, 2)]]))).toThrow(
      /'w' has 2 elements/,
    );
    expect(() => opt.loadState({ step: 1, m: new Map([['w', f32(1)]]), v: new Map() })).toThrow(/'w'/);
  });
});

describe('flattenGrads / unflatten', () => {
  it('round-trips in a fixed name order', () => {
    const grads = new Map([
      ['model.b', f32(3, 4, 5, 6)],
      ['model.a', f32(1, 2)],
    ]);
    const names = canonicalOrder(grads.keys());
    expect(names).toEqual(['model.a', 'model.b']);
    const flat = flattenGrads(names, grads);
    expect([...flat]).toEqual([1, 2, 3, 4, 5, 6]);
    const shapes = new Map([
      ['model.a', [2]],
      ['model.b', [2, 2]],
    ]);
    const back = unflatten(flat, names, shapes);
    expect([...back.keys()]).toEqual(names);
    expect([...back.get('model.a')!]).toEqual([1, 2]);
    expect([...back.get('model.b')!]).toEqual([3, 4, 5, 6]);
    // Parallel-array shapes work too, and the results are copies.
    const back2 = unflatten(flat, names, [[2], [4]]);
    back2.get('model.a')![0] = 42;
    expect(flat[0]).toBe(1);
  });

  it('names what is missing or mismatched', () => {
    expect(() => flattenGrads(['x'], new Map())).toThrow(/'x'/);
    expect(() => unflatten(f32(1, 2, 3), ['x'], [[2]])).toThrow(/2 elements but the buffer has 3/);
    expect(() => unflatten(f32(1), ['x'], new Map())).toThrow(/no shape for 'x'/);
  });
});
