import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { packageRoot } from '../../common/package-root.js';
import { DEFAULT_STEP_REWARD_COEF, MANIFEST_TRACKS, TRACK_DEFAULTS } from './defaults.js';
import { checkManifestText, loadManifest, manifestLocation, parseManifest } from './load.js';
import { closest } from './messages.js';

/** DESIGN.md §5, verbatim. */
const DESIGN_EXAMPLE = `apiVersion: clawray.dev/v1
kind: RLJob
metadata: { name: toolcall-grpo }
spec:
  track: toolcall            # personal | terminal | gui | swe | toolcall
  method: rl                 # rl | opd | combine | sft
  model: { path: ./models/tiny }
  resources:                 # the GPU partition, turned into placement groups
    rollout: { replicas: 2, gpus: 0.5 }
    judge:   { replicas: 3, gpus: 0.25 }
    trainer: { shards: 2, gpus: 1 }
  rollout: { batchSize: 32, samplesPerPrompt: 4, maxTurns: 8, temperature: 1.0 }
  judge:   { votes: 3 }
  train:   { steps: 200, lr: 1.0e-5, clip: [0.2, 0.28], klCoef: 0.0, async: true, maxStaleness: 1 }
  env:     { tasks: builtin, parallel: 16 }
`;

const minimal = (track: string, method = 'rl', extra = '') =>
  `apiVersion: clawray.dev/v1\nkind: RLJob\nmetadata: { name: m }\nspec:\n  track: ${track}\n  method: ${method}\n  model: { path: ./models/tiny }\n${extra}`;

function problems(text: string, set?: string[]): string[] {
  const r = checkManifestText(text, 'job.yaml', { set });
  return r.ok ? [] : r.problems.map((p) => p.text);
}

