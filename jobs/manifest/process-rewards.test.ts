/** The manifest fields of rule-based process rewards and of RL after a warm start. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_STEP_REWARD_COEF } from './defaults.js';
import { checkManifestText, parseManifest } from './load.js';

const manifest = (track: string, method: string, extra: string) =>
  `apiVersion: clawray.dev/v1\nkind: RLJob\nmetadata: { name: m }\nspec:\n  track: ${track}\n  method: ${method}\n  model: { path: ./models/tiny }\n${extra}`;

function problems(text: string): string[] {
  const r = checkManifestText(text, 'job.yaml');
  return r.ok ? [] : r.problems.map((p) => p.text);
}

describe('judge.stepRule', () => {
  it('gives a rule judge per-turn scores, with the default coefficient', () => {
    const m = parseManifest(
      manifest('toolcall', 'rl', '  judge: { backend: rule, stepRule: toolcall-step }\n'),
      'j',
    );
    expect(m.spec.judge).toMatchObject({
      backend: 'rule',
      rule: 'boxed-answer',
      stepRule: 'toolcall-step',
      stepRewardCoef: DEFAULT_STEP_REWARD_COEF,
    });
    const plain = parseManifest(manifest('toolcall', 'rl', ''), 'j');
    expect(plain.spec.judge.stepRewardCoef).toBeUndefined();
  });

  it('is refused on another track, with a model judge, for sft, and a coefficient without it still is', () => {
    expect(problems(manifest('terminal', 'rl', '  judge: { stepRule: toolcall-step }\n'))).toEqual([
      expect.stringMatching(
        /spec\.judge\.stepRule: toolcall-step scores toolcall turns; this job's track is terminal/,
      ),
    ]);
    expect(
      problems(
        manifest('toolcall', 'rl', '  judge: { backend: onnx-prm, model: ./prm, stepRule: toolcall-step }\n'),
      ),
    ).toEqual([expect.stringMatching(/spec\.judge\.stepRule: .*this judge is onnx-prm/)]);
    expect(problems(manifest('toolcall', 'sft', '  judge: { stepRule: toolcall-step }\n'))).toEqual([
      expect.stringMatching(/spec\.judge\.stepRule: .*method is sft/),
    ]);
    expect(problems(manifest('toolcall', 'rl', '  judge: { stepRewardCoef: 0.5 }\n'))).toEqual([
      expect.stringMatching(/spec\.judge\.stepRewardCoef: .*or a judge\.stepRule/),
    ]);
    expect(problems(manifest('toolcall', 'rl', '  judge: { stepRule: toolcall-stp }\n'))).toEqual([
      expect.stringMatching(/spec\.judge\.stepRule/),
    ]);
  });
});

const keepDefaults = '  train: { warmup: { steps: 10 } }\n';

describe('env.draw and train.warmup.batchSize', () => {
  it('parse, with defaults all and unset', () => {
    const m = parseManifest(
      manifest(
        'toolcall',
        'rl',
        '  env: { draw: without-oracle }\n  train: { warmup: { steps: 10, batchSize: 16 } }\n',
      ),
      'j',
    );
    expect(m.spec.env?.draw).toBe('without-oracle');
    // RL starts with fresh AdamW moments unless told to keep the warm start's.
    expect(m.spec.train.warmup).toMatchObject({ steps: 10, batchSize: 16, resetOptimizer: true });
    const keep = '  train: { warmup: { steps: 10, resetOptimizer: false } }\n';
    expect(parseManifest(manifest('toolcall', 'rl', keep), 'j').spec.train.warmup?.resetOptimizer).toBe(
      false,
    );
    expect(parseManifest(manifest('toolcall', 'rl', ''), 'j').spec.env?.draw).toBe('all');
  });

  it("decays the warm start's learning rate on its own schedule, and refuses a floor above it", () => {
    const cosine = '  train: { warmup: { steps: 400, lr: 1.0e-2, schedule: cosine, minLr: 1.0e-3 } }\n';
    expect(parseManifest(manifest('toolcall', 'rl', cosine), 'j').spec.train.warmup).toMatchObject({
      schedule: 'cosine',
      minLr: 1e-3,
    });
    expect(parseManifest(manifest('toolcall', 'rl', keepDefaults), 'j').spec.train.warmup).toMatchObject({
      schedule: 'constant',
      minLr: 0,
    });
    const above = '  train: { warmup: { steps: 10, lr: 1.0e-3, minLr: 1.0e-2 } }\n';
    expect(problems(manifest('toolcall', 'rl', above))).toEqual([
      expect.stringMatching(
        /spec\.train\.warmup\.minLr: expected at most train\.warmup\.lr \(0\.001\), got 0\.01/,
      ),
    ]);
  });

  it('takes the distillation KL direction only with distillTopK', () => {
    const forward =
      '  judge: { backend: reaction }\n  user: { preference: name:Sam }\n  train: { distillTopK: 16, distillDirection: forward }\n';
    expect(parseManifest(manifest('personal', 'opd', forward), 'j').spec.train.distillDirection).toBe(
      'forward',
    );
    expect(
      parseManifest(
        manifest('personal', 'opd', '  judge: { backend: reaction }\n  user: { preference: name:Sam }\n'),
        'j',
      ).spec.train.distillDirection,
    ).toBe('reverse');
    expect(
      problems(
        manifest(
          'personal',
          'opd',
          '  judge: { backend: reaction }\n  user: { preference: name:Sam }\n  train: { distillDirection: forward }\n',
        ),
      ),
    ).toEqual([
      expect.stringMatching(
        /spec\.train\.distillDirection: chooses the KL of top-K distillation; set train\.distillTopK/,
      ),
    ]);
  });

  it('refuses draw without-oracle for sft, which plays no episodes', () => {
    expect(problems(manifest('toolcall', 'sft', '  env: { draw: without-oracle }\n'))).toEqual([
      expect.stringMatching(/spec\.env\.draw: method sft plays no episodes/),
    ]);
  });
});
