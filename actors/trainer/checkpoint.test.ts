import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointManager, MODEL_FILE, OPTIMIZER_FILE, TRAINER_STATE_FILE } from './checkpoint.js';
import { NonFiniteWeightsError } from './finite-weights.js';
import { AdamW } from './optimizer.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'clawray-ckpt-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const bits = (a: Float32Array) => [...new Uint32Array(a.buffer, a.byteOffset, a.length)];

function trainedState() {
  const weights = new Map([
    ['model.embed_tokens.weight', Float32Array.from({ length: 12 }, (_, i) => Math.sin(i) / 3)],
    ['model.norm.weight', Float32Array.from([1, -0, 1e-38, 3.4e38, 1.4e-45, -Number.MIN_VALUE])],
  ]);
  const shapes = new Map([
    ['model.embed_tokens.weight', [4, 3]],
    ['model.norm.weight', [6]],
  ]);
  const opt = new AdamW({ lr: 0.01 });
  const params = new Map([['model.embed_tokens.weight', weights.get('model.embed_tokens.weight')!.slice()]]);
  opt.step(
    params,
    new Map([['model.embed_tokens.weight', Float32Array.from({ length: 12 }, (_, i) => i / 10)]]),
  );
  opt.step(
    params,
    new Map([['model.embed_tokens.weight', Float32Array.from({ length: 12 }, (_, i) => -i / 7)]]),
  );
  return { weights, shapes, opt };
}

