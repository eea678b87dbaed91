/**
 * The RL job driver: creates the job's actors and runs the four loops of DESIGN §4 —
 * rollout (env pools + rollout engines, or the OpenAI endpoint for the personal track) →
 * rollout stream → judging → judged stream → training on the trainer shards → weights back to
 * the rollout engines. The loops run concurrently; a staleness gate bounds how far rollouts
 * run ahead of the policy (`train.async: false` is the same job with no overlap).
 *
 * It runs inside the job's supervisor actor, which reports its progress and stops it
 * gracefully (the current step finishes and is checkpointed).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import type { Registry } from 'prom-client';
import { actionToMessage, type ChatMessage } from '../../actors/envs/environment.js';
import { ReactionJudge } from '../../actors/envs/personal/reaction-judge.js';
import type { TrackTask } from '../../actors/envs/track.js';
import { fnv1a } from '../../actors/envs/track.js';
import { loadTasks, loadTrack } from '../../actors/envs/tracks.js';
import { JudgePanel, type VoterRef } from '../../actors/judge/judge-panel.js';
import type { ChatMessage as TemplateMessage } from '../../actors/models/chat-template.js';
import type { Cluster } from '../../actors/runtime/cluster.js';
import type { TrainSample } from '../../actors/trainer/policy-trainer.js';
import { WeightPublisher } from '../../actors/trainer/weight-publisher.js';
import { ConfigError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { loadPluginFunction, pluginLocation } from '../../common/plugin-module.js';
import { MemoryTrajectoryBuffer } from '../buffer/memory-buffer.js';
import type { TrajectoryBuffer, TrajectoryRecord } from '../buffer/types.js';
import type { RLJobManifest } from '../manifest/schema.js';
import { type ActorSet, createActorSet } from './actor-set.js';
import { buildSamples, GroupAssembler, groupKey, shardSamples } from './batches.js';
import { ChatCodec } from './chat-codec.js';
import { EpisodeQueue } from './episode-queue.js';
import { type Episode, playEpisode, type RolloutFunction } from './episodes.js';
import { type EvalResult, evaluateEnv, evaluatePersonal } from './evaluation.js';
import { JobMetrics } from './job-metrics.js';
import { judgeEpisode } from './judging.js';
import { prepareModelDir } from './model-source.js';
import { PersonalSource, runSimulatedUsers } from './personal-source.js';
import { RemoteChatModel } from './remote-chat-model.js';
import { StalenessGate } from './staleness-gate.js';

export interface PipelineOptions {
  cluster: Cluster;
  manifest: RLJobManifest;
  /** Where the manifest's relative paths (model, tasks, plugins) resolve. */
  workingDir: string;
  /** The cluster's data dir: relative checkpoint dirs and initialised models live here. */
  dataDir: string;
  /** The submission id: names placement groups and the collective group. */
  jobId: string;
  logger: Logger;
  /** One human-readable line per event (the job's log). */
  log(line: string): void;
  registry?: Registry;
}

export type PipelinePhase = 'starting' | 'warmup' | 'training' | 'evaluating' | 'stopping' | 'done';

export interface PipelineProgress {
  phase: PipelinePhase;
  step: number;
  totalSteps: number;
  warmupStep: number;
  warmupSteps: number;
  rewardMean: number | null;
  successRate: number | null;
  heldoutSuccess: number | null;
  samplesPerSecond: number;
  staleness: number | null;
  trainerIdleRatio: number;
  rolloutIdleRatio: number;
  etaSeconds: number | null;
}

export interface StepRecord {
  step: number;
  rewardMean: number;
  successRate: number;
  staleness: number;
  episodes: number;
  samples: number;
  loss: number;
  seconds: number;
}

export interface EvalRecord extends EvalResult {
  step: number;
}

export interface PipelineSummary {
  job: string;
  track: string;
  method: string;
  status: 'completed' | 'stopped';
  steps: number;
  /** What `heldout` measures: solved share of held-out tasks, or the simulated user's preference score. */
  metric: 'heldout_success' | 'preference_score';
  heldout: { start: number | null; end: number | null };
  samplesPerSecond: number;
  trainerIdleRatio: number;
  rolloutIdleRatio: number;
  elapsedSeconds: number;
  resumedFromStep: number | null;
  checkpointDir: string;
  evals: EvalRecord[];
  history: StepRecord[];
}

