/**
 * In-process fakes for the RL loops' and the driver phases' unit tests: judged records of whole
 * groups, a trainer that counts versions (and one with a trainer group's surface), a spec from a
 * few manifest lines and a job context over it. The buffers in those tests are the real
 * in-memory implementation.
 */
import { Registry } from 'prom-client';
import type { PublishedWeights } from '../../actors/trainer/weight-publisher.js';
import { RECORD_SCHEMA_VERSION, type TrajectoryRecord } from '../buffer/types.js';
import { parseManifest } from '../manifest/load.js';
import type { RLJobSpec } from '../manifest/schema.js';
import { jobContext } from './job-context.js';
import { JobMetrics } from './job-metrics.js';
import type { GroupStepResult } from './trainer-group.js';

/** One group of `size` single-turn episodes with the given rewards, as judged records (T 1). */
export function judgedGroup(
  group: number,
  rewards: number[],
  o: { weightVersion?: number; prefix?: string } = {},
): TrajectoryRecord[] {
  return rewards.map((reward, i) => {
    const episode = `${o.prefix ?? 'job'}-g${group}-e${i}`;
    return {
      schemaVersion: RECORD_SCHEMA_VERSION,
      trajectoryId: `${episode}-t0`,
      sessionId: episode,
      turn: 0,
      messages: [{ role: 'user', content: `task ${group}` }],
      promptTokenIds: [1, 2, 3],
      tokenIds: [4, 5],
      logprobs: [-0.5, -0.7],
      nextState: null,
      votes: [],
      score: reward,
      hint: null,
      weightVersion: o.weightVersion ?? 0,
      createdAtMs: 0,
      responseText: 'an answer',
      sampling: { temperature: 1, topP: 1, topK: 0, seed: i },
      group: { id: `g${group}`, size: rewards.length, index: i },
      episode: { id: episode, turns: 1, finalMessages: null },
      task: { id: `task-${group}`, reference: { reward } },
      requestId: null,
      judgement: { reward, step: null, feedback: null, atLeastOne: false },
      teacher: null,
    };
  });
}

/** A live turn as personal-source.ts records it (its own group of one, not judged yet), at `temperature`. */
export function liveRecord(
  id: string,
  temperature: number,
  overrides: Partial<TrajectoryRecord> = {},
): TrajectoryRecord {
  return {
    schemaVersion: RECORD_SCHEMA_VERSION,
    trajectoryId: id,
    sessionId: id,
    turn: 0,
    messages: [],
    promptTokenIds: [1, 2],
    tokenIds: [3, 4],
    logprobs: [-1, -1],
    nextState: null,
    votes: [],
    score: null,
    hint: null,
    weightVersion: 0,
    createdAtMs: 0,
    responseText: 'x',
    sampling: { temperature, topP: 1, topK: 0, seed: 1 },
    group: { id, size: 1, index: 0 },
    episode: { id, turns: 1, finalMessages: null },
    task: null,
    requestId: `chatcmpl-${id}`,
    judgement: null,
    teacher: null,
    ...overrides,
  };
}

export class FakeTrainer {
  version = 0;
  readonly batches: number[] = [];

  constructor(
    private readonly failOn?: (step: number) => Error | undefined,
    /** Steps (by the version they would make) whose loss is not finite: skipped, as the real trainer does. */
    private readonly nonFiniteOn?: (step: number) => boolean,
  ) {}

  async step(samples: unknown[]): Promise<GroupStepResult> {
    const err = this.failOn?.(this.version + 1);
    if (err) throw err;
    this.batches.push(samples.length);
    const drift = { mismatch: 0, policyLag: null, policyLagVersions: null };
    if (this.nonFiniteOn?.(this.version + 1)) return { skipped: true, loss: Number.NaN, ...drift };
    this.version++;
    return { skipped: false, loss: 0.5, ...drift };
  }
}

/** A FakeTrainer with the rest of a TrainerGroup's surface, recording what the phases asked of it. */
export class FakeTrainerGroup extends FakeTrainer {
  recoveries = 0;
  /** Each step's learning rate (undefined: the trainer's schedule). */
  readonly lrs: (number | undefined)[] = [];
  /** 'reset', 'save <version>', 'resume <step>' in call order. */
  readonly calls: string[] = [];

  override async step(samples: unknown[], options?: { lr?: number }): Promise<GroupStepResult> {
    this.lrs.push(options?.lr);
    return super.step(samples);
  }

  async resetOptimizer(): Promise<void> {
    this.calls.push('reset');
  }

  async readWeights(): Promise<PublishedWeights> {
    return new Map([['w', new Float32Array([this.version])]]);
  }

  async saveCheckpoint(): Promise<string> {
    this.calls.push(`save ${this.version}`);
    return `/ckpt/step-${this.version}`;
  }

  async resume(step?: number): Promise<number> {
    this.calls.push(`resume ${step}`);
    this.version = step ?? this.version;
    return this.version;
  }
}

/** A job's spec from the lines under `spec:` after track, method and model (YAML flow maps). */
export function testSpec(lines: string, o: { track?: string; method?: string } = {}): RLJobSpec {
  return parseManifest(
    `apiVersion: clawray.dev/v1\nkind: RLJob\nmetadata: { name: m }\nspec:\n  track: ${o.track ?? 'toolcall'}\n  method: ${o.method ?? 'rl'}\n  model: { path: ./m }\n${lines}`,
    'job.yaml',
  ).spec;
}

/** A job context over `spec` whose log is `lines`, with metrics of its own and a clock the test moves. */
export function testContext(spec: RLJobSpec) {
  const lines: string[] = [];
  const clock = { ms: 0 };
  const registry = new Registry();
  const ctx = jobContext({
    spec,
    job: 'm',
    submissionId: 'm-1',
    log: (line) => lines.push(line),
    metrics: new JobMetrics(registry),
    now: () => clock.ms,
  });
  return { ctx, lines, clock, registry };
}