describe('CheckpointManager', () => {
  it('keeps the moments-reset count (AdamW.resetMoments), and reads older files without it', () => {
    const { weights, shapes, opt } = trainedState();
    opt.resetMoments();
    const mgr = new CheckpointManager({ dir: join(dir, 'ckpt-reset') });
    mgr.save({ step: 3, weights, shapes, optimizerState: opt.state() });
    expect(mgr.load(3).optimizerState).toMatchObject({ step: 2, momentSteps: 0 });
    // A file written before the field existed: the moments are as old as the steps.
    const file = join(dir, 'ckpt-reset', 'step-3', TRAINER_STATE_FILE);
    const state = JSON.parse(readFileSync(file, 'utf8'));
    delete state.optimizerMomentSteps;
    writeFileSync(file, JSON.stringify(state));
    expect(mgr.load(3).optimizerState).toMatchObject({ step: 2, momentSteps: 2 });
  });

  it('save → load is bit-identical', () => {
    const { weights, shapes, opt } = trainedState();
    const mgr = new CheckpointManager({ dir: join(dir, 'ckpt') });
    expect(mgr.latest()).toBeNull();
    const path = mgr.save({
      step: 7,
      weights,
      shapes,
      optimizerState: opt.state(),
      rngState: { seed: 42, counter: 0.1 + 0.2 },
      dataCursor: { epoch: 1, offset: 123 },
      extra: { policyVersion: 3 },
    });
    expect(path).toBe(join(dir, 'ckpt', 'step-7'));
    expect(readdirSync(path).sort()).toEqual([MODEL_FILE, OPTIMIZER_FILE, TRAINER_STATE_FILE].sort());
    expect(mgr.latest()).toBe(7);

    const loaded = mgr.load();
    expect(loaded.step).toBe(7);
    expect([...loaded.weights.keys()].sort()).toEqual([...weights.keys()].sort());
    for (const [name, w] of weights) expect(bits(loaded.weights.get(name)!)).toEqual(bits(w));
    expect(loaded.shapes.get('model.embed_tokens.weight')).toEqual([4, 3]);
    expect(loaded.rngState).toEqual({ seed: 42, counter: 0.1 + 0.2 });
    expect(loaded.dataCursor).toEqual({ epoch: 1, offset: 123 });
    expect(loaded.extra).toEqual({ policyVersion: 3 });
    const want = opt.state();
    const got = loaded.optimizerState!;
    expect(got.step).toBe(2);
    for (const [name, m] of want.m) {
      expect(bits(got.m.get(name)!)).toEqual(bits(m));
      expect(bits(got.v.get(name)!)).toEqual(bits(want.v.get(name)!));
    }

    // The restored optimizer continues exactly like the original.
    const resumed = new AdamW({ lr: 0.01 });
    resumed.loadState(got);
    const g = new Map([['model.embed_tokens.weight', Float32Array.from({ length: 12 }, () => 0.5)]]);
    const p1 = new Map([['model.embed_tokens.weight', weights.get('model.embed_tokens.weight')!.slice()]]);
    const p2 = new Map([
      ['model.embed_tokens.weight', loaded.weights.get('model.embed_tokens.weight')!.slice()],
    ]);
    opt.step(p1, g);
    resumed.step(p2, g);
    expect(bits(p2.get('model.embed_tokens.weight')!)).toEqual(bits(p1.get('model.embed_tokens.weight')!));
  });

  it('saves without an optimizer and loads older steps by number', () => {
    const mgr = new CheckpointManager({ dir });
    mgr.save({ step: 1, weights: new Map([['a', Float32Array.from([1])]]) });
    mgr.save({ step: 2, weights: new Map([['a', Float32Array.from([2])]]) });
    expect(mgr.load(1).weights.get('a')![0]).toBe(1);
    expect(mgr.load().weights.get('a')![0]).toBe(2);
    expect(mgr.load(2).optimizerState).toBeUndefined();
    expect(mgr.load(2).rngState).toBeNull();
    expect(() => mgr.load(5)).toThrow(/step-5.*trainer_state\.json/);
  });

  it('keeps only the last keepLast checkpoints', () => {
    const mgr = new CheckpointManager({ dir, keepLast: 2 });
    for (const step of [10, 20, 30, 40])
      mgr.save({ step, weights: new Map([['a', Float32Array.from([step])]]) });
    expect(mgr.list()).toEqual([30, 40]);
    expect(existsSync(join(dir, 'step-10'))).toBe(false);
    expect(readdirSync(dir).sort()).toEqual(['step-30', 'step-40']);
  });

  it('re-saving a step replaces it', () => {
    const mgr = new CheckpointManager({ dir });
    mgr.save({ step: 3, weights: new Map([['a', Float32Array.from([1])]]) });
    mgr.save({ step: 3, weights: new Map([['a', Float32Array.from([9])]]) });
    expect(mgr.load(3).weights.get('a')![0]).toBe(9);
    expect(readdirSync(dir)).toEqual(['step-3']);
  });

  it('a crash mid-save (a leftover temp dir) does not break latest()', () => {
    const mgr = new CheckpointManager({ dir });
    mgr.save({ step: 5, weights: new Map([['a', Float32Array.from([5])]]) });
    // A save of step 6 that died before its rename: a temp dir with a partial model file.
    const tmp = join(dir, '.tmp-step-6-12345-deadbeef');
    mkdirSync(tmp);
    writeFileSync(join(tmp, MODEL_FILE), Buffer.from([1, 2, 3]));
    // And a step dir that is not complete (no trainer_state.json), e.g. made by hand.
    mkdirSync(join(dir, 'step-7'));
    expect(mgr.latest()).toBe(5);
    expect(mgr.load().step).toBe(5);
    // The next successful save removes the stale temp dir.
    mgr.save({ step: 8, weights: new Map([['a', Float32Array.from([8])]]) });
    expect(existsSync(tmp)).toBe(false);
    expect(mgr.latest()).toBe(8);
  });

  it('errors name the file', () => {
    const mgr = new CheckpointManager({ dir });
    expect(() => mgr.load()).toThrow(/no complete checkpoint/);
    mgr.save({ step: 1, weights: new Map([['a', Float32Array.from([1])]]) });
    writeFileSync(join(dir, 'step-1', TRAINER_STATE_FILE), '{not json');
    expect(() => mgr.load(1)).toThrow(new RegExp(`step-1/${TRAINER_STATE_FILE}: cannot read or parse`));
    mgr.save({ step: 2, weights: new Map([['a', Float32Array.from([1])]]) });
    writeFileSync(join(dir, 'step-2', MODEL_FILE), Buffer.from([1, 2]));
    expect(() => mgr.load(2)).toThrow(new RegExp(`step-2/${MODEL_FILE}: truncated`));
    expect(() => mgr.save({ step: -1, weights: new Map() })).toThrow(/step/);
    expect(() => new CheckpointManager({ dir, keepLast: 0 })).toThrow(/keepLast/);
    expect(() =>
      mgr.save({
        step: 4,
        weights: new Map([['a', Float32Array.from([1, 2])]]),
        shapes: new Map([['a', [3]]]),
      }),
    ).toThrow(/step-4\/model\.safetensors/);
    expect(mgr.list()).toEqual([1, 2]);
  });

  it('never writes weights or moments that hold a NaN or an infinity', () => {
    const { weights, shapes, opt } = trainedState();
    const mgr = new CheckpointManager({ dir });
    const poisoned = new Map(weights);
    poisoned.set('model.norm.weight', Float32Array.from([1, Number.NaN, Number.NEGATIVE_INFINITY, 2]));
    expect(() => mgr.save({ step: 3, weights: poisoned, optimizerState: opt.state() })).toThrow(
      NonFiniteWeightsError,
    );
    expect(() => mgr.save({ step: 3, weights: poisoned })).toThrow(
      /step-3\/model\.safetensors: 'model\.norm\.weight' holds 2 of 4 values that are NaN or infinite/,
    );
    const state = opt.state();
    state.v.get('model.embed_tokens.weight')![5] = Number.POSITIVE_INFINITY;
    expect(() => mgr.save({ step: 3, weights, shapes, optimizerState: state })).toThrow(
      /optimizer\.safetensors: 'model\.embed_tokens\.weight' holds 1 of 12/,
    );
    // Nothing reached the disk.
    expect(mgr.list()).toEqual([]);
    expect(existsSync(dir) ? readdirSync(dir) : []).toEqual([]);
  });
});