interface DriverState {
  step: number;
  warmupDone: number;
  evals: EvalRecord[];
  history: StepRecord[];
}

const STATE_FILE = 'driver-state.json';

/** A seeded order of `items` (Fisher–Yates over an LCG), so runs and resumes repeat. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let s = seed >>> 0 || 1;
  for (let i = out.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

export class RLPipeline {
  private readonly spec: RLJobManifest['spec'];
  private readonly job: string;
  private readonly metrics: JobMetrics;
  private stopRequested = false;
  private phase: PipelinePhase = 'starting';
  private step = 0;
  private warmupDone = 0;
  private version = 0;
  private readonly history: StepRecord[] = [];
  private readonly evals: EvalRecord[] = [];
  private startedAt = performance.now();
  private rlStartedAt = 0;
  private samplesTrained = 0;
  private trainerWaitMs = 0;
  private gate?: StalenessGate;
  private rolloutSlots = 1;
  private failure?: Error;
  private readonly checkpointDir: string;

  constructor(private readonly o: PipelineOptions) {
    this.spec = o.manifest.spec;
    this.job = o.manifest.metadata.name;
    this.metrics = new JobMetrics(o.registry);
    const dir = this.spec.checkpoint.dir;
    this.checkpointDir = isAbsolute(dir) ? dir : resolve(o.dataDir, dir);
  }

  /** Finish the step in progress, checkpoint, and end. */
  requestStop(): void {
    if (this.stopRequested) return;
    this.stopRequested = true;
    this.phase = 'stopping';
    this.gate?.close();
    this.o.log('stop requested: finishing the current step');
  }

  progress(): PipelineProgress {
    const last = this.history.at(-1);
    const elapsed = (performance.now() - this.startedAt) / 1000;
    const rlElapsed = this.rlStartedAt ? (performance.now() - this.rlStartedAt) / 1000 : 0;
    const stepsLeft = this.spec.train.steps - this.step;
    const perStep = this.history.length ? rlElapsed / Math.max(1, this.history.length) : null;
    return {
      phase: this.phase,
      step: this.step,
      totalSteps: this.spec.train.steps,
      warmupStep: this.warmupDone,
      warmupSteps: this.warmupSteps(),
      rewardMean: last?.rewardMean ?? null,
      successRate: last?.successRate ?? null,
      heldoutSuccess: this.evals.at(-1)?.success ?? null,
      samplesPerSecond: rlElapsed > 0 ? this.samplesTrained / rlElapsed : 0,
      staleness: last?.staleness ?? null,
      trainerIdleRatio: elapsed > 0 ? Math.min(1, this.trainerWaitMs / 1000 / Math.max(rlElapsed, 1e-9)) : 0,
      rolloutIdleRatio: this.rolloutIdle(rlElapsed),
      etaSeconds: perStep === null ? null : Math.max(0, stepsLeft * perStep),
    };
  }

  private rolloutIdle(rlElapsed: number): number {
    if (!this.gate || rlElapsed <= 0) return 0;
    return Math.min(1, this.gate.waitedMs / 1000 / (rlElapsed * this.rolloutSlots));
  }

  private warmupSteps(): number {
    return this.spec.method === 'sft' ? 0 : (this.spec.train.warmup?.steps ?? 0);
  }

  async run(): Promise<PipelineSummary> {
    const { spec, o } = this;
    mkdirSync(this.checkpointDir, { recursive: true });
    const modelDir = prepareModelDir(spec.model, o.workingDir, o.dataDir);
    const codec = new ChatCodec(modelDir);
    // Plugins that run in other actors travel as absolute paths (same path on every node).
    const plugin = (p?: string) => {
      if (!p) return undefined;
      const { path, exportName } = pluginLocation(p, o.workingDir);
      return `${path}#${exportName}`;
    };
    const tasksPath = spec.env
      ? spec.env.tasks === 'builtin'
        ? 'builtin'
        : resolve(o.workingDir, spec.env.tasks)
      : 'builtin';
    o.log(`job ${this.job}: ${spec.track} / ${spec.method}, model ${modelDir}`);
    const actors = await createActorSet(
      o.cluster,
      o.manifest,
      {
        modelDir,
        tasks: tasksPath,
        checkpointDir: this.checkpointDir,
        environmentModule: plugin(spec.plugins.environment),
        lossModule: plugin(spec.plugins.loss),
      },
      o.jobId,
    );
    o.log(
      `actors ready: ${actors.engines.length} rollout engine(s), ${actors.trainers.length} trainer shard(s), ${actors.pools.length} env pool(s), ${actors.voters.length} judge voter(s)`,
    );
    const rolloutFn = spec.plugins.rollout
      ? await loadPluginFunction<RolloutFunction>(spec.plugins.rollout, o.workingDir, 'rollout')
      : undefined;
    const rewardFn = spec.plugins.reward
      ? await loadPluginFunction<(input: RewardInput) => number | Promise<number>>(
          spec.plugins.reward,
          o.workingDir,
          'reward',
        )
      : undefined;
    const publisher = new WeightPublisher(actors.engines);
    const rollouts = new MemoryTrajectoryBuffer({ name: `${this.job}-rollouts` });
    const judged = new MemoryTrajectoryBuffer({ name: `${this.job}-judged` });
    let personal: PersonalSource | undefined;
    try {
      const resumed = await this.resume(actors, publisher);
      const track = spec.env ? await loadTrack(spec.track) : undefined;
      const tasks = track ? await loadTasks(track, tasksPath) : [];
      const trainTasks = shuffled(
        tasks.filter((t) => spec.env!.split === 'all' || t.split === spec.env!.split),
        spec.env?.seed ?? 0,
      );
      if (spec.env && trainTasks.length === 0) {
        throw new ConfigError(`spec.env: no tasks in split '${spec.env.split}' of ${tasksPath}`);
      }
      const evalTaskIds = tasks
        .filter((t) => spec.eval.split === 'all' || t.split === spec.eval.split)
        .map((t) => t.id);

      const remote = new RemoteChatModel(spec.model.name ?? 'policy', codec, actors.engines);
      const evaluate = async (): Promise<EvalResult | undefined> => {
        if (spec.track === 'personal') {
          if (!spec.user) return undefined;
          return evaluatePersonal({
            user: spec.user,
            maxTokens: spec.rollout.maxTokens,
            reply: async (messages, maxTokens) => {
              const r = await remote.generate({
                promptTokenIds: codec.encodeChat(messages),
                maxTokens,
                temperature: 0,
              });
              return r.text ?? codec.decode(r.tokenIds);
            },
          });
        }
        if (evalTaskIds.length === 0) return undefined;
        return evaluateEnv({
          pools: actors.pools,
          engines: actors.engines,
          taskIds: evalTaskIds,
          parallel: spec.env!.parallel * actors.pools.length,
          maxTurns: spec.rollout.maxTurns,
          maxTokens: spec.rollout.maxTokens,
          rollout: rolloutFn,
        });
      };
      const runEval = async () => {
        if (this.stopRequested) return;
        const previous = this.phase;
        this.phase = 'evaluating';
        const r = await evaluate();
        this.phase = previous;
        if (!r) return;
        this.evals.push({ step: this.step, ...r });
        this.metrics.success.set({ job: this.job, split: 'heldout' }, r.success);
        o.log(
          `eval step ${this.step}: held-out ${spec.track === 'personal' ? 'preference score' : 'success'} ${r.success.toFixed(3)} (${r.episodes} ${spec.track === 'personal' ? 'sessions' : 'tasks'}, mean reward ${r.rewardMean.toFixed(3)}, ${r.seconds.toFixed(1)} s)`,
        );
        if (r.sample) o.log(`eval sample: ${r.sample}`);
      };

      this.startedAt = performance.now();
      // everySteps 0 means no evaluation at all, not even the start and end points.
      const evaluates = spec.eval.everySteps > 0;
      if (evaluates && this.evals.length === 0) await runEval();

      // Warm start (or the whole job, for method sft): SFT on the oracle traces.
      const sftSteps = spec.method === 'sft' ? spec.train.steps : this.warmupSteps();
      const sftDone = spec.method === 'sft' ? this.step : this.warmupDone;
      if (sftSteps > sftDone && !this.stopRequested) {
        const traces = await this.oracleSamples(actors, codec, trainTasks);
        await this.runSft(actors, publisher, traces, sftDone, sftSteps, runEval);
      }

      if (spec.method !== 'sft' && this.step < spec.train.steps && !this.stopRequested) {
        this.phase = 'training';
        await this.runRl({
          actors,
          publisher,
          codec,
          rollouts,
          judged,
          trainTasks,
          rolloutFn,
          rewardFn,
          runEval,
          remote,
          startPersonal: async () => {
            personal = await PersonalSource.start({
              model: remote,
              buffer: rollouts,
              host: spec.serve!.host,
              port: spec.serve!.port,
              token: spec.serve!.apiKeyEnv ? process.env[spec.serve!.apiKeyEnv] : undefined,
              logger: o.logger,
            });
            o.log(`serving the policy for live sessions on ${personal.url}/v1`);
            return personal;
          },
        });
      }
      const lastEval = this.evals.at(-1);
      if (evaluates && !this.stopRequested && (!lastEval || lastEval.step !== this.step)) await runEval();
      await this.checkpoint(actors);
      this.phase = 'done';
      const p = this.progress();
      return {
        job: this.job,
        track: spec.track,
        method: spec.method,
        status: this.stopRequested ? 'stopped' : 'completed',
        steps: this.step,
        metric: spec.track === 'personal' ? 'preference_score' : 'heldout_success',
        heldout: { start: this.evals[0]?.success ?? null, end: this.evals.at(-1)?.success ?? null },
        samplesPerSecond: p.samplesPerSecond,
        trainerIdleRatio: p.trainerIdleRatio,
        rolloutIdleRatio: p.rolloutIdleRatio,
        elapsedSeconds: (performance.now() - this.startedAt) / 1000,
        resumedFromStep: resumed,
        checkpointDir: this.checkpointDir,
        evals: this.evals,
        history: this.history,
      };
    } finally {
      this.gate?.close();
      await personal?.close().catch(() => {});
      await Promise.allSettled([rollouts.close(), judged.close()]);
      await actors.close();
    }
  }

  /** Restores shards, engines and the driver's own state from the newest checkpoint. */
  private async resume(actors: ActorSet, publisher: WeightPublisher): Promise<number | null> {
    const file = join(this.checkpointDir, STATE_FILE);
    if (!this.spec.checkpoint.resume) return null;
    if (!existsSync(file)) {
      this.o.log(`no checkpoint in ${this.checkpointDir}; starting from scratch`);
      return null;
    }
    const state = JSON.parse(readFileSync(file, 'utf8')) as DriverState;
    const steps = await Promise.all(actors.trainers.map((t) => t.call('resume')));
    this.step = state.step;
    this.warmupDone = state.warmupDone;
    this.history.push(...state.history);
    this.evals.push(...state.evals);
    this.version = steps[0];
    await publisher.publish(
      this.version,
      new Map(Object.entries(await actors.trainers[0].call('readWeights'))),
    );
    this.o.log(`resumed from ${this.checkpointDir} at step ${this.step} (optimizer step ${this.version})`);
    return this.step;
  }

  private async checkpoint(actors: ActorSet): Promise<void> {
    const path = await actors.trainers[0].call('saveCheckpoint', { dataCursor: this.step });
    const state: DriverState = {
      step: this.step,
      warmupDone: this.warmupDone,
      evals: this.evals,
      history: this.history,
    };
    writeFileSync(join(this.checkpointDir, STATE_FILE), JSON.stringify(state));
    this.o.log(`checkpoint at step ${this.step}: ${path}`);
  }

  private maybeCheckpoint(actors: ActorSet): Promise<void> {
    const every = this.spec.checkpoint.everySteps;
    return every > 0 && this.step % every === 0 ? this.checkpoint(actors) : Promise.resolve();
  }

  /** One optimizer step over all shards; returns the mean loss. */
  private async trainStep(
    actors: ActorSet,
    samples: TrainSample[],
    method: 'rl' | 'sft',
    lr?: number,
  ): Promise<number> {
    const globalTokens = samples.reduce((n, s) => n + s.tokenIds.length - s.responseStart, 0);
    const parts = shardSamples(samples, actors.trainers.length);
    // Every rank joins the all-reduce; a rank without samples adds a zero-gradient one.
    const filler = samples[0];
    const metrics = await Promise.all(
      actors.trainers.map((t, i) =>
        t.call(
          'trainStep',
          parts[i].length > 0
            ? parts[i]
            : [{ ...filler, advantages: 0, oldLogprobs: filler.oldLogprobs ?? [] }],
          { globalTokens, method, lr },
        ),
      ),
    );
    this.version = metrics[0].step;
    return metrics.reduce((s, m) => s + m.loss, 0);
  }

  private async publish(actors: ActorSet, publisher: WeightPublisher, force = false): Promise<void> {
    if (!force && this.version % this.spec.train.updateWeightsEvery !== 0) return;
    const weights = await actors.trainers[0].call('readWeights');
    await publisher.publish(this.version, new Map(Object.entries(weights)));
  }

  /** One SFT sample per oracle turn of every training task that has an oracle. */
  private async oracleSamples(
    actors: ActorSet,
    codec: ChatCodec,
    tasks: TrackTask[],
  ): Promise<TrainSample[]> {
    const withOracle = tasks.filter((t) => t.oracle.length > 0);
    if (withOracle.length === 0 || actors.pools.length === 0) {
      throw new ConfigError(
        `${this.spec.method === 'sft' ? 'spec.method sft' : 'spec.train.warmup'}: none of the training tasks has an oracle trace to imitate`,
      );
    }
    const pool = actors.pools[0];
    const samples: TrainSample[] = [];
    for (const task of withOracle) {
      const lease = await pool.call('allocate', `oracle-${task.id}`);
      try {
        let obs = await pool.call('reset', lease.leaseId, task.id);
        for (const action of task.oracle) {
          const messages = obs.messages as unknown as TemplateMessage[];
          const prompt = codec.encodeChat(messages, obs.tools);
          const response = codec.encodeReply(messages, obs.tools, actionToMessage(action) as TemplateMessage);
          if (prompt.length + response.length <= codec.maxContext)
            samples.push({ tokenIds: [...prompt, ...response], responseStart: prompt.length });
          const r = await pool.call('step', lease.leaseId, action);
          if (r.done) break;
          obs = r.observation;
        }
      } finally {
        await pool.call('release', lease.leaseId).catch(() => {});
      }
    }
    this.o.log(`oracle traces: ${samples.length} samples from ${withOracle.length} tasks`);
    return shuffled(samples, this.spec.train.seed + 1);
  }

  private async runSft(
    actors: ActorSet,
    publisher: WeightPublisher,
    traces: TrainSample[],
    done: number,
    total: number,
    runEval: () => Promise<void>,
  ): Promise<void> {
    const sft = this.spec.method === 'sft';
    this.phase = sft ? 'training' : 'warmup';
    this.rlStartedAt = performance.now();
    const size = Math.min(traces.length, this.spec.rollout.batchSize * this.spec.rollout.samplesPerPrompt);
    for (let s = done; s < total && !this.stopRequested; s++) {
      const started = performance.now();
      const batch = Array.from({ length: size }, (_, k) => traces[(s * size + k) % traces.length]);
      const loss = await this.trainStep(actors, batch, 'sft', sft ? undefined : this.spec.train.warmup?.lr);
      if (sft) {
        this.step = s + 1;
        this.samplesTrained += batch.length;
        this.history.push({
          step: this.step,
          rewardMean: 0,
          successRate: 0,
          staleness: 0,
          episodes: 0,
          samples: batch.length,
          loss,
          seconds: (performance.now() - started) / 1000,
        });
        this.metrics.steps.inc({ job: this.job });
        this.metrics.samples.inc({ job: this.job }, batch.length);
      } else {
        this.warmupDone = s + 1;
      }
      this.o.log(`${sft ? 'step' : 'warmup step'} ${s + 1}/${total}: sft loss ${loss.toFixed(4)}`);
      const evalEvery = this.spec.eval.everySteps;
      const last = s + 1 === total;
      // SFT needs no rollouts, so the engines get the weights only when something reads them.
      const evalDue = sft && evalEvery > 0 && (this.step % evalEvery === 0 || last);
      if (evalDue || last) await this.publish(actors, publisher, true);
      if (evalDue) await runEval();
      if (sft) await this.maybeCheckpoint(actors);
    }
    if (!sft) {
      await this.checkpoint(actors);
      if (this.spec.eval.everySteps > 0) await runEval();
    }
  }

  private async runRl(c: {
    actors: ActorSet;
    publisher: WeightPublisher;
    codec: ChatCodec;
    rollouts: TrajectoryBuffer;
    judged: TrajectoryBuffer;
    trainTasks: TrackTask[];
    rolloutFn?: RolloutFunction;
    rewardFn?: (input: RewardInput) => number | Promise<number>;
    runEval: () => Promise<void>;
    remote: RemoteChatModel;
    startPersonal: () => Promise<PersonalSource>;
  }): Promise<void> {
    const { spec, o } = this;
    const { actors } = c;
    const personal = spec.track === 'personal';
    const B = spec.rollout.batchSize;
    const G = spec.rollout.samplesPerPrompt;
    const maxStaleness = spec.train.async ? spec.train.maxStaleness : 0;
    // Units the gate counts: prompt groups (env tracks) or simulated sessions (personal).
    const unitsPerStep = personal ? Math.max(1, Math.ceil(B / (spec.user?.turnsPerSession ?? 1))) : B;
    const gate = new StalenessGate(unitsPerStep, maxStaleness, {
      version: this.step,
      group: this.step * unitsPerStep,
    });
    this.gate = gate;
    if (this.stopRequested) gate.close();
    this.rlStartedAt = performance.now();
    const fail = (err: Error) => {
      if (!this.failure) {
        this.failure = err;
        o.log(`failed: ${err.message}`);
      }
      gate.close();
    };

    // Loop 1: rollouts.
    let rolloutLoop: Promise<void>;
    if (personal) {
      const source = await c.startPersonal();
      this.rolloutSlots = spec.user?.parallel ?? 1;
      rolloutLoop = spec.user
        ? runSimulatedUsers({
            url: source.url,
            model: c.remote.id,
            token: spec.serve!.apiKeyEnv ? process.env[spec.serve!.apiKeyEnv] : undefined,
            user: spec.user,
            sampling: {
              temperature: spec.rollout.temperature,
              topP: spec.rollout.topP,
              maxTokens: spec.rollout.maxTokens,
            },
            gate,
            onError: (err) => o.log(`simulated session failed: ${err.message}`),
          })
        : Promise.resolve();
    } else {
      const slots = spec.env!.parallel * actors.pools.length;
      this.rolloutSlots = slots;
      const episodes = new EpisodeQueue(gate, G);
      const worker = async (w: number) => {
        for (let item = await episodes.take(); item; item = await episodes.take()) {
          const task = c.trainTasks[item.group % c.trainTasks.length];
          let episode: Episode | undefined;
          for (let attempt = 1; !episode; attempt++) {
            try {
              episode = await playEpisode({
                pool: actors.pools[w % actors.pools.length],
                engine: actors.engines[(item.group * G + item.index) % actors.engines.length],
                taskId: task.id,
                sampling: {
                  maxTokens: spec.rollout.maxTokens,
                  temperature: spec.rollout.temperature,
                  topP: spec.rollout.topP,
                  seed: Number.parseInt(fnv1a(`${spec.train.seed}:${item.group}:${item.index}`), 16),
                },
                maxTurns: spec.rollout.maxTurns,
                rollout: c.rolloutFn,
              });
            } catch (err) {
              if (attempt >= 3) throw err;
              o.log(`episode on ${task.id} failed (attempt ${attempt}), retrying: ${(err as Error).message}`);
            }
          }
          if (c.rewardFn) {
            episode.customReward = await c.rewardFn({
              taskId: task.id,
              task,
              messages: episode.messages,
              reward: episode.reward,
              info: episode.info,
            });
          }
          await c.rollouts.append(episodeRecords(episode, task, item, G, this.job));
        }
      };
      rolloutLoop = Promise.all(Array.from({ length: slots }, (_, w) => worker(w))).then(() => {});
    }
    let rolloutsDone = false;
    let trainingDone = false;
    rolloutLoop = rolloutLoop.catch(fail).finally(() => {
      rolloutsDone = true;
    });

    // Loop 2: judging.
    const panel = new JudgePanel(this.voters(actors), {
      votes: spec.judge.votes,
      timeoutMs: spec.judge.timeoutMs,
      registry: o.registry,
    });
    const opd = spec.method === 'opd' || spec.method === 'combine';
    const judgeLoop = (async () => {
      const waiting = new Map<string, TrajectoryRecord[]>();
      let judging = Promise.resolve();
      while (!this.failure && !trainingDone) {
        const entries = await c.rollouts.read({
          group: 'judge',
          consumer: 'driver',
          count: 64,
          blockMs: 100,
        });
        if (entries.length === 0 && rolloutsDone) break;
        for (const e of entries) {
          const k = groupKey(e.record);
          const turns = waiting.get(k.episode) ?? [];
          turns.push(e.record);
          waiting.set(k.episode, turns);
          if (turns.length < k.turns) continue;
          waiting.delete(k.episode);
          const reference = (e.record.extra?.reference as Record<string, unknown> | undefined) ?? {};
          judging = judging.then(async () => {
            const out = await judgeEpisode(
              turns,
              {
                panel,
                kind: personal ? 'turn' : 'episode',
                stepRewardCoef: spec.judge.stepRewardCoef,
                opd,
                prm: spec.method === 'combine' || spec.method === 'rl',
                teacher: async (prompt, response) => {
                  const lp = await actors.engines[0].call(
                    'computeLogprobs',
                    [...prompt, ...response],
                    prompt.length,
                  );
                  return lp.slice(-response.length);
                },
                encodeChat: (messages) => c.codec.encodeChat(messages),
              },
              reference,
            );
            await c.judged.append(out);
          });
        }
        if (entries.length > 0)
          await c.rollouts.ack(
            'judge',
            entries.map((e) => e.entryId),
          );
        await judging;
        this.metrics.bufferLag.set({ job: this.job, stage: 'judge' }, waiting.size);
      }
      await judging;
    })().catch(fail);

    // Loop 3: training (and loop 4: weights back to the engines).
    const assembler = new GroupAssembler();
    const trainLoop = (async () => {
      while (this.step < spec.train.steps && !this.stopRequested && !this.failure) {
        const waitStarted = performance.now();
        while (assembler.size < B && !this.stopRequested && !this.failure) {
          const entries = await c.judged.read({
            group: 'train',
            consumer: 'driver',
            count: 256,
            blockMs: 100,
          });
          for (const e of entries) assembler.add(e.record);
          if (entries.length > 0)
            await c.judged.ack(
              'train',
              entries.map((e) => e.entryId),
            );
          this.metrics.bufferLag.set({ job: this.job, stage: 'train' }, assembler.size);
        }
        this.trainerWaitMs += performance.now() - waitStarted;
        if (this.stopRequested || this.failure) break;
        const started = performance.now();
        const fresh = assembler
          .take(B)
          .filter((g) => this.version - Math.min(...g.flat().map((r) => r.weightVersion)) <= maxStaleness);
        const { samples, stats } = buildSamples(fresh, this.version, {
          method: spec.method as 'rl' | 'opd' | 'combine',
          samplesPerPrompt: G,
          combine: spec.train.combine,
        });
        let loss = 0;
        // Without a learning signal (every group's rewards equal) the weights stay as they are.
        if (samples.length > 0) {
          loss = await this.trainStep(actors, samples, 'rl');
          await this.publish(actors, c.publisher, this.step + 1 === spec.train.steps);
        }
        this.step++;
        gate.advance(this.step);
        this.samplesTrained += stats.episodes;
        const record: StepRecord = {
          step: this.step,
          ...stats,
          loss,
          seconds: (performance.now() - started) / 1000,
        };
        this.history.push(record);
        this.recordMetrics(record);
        const p = this.progress();
        o.log(
          `step ${this.step}/${spec.train.steps}: reward ${stats.rewardMean.toFixed(3)}, success ${stats.successRate.toFixed(3)}, ${stats.samples} samples of ${stats.episodes} episodes, staleness ${stats.staleness.toFixed(2)}, loss ${loss.toFixed(4)}, ${p.samplesPerSecond.toFixed(2)} samples/s${fresh.length < B ? `, ${B - fresh.length} stale group(s) dropped` : ''}`,
        );
        const every = spec.eval.everySteps;
        if (every > 0 && this.step % every === 0 && this.step < spec.train.steps) await c.runEval();
        await this.maybeCheckpoint(actors);
      }
      trainingDone = true;
      gate.close();
    })().catch(fail);

    await trainLoop;
    trainingDone = true;
    gate.close();
    await rolloutLoop;
    await judgeLoop;
    if (this.failure) throw this.failure;
  }

  private voters(actors: ActorSet): VoterRef[] {
    const { judge, user } = this.spec;
    if (judge.backend === 'reaction') return [new ReactionJudge(user!.preference, { mode: judge.mode })];
    if (actors.voters.length === 0) {
      throw new ConfigError(
        'spec.judge: an llm judge needs baseURL (an OpenAI-compatible endpoint serving the judge model) in this version',
      );
    }
    return actors.voters;
  }

  private recordMetrics(r: StepRecord): void {
    const job = { job: this.job };
    const p = this.progress();
    this.metrics.steps.inc(job);
    this.metrics.samples.inc(job, r.episodes);
    this.metrics.reward.set(job, r.rewardMean);
    this.metrics.success.set({ ...job, split: 'train' }, r.successRate);
    this.metrics.staleness.set(job, r.staleness);
    this.metrics.samplesPerSecond.set(job, p.samplesPerSecond);
    this.metrics.trainerIdle.set(job, p.trainerIdleRatio);
    this.metrics.rolloutIdle.set(job, p.rolloutIdleRatio);
  }
}

