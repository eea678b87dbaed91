/**
 * Rules that span fields, run once shapes are valid and defaults filled. Each takes the raw
 * manifest too, because some mistakes are about what the user wrote (a field that means
 * nothing for the track) rather than about the resolved value.
 */
import { METHOD_DEFAULTS } from './defaults.js';
import type { RawManifest, RLJobManifest } from './schema.js';

export interface FieldIssue {
  path: (string | number)[];
  /** A whole sentence fragment, printed after the field path. */
  message: string;
}

export function crossFieldIssues(raw: RawManifest, m: RLJobManifest): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const add = (path: (string | number)[], message: string) =>
    issues.push({ path: ['spec', ...path], message });
  const { track, method, judge, train, rollout, resources } = m.spec;
  const rawSpec = raw.spec;
  const personal = track === 'personal';

  if (personal) {
    if (method === 'sft') {
      add(['method'], 'the personal track has no oracle traces to imitate; expected rl, opd or combine');
    }
    if (rawSpec.env) {
      add(['env'], 'the personal track learns from live sessions, not an env pool; remove spec.env');
    }
    if (rawSpec.judge.rule) add(['judge', 'rule'], 'the personal track has no reference outcome for a rule');
    if (rawSpec.judge.stepRewardCoef !== undefined) {
      add(
        ['judge', 'stepRewardCoef'],
        "mixes an env track's outcome with per-turn scores; the personal track's reward is the per-turn score",
      );
    }
    if (rollout.samplesPerPrompt > 1) {
      add(
        ['rollout', 'samplesPerPrompt'],
        `a live session's turn happens once; expected 1 on the personal track, got ${rollout.samplesPerPrompt}`,
      );
    }
    if (m.spec.eval.everySteps > 0 && !rawSpec.user) {
      add(
        ['eval', 'everySteps'],
        'live sessions have no held-out requests to evaluate on; expected 0, or add spec.user (a simulated user)',
      );
    }
    if (rawSpec.train.warmup) {
      add(['train', 'warmup'], 'the personal track has no oracle traces for a warm start');
    }
    if (rawSpec.serve?.auth === 'none' && rawSpec.serve.apiKeyEnv !== undefined) {
      add(['serve', 'apiKeyEnv'], "names the key clients must send, but serve.auth is 'none'; remove one");
    }
    for (const plugin of ['rollout', 'environment'] as const) {
      if (rawSpec.plugins[plugin] !== undefined) {
        add(
          ['plugins', plugin],
          "the personal track's turns come from the sessions on its endpoint, not from an environment; remove it",
        );
      }
    }
    if (rawSpec.plugins.reward !== undefined && method === 'opd') {
      add(
        ['plugins', 'reward'],
        "opd learns from the judge's hints, not from rewards; a reward judge needs method rl or combine",
      );
    }
  } else {
    if (rawSpec.judge.rewardRange !== undefined) {
      add(
        ['judge', 'rewardRange'],
        "bounds the personal track's turn rewards and the feedback its clients give; remove it here",
      );
    }
    if (rawSpec.serve) add(['serve'], 'only the personal track serves live sessions; remove spec.serve');
    if (rawSpec.user) add(['user'], 'only the personal track has a simulated user; remove spec.user');
  }

  if (METHOD_DEFAULTS[method].needsLlmJudge && judge.backend !== 'llm' && judge.backend !== 'reaction') {
    add(
      ['judge', 'backend'],
      `method ${method} needs hindsight hints, which only an llm (or, with a simulated user, reaction) judge writes; got ${judge.backend}`,
    );
  }
  if (judge.backend === 'reaction' && !(personal && rawSpec.user)) {
    add(
      ['judge', 'backend'],
      "reaction reads a simulated user's reactions: it needs the personal track and spec.user",
    );
  }
  if (judge.backend === 'rule') {
    if (personal) {
      add(
        ['judge', 'backend'],
        'the personal track has no reference outcome to check by rule; expected llm or onnx-prm',
      );
    }
    if (rawSpec.judge.stepRewardCoef !== undefined && !personal && !rawSpec.judge.stepRule) {
      add(
        ['judge', 'stepRewardCoef'],
        'per-turn scores need a model judge (llm or onnx-prm) or a judge.stepRule, not outcome rules',
      );
    }
  }
  if (rawSpec.judge.stepRule !== undefined) {
    // Each step rule reads one track's turns (toolcall-step: tool calls and boxed answers).
    const stepTrack = rawSpec.judge.stepRule.split('-')[0];
    if (track !== stepTrack) {
      add(
        ['judge', 'stepRule'],
        `${rawSpec.judge.stepRule} scores ${stepTrack} turns; this job's track is ${track}`,
      );
    } else if (judge.backend !== 'rule') {
      add(
        ['judge', 'stepRule'],
        `a step rule scores the turns in place of a model judge; this judge is ${judge.backend}, which scores them itself`,
      );
    } else if (method !== 'rl') {
      add(['judge', 'stepRule'], `process rewards shape the RL reward; this job's method is ${method}`);
    }
  }
  if (judge.backend === 'onnx-prm' && !rawSpec.judge.model) {
    add(['judge'], 'an onnx-prm judge needs model: the directory of its ONNX classifier');
  }
  if (judge.backend === 'llm' && rawSpec.judge.baseURL && !rawSpec.judge.model) {
    add(['judge'], 'an llm judge at baseURL needs model: the model name that endpoint serves');
  }
  for (const key of ['baseURL', 'apiKeyEnv', 'temperature', 'maxTokens'] as const) {
    if (rawSpec.judge[key] !== undefined && judge.backend !== 'llm') {
      add(['judge', key], `applies to an llm judge only; this judge is ${judge.backend}`);
    }
  }
  if (rawSpec.judge.teacher !== undefined && method !== 'opd' && method !== 'combine') {
    add(['judge', 'teacher'], `only opd and combine have a teacher; this job's method is ${method}`);
  }
  if (
    rawSpec.judge.teacher === 'frozen' &&
    judge.backend !== 'reaction' &&
    !(judge.backend === 'llm' && !judge.baseURL && judge.model === m.spec.model.path)
  ) {
    add(
      ['judge', 'teacher'],
      `a frozen teacher is in-job engines serving the initial policy (judge.backend llm with no baseURL and judge.model unset, or the reaction judge); this judge is ${judge.baseURL ? 'an external endpoint' : judge.backend === 'llm' ? `the model ${judge.model}` : judge.backend}. Use tracking`,
    );
  }
  if (rawSpec.judge.threshold !== undefined && judge.backend !== 'onnx-prm') {
    add(['judge', 'threshold'], `applies to an onnx-prm judge only; this judge is ${judge.backend}`);
  }

  if (rawSpec.eval.tasks !== undefined && m.spec.env && rawSpec.eval.tasks !== m.spec.env.tasks) {
    add(
      ['eval', 'tasks'],
      `a job evaluates on its env pools, which load env.tasks (${m.spec.env.tasks}); evaluate another task file with \`clawray eval CHECKPOINT --manifest … --tasks ${rawSpec.eval.tasks}\``,
    );
  }
  if (method !== 'sft' && m.spec.rollout.temperature === 0) {
    add(
      ['rollout', 'temperature'],
      'greedy rollouts (temperature 0) are no samples of the policy: PPO has no probability to correct with, so nothing would train; expected > 0',
    );
  }
  const [low, high] = train.clip;
  if (low > high) add(['train', 'clip'], `expected [low, high] with low ≤ high, got [${low}, ${high}]`);
  if (train.minLr > train.lr) {
    add(['train', 'minLr'], `expected at most train.lr (${train.lr}), got ${train.minLr}`);
  }
  const warmup = train.warmup;
  if (warmup && warmup.minLr > warmup.lr) {
    add(['train', 'warmup', 'minLr'], `expected at most train.warmup.lr (${warmup.lr}), got ${warmup.minLr}`);
  }
  if (train.steps === undefined) {
    if (train.schedule !== 'constant') {
      add(
        ['train', 'schedule'],
        `a live job without train.steps has no end for a ${train.schedule} decay to reach; expected constant, or set train.steps`,
      );
    }
  } else if (train.lrWarmupSteps > train.steps) {
    add(
      ['train', 'lrWarmupSteps'],
      `expected at most train.steps (${train.steps}), got ${train.lrWarmupSteps}`,
    );
  }
  if (!train.async && train.maxStaleness > 0) {
    add(
      ['train', 'maxStaleness'],
      `synchronous training (async: false) has no stale samples; expected 0, got ${train.maxStaleness}`,
    );
  }
  // Rollouts for step s wait until the engines serve step s − maxStaleness; with weights
  // published every N steps they serve ⌊s/N⌋·N, so a smaller bound stalls every N-th step
  // (and, with samples measured against it, would drop every group).
  if (method !== 'sft' && train.updateWeightsEvery > 1 && train.maxStaleness < train.updateWeightsEvery - 1) {
    add(
      ['train', 'maxStaleness'],
      `with updateWeightsEvery ${train.updateWeightsEvery} the engines lag up to ${train.updateWeightsEvery - 1} versions behind; expected at least ${train.updateWeightsEvery - 1}${train.async ? '' : ' (synchronous training needs updateWeightsEvery 1)'}, got ${train.maxStaleness}`,
    );
  }
  if (rawSpec.train.combine && method !== 'combine') {
    add(['train', 'combine'], `weights the advantages of method combine; this job's method is ${method}`);
  }
  if (train.distillTopK !== undefined && method !== 'opd' && method !== 'combine') {
    add(
      ['train', 'distillTopK'],
      `distills from a teacher, which only opd and combine have; this job's method is ${method}`,
    );
  }
  if (rawSpec.train.distillDirection !== undefined && train.distillTopK === undefined) {
    add(
      ['train', 'distillDirection'],
      'chooses the KL of top-K distillation; set train.distillTopK (e.g. 16) too',
    );
  }
  if (rawSpec.train.distillOn !== undefined && train.distillTopK === undefined) {
    add(['train', 'distillOn'], "distils along the teacher's top-K; set train.distillTopK (e.g. 16) too");
  }
  if (rawSpec.train.hintSelect !== undefined && method !== 'opd' && method !== 'combine') {
    add(
      ['train', 'hintSelect'],
      `chooses among OPD hints, which only opd and combine have; this job's method is ${method}`,
    );
  } else if (train.hintSelect === 'topk-overlap' && train.distillTopK === undefined) {
    add(['train', 'hintSelect'], 'topk-overlap compares top-K sets; set train.distillTopK (e.g. 50) too');
  }
  if (rawSpec.env?.draw === 'without-oracle' && method === 'sft') {
    add(['env', 'draw'], 'method sft plays no episodes; it trains on the oracle traces');
  }
  if (train.warmup && method === 'sft') {
    add(['train', 'warmup'], 'method sft already trains on the oracle traces; set train.steps instead');
  }

  const samples = rollout.batchSize * rollout.samplesPerPrompt;
  if (method !== 'sft' && samples < resources.trainer.shards) {
    add(
      ['resources', 'trainer', 'shards'],
      `${resources.trainer.shards} shards cannot share ${samples} sample${samples === 1 ? '' : 's'} per step (rollout.batchSize × rollout.samplesPerPrompt); expected at most ${samples}`,
    );
  }
  return issues;
}
