import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../common/errors.js';
import type { JobView } from '../jobs/supervisor/jobs-client.js';
import { LineSplitter, parseStepLine } from './progress.js';
import {
  manifestInWorkingDir,
  parseSummaryLine,
  rljobEntrypoint,
  rljobSummaryLine,
  shellWord,
} from './rljob-submit.js';

describe('job submit MANIFEST: the entrypoint it submits', () => {
  it('execs clawray rljob run with the overrides and --resume, quoted for /bin/sh', () => {
    expect(rljobEntrypoint('job.yaml', { set: [] })).toBe('exec clawray rljob run job.yaml');
    const entrypoint = rljobEntrypoint('jobs/my job.yaml', {
      set: ['spec.train.steps=3', "spec.env.settings.systemPrompt=Use the calculator, it's there"],
      resume: true,
      resumeFrom: 'job-1/step-4',
    });
    expect(entrypoint).toBe(
      `exec clawray rljob run 'jobs/my job.yaml' --set spec.train.steps=3 --set 'spec.env.settings.systemPrompt=Use the calculator, it'\\''s there' --resume job-1/step-4`,
    );
    // The shell hands the driver exactly the words it was given.
    const argv = spawnSync('/bin/sh', ['-c', entrypoint.replace(/^exec clawray/, 'printf "%s\\n"')], {
      encoding: 'utf8',
    }).stdout;
    expect(argv.split('\n').slice(0, -1)).toEqual([
      'rljob',
      'run',
      'jobs/my job.yaml',
      '--set',
      'spec.train.steps=3',
      '--set',
      "spec.env.settings.systemPrompt=Use the calculator, it's there",
      '--resume',
      'job-1/step-4',
    ]);
    expect(rljobEntrypoint('job.yaml', { set: [], resume: true })).toBe(
      'exec clawray rljob run job.yaml --resume',
    );
    expect(shellWord('$HOME')).toBe("'$HOME'");
  });

  it('names the manifest by its path inside the working dir, and refuses one outside it', () => {
    expect(manifestInWorkingDir('/a/b/job.yaml', '/a/b')).toBe('job.yaml');
    expect(manifestInWorkingDir('/a/b/jobs/job.yaml', '/a/b/')).toBe('jobs/job.yaml');
    expect(() => manifestInWorkingDir('/a/job.yaml', '/a/b')).toThrow(ConfigError);
    expect(() => manifestInWorkingDir('/a/job.yaml', '/a/b')).toThrow(/not inside the working dir \/a\/b/);
  });
});

describe("job submit MANIFEST: reading the driver's log", () => {
  it('parses step lines (with or without a time stamp) for the live line', () => {
    expect(parseStepLine('step 3/20: reward 0.500 held-out 0.25')).toEqual({
      step: 3,
      total: 20,
      label: 'reward 0.500 held-out 0.25',
    });
    expect(parseStepLine('12:01:02 step 1/2: reward 1')).toMatchObject({ step: 1, total: 2 });
    expect(parseStepLine('[2025-01-01T12:01:02Z] step 2/2: x')).toMatchObject({ step: 2, label: 'x' });
    expect(parseStepLine('warmup step 1 of 2')).toBeUndefined();
    expect(parseStepLine('the step 1/2: a')).toBeUndefined();
  });

  it('splits pieces of the stream into lines', () => {
    const lines: string[] = [];
    const splitter = new LineSplitter((l) => lines.push(l));
    splitter.push('step 1/2: a\nst');
    splitter.push('ep 2/2: b\r\nsumm');
    splitter.push('ary {}');
    splitter.end();
    expect(lines).toEqual(['step 1/2: a', 'step 2/2: b', 'summary {}']);
  });

  it('builds the --json line from the job and the summary line, trajectories included', () => {
    const summary = parseSummaryLine(
      'summary {"job":"tc","track":"toolcall","method":"rl","status":"completed","steps":3,"skippedSteps":1,"metric":"success","heldout":{"start":0.1,"afterWarmup":0.3,"end":0.5},"samplesPerSecond":2,"trainerIdleRatio":0.1,"rolloutIdleRatio":0.2,"elapsedSeconds":30,"resumedFromStep":null,"trajectories":{"produced":12,"judged":12,"trained":12,"dropped":{"stale":0},"lost":0,"duplicated":0},"recoveries":{"engines":1,"trainers":0},"runtime":{"rollout":["onnxruntime/cpu"],"trainer":["tfjs/wasm"]},"mismatch":2e-7,"policyLag":0.03,"policyLagVersions":1}',
    );
    expect(parseSummaryLine('12:00:01 summary {"steps":1}')).toEqual({ steps: 1 });
    expect(parseSummaryLine('summary {not json')).toBeUndefined();
    expect(parseSummaryLine('the summary {"a":1}')).toBeUndefined();
    const job = { submissionId: 'rl-1', status: 'SUCCEEDED', message: 'ok', attempt: 1 } as JobView;
    expect(JSON.parse(rljobSummaryLine(job, summary!))).toEqual({
      submissionId: 'rl-1',
      status: 'SUCCEEDED',
      message: 'ok',
      error: null,
      attempt: 1,
      job: 'tc',
      track: 'toolcall',
      method: 'rl',
      steps: 3,
      skippedSteps: 1,
      warmupSteps: 0,
      metric: 'success',
      heldoutStart: 0.1,
      heldoutAfterWarmup: 0.3,
      heldoutEnd: 0.5,
      samplesPerSecond: 2,
      trainerIdleRatio: 0.1,
      rolloutIdleRatio: 0.2,
      elapsedSeconds: 30,
      resumedFromStep: null,
      trajectories: { produced: 12, judged: 12, trained: 12, dropped: { stale: 0 }, lost: 0, duplicated: 0 },
      recoveries: { engines: 1, trainers: 0 },
      runtime: { rollout: ['onnxruntime/cpu'], trainer: ['tfjs/wasm'] },
      mismatch: 2e-7,
      policyLag: 0.03,
      policyLagVersions: 1,
      checkpoint: null,
      curves: null,
      logFile: null,
    });
    // The newest checkpoint and the kept log, when the driver and `submit` name them.
    const named = {
      warmupSteps: 500,
      checkpoint: { path: '/c/rl-1/step-560', step: 60, trainerStep: 560 },
      curves: {
        heldout: [{ step: 0, value: 0.1, phase: 'start' as const }],
        reward: [{ step: 1, mean: 0.25 }],
        svg: '/c/rl-1/learning-curves.svg',
      },
      logFile: '/h/logs/rljobs/rl-1.log',
    };
    expect(JSON.parse(rljobSummaryLine(job, { ...summary!, ...named }))).toMatchObject(named);
    expect(JSON.parse(rljobSummaryLine(job, null))).toMatchObject({
      steps: 0,
      skippedSteps: 0,
      trajectories: null,
      recoveries: null,
      runtime: null,
      mismatch: null,
      policyLag: null,
      policyLagVersions: null,
    });
  });
});