/** What a reward plugin gets: the finished episode; it returns the episode's reward. */
export interface RewardInput {
  taskId: string;
  task: TrackTask;
  messages: ChatMessage[];
  /** The environment's own reward. */
  reward: number;
  info: Record<string, unknown>;
}

/** An episode's turns as trajectory records, appended together. */
function episodeRecords(
  episode: Episode,
  task: TrackTask,
  item: { group: number; index: number },
  groupSize: number,
  job: string,
): TrajectoryRecord[] {
  const episodeId = `${job}-g${item.group}-e${item.index}`;
  const reference: Record<string, unknown> = { reward: episode.reward };
  if (episode.customReward !== undefined) reference.custom = episode.customReward;
  const answer = (task as { answer?: unknown }).answer;
  if (typeof answer === 'string') reference.answer = answer;
  for (const key of ['testsPassed', 'testsTotal'] as const) {
    if (typeof episode.info[key] === 'number') reference[key] = episode.info[key];
  }
  return episode.turns.map((t, i) => ({
    trajectoryId: `${episodeId}-t${i}`,
    sessionId: episodeId,
    turn: i,
    messages: t.messages as TrajectoryRecord['messages'],
    promptTokenIds: t.promptTokenIds,
    tokenIds: t.tokenIds,
    logprobs: t.logprobs,
    nextState: (episode.turns[i + 1]?.messages.at(-1) ??
      episode.messages.at(-1) ??
      null) as TrajectoryRecord['nextState'],
    votes: [],
    score: null,
    hint: null,
    weightVersion: t.weightVersion,
    createdAtMs: Date.now(),
    extra: {
      taskId: task.id,
      group: `g${item.group}`,
      groupSize,
      episode: episodeId,
      turns: episode.turns.length,
      responseText: t.action.content ?? '',
      reference,
      ...(i === episode.turns.length - 1 ? { finalMessages: episode.messages } : {}),
    },
  }));
}