describe('parseManifest', () => {
  it('accepts every manifest under examples/', () => {
    const dir = join(packageRoot(), 'examples');
    // Manifests sit at examples/<track>/*.yaml; deeper YAML is task data (terminal's task.yaml).
    const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter(
      (f) => f.endsWith('.yaml') && f.split(sep).length === 2,
    );
    expect(files).toContain(join('personal', 'live.yaml'));
    for (const f of files) parseManifest(readFileSync(join(dir, f), 'utf8'), f);
    const live = parseManifest(readFileSync(join(dir, 'personal', 'live.yaml'), 'utf8'), 'live.yaml');
    expect(live.spec.train.steps).toBeUndefined();
  });

  it('reads the DESIGN.md example and fills the rest from the defaults', () => {
    const m = parseManifest(DESIGN_EXAMPLE, 'job.yaml');
    expect(m.spec.resources.judge).toEqual({
      replicas: 3,
      gpus: 0.25,
      cpus: 0,
      memoryMb: 0,
      strategy: 'PACK',
    });
    expect(m.spec.rollout).toEqual({
      batchSize: 32,
      samplesPerPrompt: 4,
      maxTurns: 8,
      maxTokens: TRACK_DEFAULTS.toolcall.maxTokens,
      temperature: 1,
      topP: 1,
    });
    expect(m.spec.judge).toMatchObject({ backend: 'rule', rule: 'boxed-answer', votes: 3, mode: 'prm' });
    expect(m.spec.train).toMatchObject({
      lr: 1e-5,
      clip: [0.2, 0.28],
      maxStaleness: 1,
      optimizer: { eps: 1e-8 },
    });
    expect(m.spec.env).toEqual({
      tasks: 'builtin',
      draw: 'all',
      parallel: 16,
      split: 'train',
      seed: 0,
      settings: {},
    });
    expect(m.spec.eval).toEqual({ everySteps: 20, tasks: 'builtin', split: 'heldout' });
    expect(m.spec.checkpoint).toEqual({
      dir: 'checkpoints/toolcall-grpo',
      everySteps: 100,
      keep: 3,
      resume: false,
    });
    expect(m.spec.serve).toBeUndefined();
  });

  it.each(MANIFEST_TRACKS)('fills the %s row of the per-track defaults when nothing is set', (track) => {
    const t = TRACK_DEFAULTS[track];
    const m = parseManifest(minimal(track), 'job.yaml');
    expect(m.spec.rollout).toMatchObject({
      batchSize: t.batchSize,
      samplesPerPrompt: t.samplesPerPrompt,
      maxTurns: t.maxTurns,
      maxTokens: t.maxTokens,
      temperature: t.temperature,
    });
    expect(m.spec.judge.backend).toBe(t.judgeBackend);
    expect(m.spec.judge.rule).toBe(t.judgeRule ?? undefined);
    expect(m.spec.eval.everySteps).toBe(t.evalEverySteps);
    expect(m.spec.env?.parallel).toBe(t.envParallel ?? undefined);
  });

  it('fills the per-method defaults: OPD forces an LLM judge with one vote and a lower lr', () => {
    const opd = parseManifest(minimal('toolcall', 'opd'), 'job.yaml');
    expect(opd.spec.judge).toMatchObject({ backend: 'llm', mode: 'opd', votes: 1, model: './models/tiny' });
    expect(opd.spec.judge.stepRewardCoef).toBeUndefined();
    expect(opd.spec.train.lr).toBe(1e-6);
    const personal = parseManifest(minimal('personal', 'rl'), 'job.yaml');
    expect(personal.spec.judge).toMatchObject({ backend: 'llm', mode: 'prm', votes: 3, temperature: 0.6 });
    expect(personal.spec.serve).toEqual({
      host: '127.0.0.1',
      port: 30000,
      auth: 'key',
      sessions: { idleTimeoutMs: 1_800_000, maxOpen: 10_000 },
      sideCalls: {},
    });
    // Live (no simulated user): trains until stopped; offline and env jobs default to 200 steps.
    expect(personal.spec.train.steps).toBeUndefined();
    expect(opd.spec.train.steps).toBe(200);
    const combine = parseManifest(minimal('swe', 'combine'), 'job.yaml');
    expect(combine.spec.train.combine).toEqual({ opdWeight: 1, rlWeight: 1 });
    expect(combine.spec.judge.stepRewardCoef).toBe(DEFAULT_STEP_REWARD_COEF);
    const sync = parseManifest(minimal('gui', 'rl', '  train: { async: false }\n'), 'job.yaml');
    expect(sync.spec.train.maxStaleness).toBe(0);
  });

  it('refuses a learning-rate decay without an end, and an API key env var with auth none', () => {
    expect(() =>
      parseManifest(minimal('personal', 'rl', '  train: { schedule: cosine }\n'), 'job.yaml'),
    ).toThrow(/spec\.train\.schedule.*no end for a cosine decay/s);
    expect(
      parseManifest(minimal('personal', 'rl', '  train: { schedule: cosine, steps: 10 }\n'), 'job.yaml').spec
        .train.steps,
    ).toBe(10);
    expect(() =>
      parseManifest(minimal('personal', 'rl', '  serve: { auth: none, apiKeyEnv: KEY }\n'), 'job.yaml'),
    ).toThrow(/spec\.serve\.apiKeyEnv.*auth is 'none'/s);
    expect(() =>
      parseManifest(minimal('personal', 'rl', "  serve: { sideCalls: { 'Bad-Kind': x } }\n"), 'job.yaml'),
    ).toThrow(/sideCalls/);
    expect(() =>
      parseManifest(minimal('toolcall', 'rl', '  eval: { tasks: ./other.jsonl }\n'), 'job.yaml'),
    ).toThrow(/spec\.eval\.tasks.*clawray eval/s);
    expect(() =>
      parseManifest(minimal('toolcall', 'rl', '  rollout: { temperature: 0 }\n'), 'job.yaml'),
    ).toThrow(/spec\.rollout\.temperature.*greedy/s);
  });

  it("bounds a personal turn's reward (judge.rewardRange) and honours or refuses each plugin there by name", () => {
    expect(parseManifest(minimal('personal', 'rl'), 'job.yaml').spec.judge.rewardRange).toEqual([-1, 1]);
    expect(
      parseManifest(
        minimal('personal', 'rl', '  judge: { rewardRange: [0, 10] }\n  plugins: { reward: ./r.js }\n'),
        'job.yaml',
      ).spec.judge.rewardRange,
    ).toEqual([0, 10]);
    expect(parseManifest(minimal('toolcall', 'rl'), 'job.yaml').spec.judge.rewardRange).toBeUndefined();
    expect(() =>
      parseManifest(minimal('personal', 'rl', '  judge: { rewardRange: [1, -1] }\n'), 'job.yaml'),
    ).toThrow(/spec\.judge\.rewardRange.*lowest < highest/s);
    expect(() =>
      parseManifest(minimal('personal', 'rl', '  judge: { rewardRange: [0, .inf] }\n'), 'job.yaml'),
    ).toThrow(/spec\.judge\.rewardRange/);
    expect(() =>
      parseManifest(minimal('toolcall', 'rl', '  judge: { rewardRange: [0, 1] }\n'), 'job.yaml'),
    ).toThrow(/spec\.judge\.rewardRange.*personal track/s);
    expect(() =>
      parseManifest(minimal('personal', 'opd', '  plugins: { reward: ./r.js }\n'), 'job.yaml'),
    ).toThrow(/spec\.plugins\.reward.*opd learns from the judge's hints/s);
    for (const plugin of ['rollout', 'environment']) {
      expect(() =>
        parseManifest(minimal('personal', 'rl', `  plugins: { ${plugin}: ./p.js }\n`), 'job.yaml'),
      ).toThrow(new RegExp(`spec\\.plugins\\.${plugin}.*not from an environment`, 's'));
    }
  });

  it('defaults the OPD teacher to frozen only with in-job judge engines on the policy, and refuses it elsewhere', () => {
    const inJob = parseManifest(minimal('personal', 'combine'), 'job.yaml');
    expect(inJob.spec.judge).toMatchObject({ backend: 'llm', model: './models/tiny', teacher: 'frozen' });
    const external = parseManifest(
      minimal('personal', 'opd', '  judge: { baseURL: http://127.0.0.1:9/v1, model: judge }\n'),
      'job.yaml',
    );
    expect(external.spec.judge.teacher).toBe('tracking');
    expect(() =>
      parseManifest(
        minimal(
          'personal',
          'opd',
          '  judge: { baseURL: http://127.0.0.1:9/v1, model: judge, teacher: frozen }\n',
        ),
        'job.yaml',
      ),
    ).toThrow(/spec\.judge\.teacher.*external endpoint.*Use tracking/s);
    expect(() =>
      parseManifest(minimal('toolcall', 'rl', '  judge: { teacher: tracking }\n'), 'job.yaml'),
    ).toThrow(/only opd and combine have a teacher/);
    // The reaction judge votes from the user's reactions; a frozen teacher is engines of its own.
    const user = '  user: { preference: name:Sam }\n';
    const reaction = (teacher: string) =>
      parseManifest(
        minimal('personal', 'combine', `  judge: { backend: reaction${teacher} }\n${user}`),
        'job.yaml',
      );
    expect(reaction('').spec.judge.teacher).toBe('tracking');
    expect(reaction(', teacher: frozen').spec.judge.teacher).toBe('frozen');
  });

  it('throws one ConfigError naming file:line:col, field, expectation and finding for every problem', () => {
    const text = minimal('toolcall', 'rl', '  train:\n    lr: fast\n    stesp: 10\n');
    let err: unknown;
    try {
      parseManifest(text, 'jobs/grpo.yaml');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const e = err as ConfigError;
    expect(e.message).toBe(
      [
        'invalid manifest jobs/grpo.yaml (2 problems):',
        '  jobs/grpo.yaml:9:9: spec.train.lr: expected a number > 0, got "fast"',
        '  jobs/grpo.yaml:10:5: spec.train.stesp: unknown field `stesp`; did you mean `steps`?',
      ].join('\n'),
    );
    expect(e.fields).toEqual({
      file: 'jobs/grpo.yaml',
      field: 'spec.train.lr',
      line: 9,
      col: 9,
      override: undefined,
      problems: 2,
    });
    expect(e.message).not.toMatch(/\n\s+at /);
  });

  it('points a missing field at its parent mapping and a misspelt key at the key', () => {
    expect(
      problems(minimal('toolcall', 'rl', '  judge:\n    backend: onnx-prm\n    treshold: 0.7\n')),
    ).toEqual(['job.yaml:10:5: spec.judge.treshold: unknown field `treshold`; did you mean `threshold`?']);
    expect(
      problems(minimal('toolcall', 'rl', '  judge:\n    backend: onnx-prm\n    threshold: 0.7\n')),
    ).toEqual([
      'job.yaml:9:5: spec.judge: an onnx-prm judge needs model: the directory of its ONNX classifier',
    ]);
    expect(
      problems(minimal('toolcall').replace('  model: { path: ./models/tiny }\n', '  model: {}\n')),
    ).toEqual(['job.yaml:7:10: spec.model.path: required field is missing; expected a string']);
    // Shapes first: cross-field rules run once every field has a valid type.
    expect(problems(minimal('personal', 'sft', '  train: { steps: x }\n'))).toEqual([
      'job.yaml:8:19: spec.train.steps: expected a whole number in [1, 10000000] (optimizer steps), got "x"',
    ]);
  });

  it('follows anchors and aliases, and keeps __proto__ an ordinary, unknown key', () => {
    const text = `${minimal('toolcall')}  resources:\n    rollout: &gpu { replicas: 2, gpus: 0.5 }\n    judge: *gpu\n`;
    expect(parseManifest(text, 'job.yaml').spec.resources.judge.gpus).toBe(0.5);
    const bad = `${minimal('toolcall')}  rollout:\n    __proto__: { polluted: true }\n`;
    expect(problems(bad)).toEqual([
      'job.yaml:9:5: spec.rollout.__proto__: unknown field `__proto__`; expected one of batchSize, samplesPerPrompt, maxTurns, maxTokens, temperature, topP',
    ]);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });
});

describe('--set overrides', () => {
  const base = minimal('toolcall');

  it('parse values as YAML: numbers, lists, strings', () => {
    const m = parseManifest(base, 'job.yaml', {
      set: [
        'spec.train.steps=50',
        'spec.train.clip=[0.1, 0.3]',
        'metadata.labels.team=rl',
        'spec.env.parallel=4',
      ],
    });
    expect(m.spec.train.steps).toBe(50);
    expect(m.spec.train.clip).toEqual([0.1, 0.3]);
    expect(m.metadata.labels).toEqual({ team: 'rl' });
    expect(m.spec.env?.parallel).toBe(4);
  });

  it('apply in order, reach list items by index, and null restores the default', () => {
    const text = minimal('toolcall', 'rl', '  train: { lr: 3.0e-5, clip: [0.2, 0.28] }\n');
    const m = parseManifest(text, 'job.yaml', {
      set: ['spec.train.steps=5', 'spec.train.steps=7', 'spec.train.clip.1=0.3', 'spec.train.lr=null'],
    });
    expect(m.spec.train.steps).toBe(7);
    expect(m.spec.train.clip).toEqual([0.2, 0.3]);
    expect(m.spec.train.lr).toBe(1e-5);
  });

  it('blame a problem on the override that brought it in, and the file for the rest', () => {
    expect(
      problems(minimal('toolcall', 'rl', '  rollout: { maxTurns: 8 }\n'), [
        'metadata.name=',
        'spec.rollout.maxTurns=eight',
        'spec.train..steps=1',
      ]),
    ).toEqual([
      '--set spec.train..steps=1: expected a dotted field path like spec.train.steps before "=", got "spec.train..steps"',
      '--set metadata.name=: metadata.name: expected a DNS-1123 label (lowercase letters, digits and -, at most 63 characters), got ""',
      '--set spec.rollout.maxTurns=eight: spec.rollout.maxTurns: expected a whole number in [1, 10000] (model calls in one episode), got "eight"',
    ]);
  });

  it('record where an overridden field came from', () => {
    const m = parseManifest(base, 'job.yaml', { set: ['spec.train.steps=9'] });
    expect(manifestLocation(m, ['spec', 'train', 'steps'])).toBe('--set spec.train.steps=9');
    expect(manifestLocation(m, ['spec', 'model', 'path'])).toBe('job.yaml:7:18');
    // A defaulted field points at its nearest written ancestor.
    expect(manifestLocation(m, ['spec', 'resources', 'trainer'])).toBe('job.yaml:5:3');
  });
});

describe('loadManifest', () => {
  it('reads a file, and names a missing one without a stack trace', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'clawray-manifest-'));
    const file = join(dir, 'job.yaml');
    writeFileSync(file, minimal('terminal', 'sft'));
    expect((await loadManifest(file)).spec.method).toBe('sft');
    const missing = loadManifest(join(dir, 'nope.yaml'));
    await expect(missing).rejects.toBeInstanceOf(ConfigError);
    await expect(missing).rejects.toThrow(`cannot read manifest ${join(dir, 'nope.yaml')}: no such file`);
    await expect(loadManifest(file, { set: ['spec.track=none'] })).rejects.toThrow(
      /--set spec.track=none: spec.track/,
    );
  });
});

describe('closest', () => {
  it('suggests typos, case and separator slips, and unique abbreviations; nothing far off', () => {
    const keys = ['batchSize', 'samplesPerPrompt', 'maxTurns', 'maxTokens', 'temperature', 'topP'];
    expect(closest('maxTurn', keys)).toBe('maxTurns');
    expect(closest('max_tokens', keys)).toBe('maxTokens');
    expect(closest('temprature', keys)).toBe('temperature');
    expect(closest('samples', keys)).toBe('samplesPerPrompt');
    expect(closest('top_k', keys)).toBeUndefined();
    expect(closest('trian', ['train', 'track'])).toBe('train');
  });
});
