/**
 * The RL job's driver (what `clawray rljob run` runs as the job's entrypoint): it creates the
 * job's actors, wires a rollout source, the judge loop and the train loop to the job's two
 * streams, and owns the job's durable state. The loops decide; this file only connects them:
 *
 *   source ──append──▶ rollouts stream ──judge loop──▶ judged stream ──train loop──▶ trainers
 *      ▲                                                                   │
 *      └──────────── staleness gate ◀── published weights ◀── engine pool ◀┘
 *
 * A restarted driver (the job's next attempt) continues its own submission: trainer shards
 * from its newest checkpoint, the ledger's last commit, and whatever the streams still hold.
 */
import { existsSync } from 'node:fs';
import { basename, isAbsolute, join, resolve } from 'node:path';
import type { Registry } from 'prom-client';
import type { EnvPool } from '../../actors/envs/env-pool.js';
import { ReactionJudge } from '../../actors/envs/personal/reaction-judge.js';
import type { TrackTask } from '../../actors/envs/track.js';
import { fnv1a } from '../../actors/envs/track.js';
import { loadTasks, loadTrack } from '../../actors/envs/tracks.js';
import { JudgePanel, type VoterRef } from '../../actors/judge/judge-panel.js';
import { JudgeVoter } from '../../actors/judge/judge-voter.js';
import { CONFIG_FILE } from '../../actors/models/model-dir.js';
import type { RolloutEngine } from '../../actors/rollout/rollout-engine-actor.js';
import { TurnFeedback } from '../../actors/rollout/turn-feedback.js';
import type { ActorHandle } from '../../actors/runtime/actor-handle.js';
import type { Cluster } from '../../actors/runtime/cluster.js';
import { lrAt } from '../../actors/trainer/lr-schedule.js';
import { describePublished, WeightPublisher } from '../../actors/trainer/weight-publisher.js';
import { ConfigError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { loadPluginFunction, pluginLocation } from '../../common/plugin-module.js';
import type { TrajectoryBuffer } from '../buffer/types.js';
import type { RLJobManifest } from '../manifest/schema.js';
import { type ActorSet, createActorSet } from './actor-set.js';
import { ChatCodec } from './chat-codec.js';
import { curvesFrom, type JobCurves, noRewardNote, writeCurves } from './curves.js';
import { EnginePool } from './engine-pool.js';
import type { EpisodeTicket } from './episode-queue.js';
import { EpisodeSource } from './episode-source.js';
import type { Episode, RolloutFunction, Sampling } from './episodes.js';
import { isPeerLoss } from './failures.js';
import { evalTaskIds, runHeldOutEval } from './heldout-eval.js';
import { JobMetrics } from './job-metrics.js';
import { type DriverState, type EvalRecord, JobStateStore, type StepRecord } from './job-state.js';
import { EngineVoter } from './judge-engines.js';
import { runJudgeLoop } from './judge-loop.js';
import { FirstSignal, judgeEpisode, type TurnRewardInput } from './judging.js';
import { prepareModelDir } from './model-source.js';
import { personalSourceFor } from './personal-source.js';
import { playOnPool } from './pool-episode.js';
import { episodeRecords, type RewardInput } from './records.js';
import { RemoteChatModel } from './remote-chat-model.js';
import type { RolloutSource } from './rollout-source.js';
import { oracleSamples, runSft } from './sft.js';
import { shuffled } from './shuffle.js';
import { StalenessGate } from './staleness-gate.js';
import { runTrainLoop, type TrainStepRecord } from './train-loop.js';
import { TrainerGroup } from './trainer-group.js';
import { type TrajectoryCounts, TrajectoryLedger } from './trajectory-ledger.js';

export type { EvalRecord, StepRecord } from './job-state.js';
export type { RewardInput } from './records.js';

export interface DriverOptions {
  cluster: Cluster;
  manifest: RLJobManifest;
  /** Where the manifest's relative paths (model, tasks, plugins) resolve. */
  workingDir: string;
  /** Relative checkpoint dirs and initialised models live here (the clawray home). */
  dataDir: string;
  /** The job's submission id: names its placement groups, ring, streams and checkpoints. */
  submissionId: string;
  /** The job's rollout and judged streams. */
  buffers: { rollouts: TrajectoryBuffer; judged: TrajectoryBuffer };
  /** `--resume [REF]`: '' = the newest run of this job's name; undefined = no resume. */
  resume?: string;
  logger: Logger;
  /** One human-readable line per event (the job's log). */
  log(line: string): void;
  registry?: Registry;
}

export type DriverPhase = 'starting' | 'warmup' | 'training' | 'evaluating' | 'stopping' | 'done';

export interface RLJobSummary {
  submissionId: string;
  job: string;
  track: string;
  method: string;
  /** failed: the summary of a job that failed, up to its failure (`error`). */
  status: 'completed' | 'stopped' | 'failed';
  error?: string;
  steps: number;
  /** Steps the trainer skipped because their loss or gradients were not finite (weights unchanged). */
  skippedSteps: number;
  /** What `heldout` measures: solved share of held-out tasks, or the simulated user's preference score. */
  metric: 'heldout_success' | 'preference_score';
  /**
   * The held-out figure before any training, after the SFT warm start (train.warmup: where RL
   * starts; null without one), and at the end; end − afterWarmup is what RL itself added.
   */
  heldout: { start: number | null; afterWarmup: number | null; end: number | null };
  samplesPerSecond: number;
  trainerIdleRatio: number;
  rolloutIdleRatio: number;
  elapsedSeconds: number;
  resumedFromStep: number | null;
  checkpointDir: string;
  /**
   * The newest checkpoint of the job: its directory (`step-N`, named by the trainer's optimizer
   * step: warm-start steps included), the job step it holds, and that optimizer step.
   */
  checkpoint: { path: string; step: number; trainerStep: number } | null;
  /** Warm-start SFT steps done (train.warmup; 0 without one and for method sft). */
  warmupSteps: number;
  /** null when a failed job could not read its streams' counts. */
  trajectories: TrajectoryCounts | null;
  recoveries: { engines: number; trainers: number };
  /** What each rollout engine and trainer shard computed on (see ActorSet.runtime). */
  runtime: { rollout: string[]; trainer: string[] };
  /**
   * The train–inference mismatch: mean over this run's RL steps of each step's mean |trainer −
   * rollout logprob| on tokens the trainer scored with the weights that drew them (both at the
   * sampling temperature; goal ≤ 1e-3); null when no step scored such a token.
   */
  mismatch: number | null;
  /**
   * The policy lag: mean over this run's RL steps with stale samples of their mean |trainer −
   * rollout logprob| under the newer weights (how far the policy moved since they were drawn);
   * null when no sample was stale (synchronous training).
   */
  policyLag: number | null;
  /** The mean version gap of those stale samples' tokens; null with `policyLag`. */
  policyLagVersions: number | null;
  /**
   * opd/combine: whose logprobs taught, and how many turns they scored (turns with a hint; with
   * hintSelect topk-overlap each candidate hint of a turn counts once).
   */
  teacher?: { kind: 'frozen' | 'tracking'; turns: number };
  /**
   * The learning curves: every held-out evaluation (`start` before training, `warmup` after the
   * warm start, `rl` during training, by job step) and each RL step's mean reward, and the SVG
   * drawn from them beside the checkpoints (`<checkpointDir>/learning-curves.svg`; null when
   * there was nothing to draw or it could not be written). See curves.ts.
   */
  curves: JobCurves;
  evals: EvalRecord[];
  history: StepRecord[];
}

/** Where a running job is, for `job status` (see `RLDriver.progress`). */
export interface DriverProgress {
  phase: DriverPhase;
  /** RL (or SFT) steps done, of `steps` (null: runs until stopped). */
  step: number;
  steps: number | null;
  /** Warm-start SFT steps done (0 without `train.warmup`). */
  warmupStep: number;
  runtime: string | null;
  /** Steps the trainer skipped: their loss or gradients were not finite. */
  skippedSteps: number;
}

export class RLDriver {
  private readonly spec: RLJobManifest['spec'];
  private readonly job: string;
  private readonly metrics: JobMetrics;
  private readonly state: JobStateStore;
  private readonly failed = new AbortController();
  private stopRequested = false;
  phase: DriverPhase = 'starting';
  /** What the actors compute on, as the `runtime:` log line says it (once they are ready). */
  private runtime: string | null = null;
  private step = 0;
  private warmupDone = 0;
  private lastCheckpointStep: number | null = null;
  /** The job step of that checkpoint. */
  private lastCheckpointJobStep: number | null = null;
  /** The model the trainer's checkpoints go into (saved with them for `clawray serve` and `eval`). */
  private baseModel?: DriverState['model'];
  /** Where this run last saved the trainer's weights (null until it has). */
  private lastCheckpointPath: string | null = null;
  private readonly history: StepRecord[] = [];
  /** Steps the trainer skipped (non-finite loss or gradients), over the whole submission. */
  private skippedSteps = 0;
  private readonly evals: EvalRecord[] = [];
  private startedAt = performance.now();
  private rlStartedAt = 0;
  private samplesTrained = 0;
  /** Each RL step's mismatch, policy lag and its version gap in this run (for the summary's means). */
  private readonly drift = { mismatch: [] as number[], policyLag: [] as number[], versions: [] as number[] };
  private trainerWaitMs = 0;
  private gate?: StalenessGate;
  private rolloutSlots = 1;
  private teacherTurns = 0;
  private resumedFrom: number | null = null;
  /** Whether a failed write of the curves' SVG was logged (once is enough). */
  private curvesWarned = false;
  /** What the summary reads of the running job's parts, once they exist. */
  private parts?: {
    engines: { recoveries: number };
    trainers: { recoveries: number };
    runtime: RLJobSummary['runtime'];
  };
  private failedSummary?: RLJobSummary;

  constructor(private readonly o: DriverOptions) {
    this.spec = o.manifest.spec;
    this.job = o.manifest.metadata.name;
    this.metrics = new JobMetrics(o.registry);
    const dir = this.spec.checkpoint.dir;
    this.state = new JobStateStore(
      isAbsolute(dir) ? dir : resolve(o.dataDir, dir),
      o.submissionId,
      this.spec.checkpoint.keep,
    );
  }

  /** True while the job has steps to take after `step` (always, for a live job without train.steps). */
  private stepsLeft(step: number): boolean {
    return this.spec.train.steps === undefined || step < this.spec.train.steps;
  }

  /** Where the job is now (reported to the head for `job status`). */
  progress(): DriverProgress {
    return {
      phase: this.phase,
      step: this.step,
      steps: this.spec.train.steps ?? null,
      warmupStep: this.warmupDone,
      runtime: this.runtime,
      skippedSteps: this.skippedSteps,
    };
  }

  /** Finish the step in progress, checkpoint, and end (SIGTERM, `job stop`). */
  requestStop(): void {
    if (this.stopRequested) return;
    this.stopRequested = true;
    this.phase = 'stopping';
    this.gate?.close();
    this.o.log('stop requested: finishing the current step');
  }

  async run(): Promise<RLJobSummary> {
    const { spec, o } = this;
    const modelDir = prepareModelDir(spec.model, o.workingDir, o.dataDir);
    this.baseModel = {
      dir: modelDir,
      ...(spec.model.name ? { name: spec.model.name } : {}),
      ...(spec.train.lora ? { lora: spec.train.lora } : {}),
    };
    const codec = new ChatCodec(modelDir);
    const judgeModelDir = this.judgeModelDir(modelDir);
    const judgeCodec = judgeModelDir && judgeModelDir !== modelDir ? new ChatCodec(judgeModelDir) : codec;
    // Plugins that run in other actors travel as absolute paths (same path on every node).
    const plugin = (p?: string) => {
      if (!p) return undefined;
      const { path, exportName } = pluginLocation(p, o.workingDir);
      return `${path}#${exportName}`;
    };
    const tasksPath =
      spec.env && spec.env.tasks !== 'builtin' ? resolve(o.workingDir, spec.env.tasks) : 'builtin';
    o.log(`job ${this.job} (${o.submissionId}): ${spec.track} / ${spec.method}, model ${modelDir}`);
    const actors = await createActorSet(
      o.cluster,
      o.manifest,
      {
        modelDir,
        judgeModelDir,
        tasks: tasksPath,
        checkpointDir: this.state.dir,
        environmentModule: plugin(spec.plugins.environment),
        lossModule: plugin(spec.plugins.loss),
      },
      o.submissionId,
    );
    o.log(
      `actors ready: ${actors.engines.length} rollout engine(s), ${actors.trainers.length} trainer shard(s), ${actors.pools.length} env pool(s), ${actors.judgeEngines.length > 0 ? `${actors.judgeEngines.length} judge engine(s) (${spec.judge.model ?? spec.model.path}, frozen${spec.method !== 'rl' ? `; teacher ${spec.judge.teacher}` : ''})` : `${actors.voters.length} judge voter(s)`}`,
    );
    this.runtime = `rollout ${tally(actors.runtime.rollout)}; trainer ${tally(actors.runtime.trainer)}`;
    o.log(`runtime: ${this.runtime}`);
    const res = spec.resources;
    if (res.rollout.gpus > 0 && actors.runtime.rollout.some((r) => r.endsWith('/cpu'))) {
      o.log(
        `warning: rollout engines hold ${res.rollout.gpus} GPU(s) each but run on the CPU (neither onnxruntime's CUDA provider nor its WebGPU one started there)`,
      );
    }
    if (res.trainer.gpus > 0 && actors.runtime.trainer.some((r) => !/^tfjs\/(tensorflow|webgpu) /.test(r))) {
      const why = actors.trainerSkipped.length > 0 ? `: ${actors.trainerSkipped.join('; ')}` : '';
      o.log(
        `warning: trainer shards hold ${res.trainer.gpus} GPU(s) each but run on ${actors.runtime.trainer.join(', ')}${why} (on a GPU: npm install webgpu and the GPU's Vulkan driver, or @tensorflow/tfjs-node-gpu)`,
      );
    }
    const publisher = new WeightPublisher(actors.engines, { registry: o.registry });
    const engines = new EnginePool(actors.engines, {
      publish: async (members, version, weights) => {
        await publisher.publish(version, weights, members);
      },
      log: o.log,
    });
    const trainers = new TrainerGroup(actors.trainers, {
      rebuildRing: () => actors.rebuildRing(),
      lastCheckpointStep: () => this.lastCheckpointStep,
      log: o.log,
    });
    const ledger = new TrajectoryLedger(o.buffers.rollouts, o.buffers.judged);
    // In-job judge engines never get an update: the judge (and a frozen teacher) stays the initial model.
    const judgeEngines = new EnginePool(actors.judgeEngines, {
      publish: async () => {
        throw new Error('the judge engines are frozen');
      },
      log: (line) => o.log(`judge: ${line}`),
    });
    const judge = { engines: judgeEngines, codec: judgeCodec };
    try {
      this.parts = { engines, trainers, runtime: actors.runtime };
      this.resumedFrom = await this.restore(trainers, engines, ledger);
      const rolloutFn = spec.plugins.rollout
        ? await loadPluginFunction<RolloutFunction>(spec.plugins.rollout, o.workingDir, 'rollout')
        : undefined;
      const track = spec.env ? await loadTrack(spec.track) : undefined;
      const tasks = track ? await loadTasks(track, tasksPath) : [];
      const trainTasks = shuffled(
        tasks.filter((t) => spec.env!.split === 'all' || t.split === spec.env!.split),
        spec.env?.seed ?? 0,
      );
      if (spec.env && trainTasks.length === 0) {
        throw new ConfigError(`spec.env: no tasks in split '${spec.env.split}' of ${tasksPath}`);
      }
      // env.draw without-oracle: RL plays what the warm start had no demonstration of.
      const rlTasks =
        spec.env?.draw === 'without-oracle' ? trainTasks.filter((t) => t.oracle.length === 0) : trainTasks;
      if (spec.env && spec.method !== 'sft' && rlTasks.length === 0) {
        throw new ConfigError(
          `spec.env.draw: every task in split '${spec.env.split}' of ${tasksPath} has an oracle trace; nothing is left for RL to play`,
          { fields: { field: 'spec.env.draw', tasks: tasksPath } },
        );
      }
      const evalTasks = evalTaskIds(tasks, spec.eval.split);
      // The id clients name: spec.model.name, else the model directory's name as the manifest gives it.
      const modelId = spec.model.name ?? basename(resolve(o.workingDir, spec.model.path));
      const remote = new RemoteChatModel(modelId, codec, engines);
      const play = (taskId: string, sampling: Sampling, slot: number) =>
        playOnPool(engines, actors.pools, {
          taskId,
          sampling,
          slot,
          maxTurns: spec.rollout.maxTurns,
          rollout: rolloutFn,
        });

      const runEval = async (afterWarmup = false) => {
        if (this.stopRequested || spec.eval.everySteps <= 0) return;
        const previous = this.phase;
        this.phase = 'evaluating';
        const at = afterWarmup ? 'after the warm start' : `step ${this.step}`;
        const personal = spec.track === 'personal';
        const progress = evalProgress(
          personal ? (spec.user ? spec.user.evalSessions * spec.user.turnsPerSession : 0) : evalTasks.length,
          personal ? 'held-out replies' : 'held-out tasks',
          (line) => o.log(`eval ${at}: ${line}`),
        );
        const r = await runHeldOutEval(spec, {
          generate: async (request) => {
            const out = await remote.generate(request);
            if (personal) progress.advance();
            return out;
          },
          codec,
          taskIds: evalTasks,
          play,
          onEpisode: () => progress.advance(),
        });
        this.phase = previous;
        if (!r) return;
        this.evals.push({ step: this.step, ...r, ...(afterWarmup ? { afterWarmup } : {}) });
        this.metrics.success.set({ job: this.job, split: 'heldout' }, r.success);
        o.log(
          `eval ${at}: held-out ${personal ? 'preference score' : 'success'} ${r.success.toFixed(3)} (${r.episodes} ${personal ? 'sessions' : 'tasks'}, mean reward ${r.rewardMean.toFixed(3)}, ${r.seconds.toFixed(1)} s)`,
        );
        if (r.sample) o.log(`eval sample: ${r.sample}`);
      };

      this.startedAt = performance.now();
      if (this.evals.length === 0) await runEval();

      // Warm start (or the whole job, for method sft): SFT on the oracle traces.
      const sft = spec.method === 'sft';
      // Method sft is refused on the personal track, the only one where steps may be open-ended.
      const sftSteps = (sft ? spec.train.steps : spec.train.warmup?.steps) ?? 0;
      const sftDone = sft ? this.step : this.warmupDone;
      if (sftSteps > sftDone && !this.stopRequested) {
        const traces = await oracleSamples(
          actors.pools[0] as ActorHandle<EnvPool> | undefined,
          codec,
          trainTasks,
          {
            seed: spec.train.seed + 1,
            what: sft ? 'spec.method sft' : 'spec.train.warmup',
          },
        );
        o.log(
          `oracle traces: ${traces.length} samples from ${trainTasks.filter((t) => t.oracle.length > 0).length} tasks`,
        );
        this.phase = sft ? 'training' : 'warmup';
        this.rlStartedAt = performance.now();
        await runSft({
          traces,
          batchSize:
            (sft ? undefined : spec.train.warmup?.batchSize) ??
            spec.rollout.batchSize * spec.rollout.samplesPerPrompt,
          done: sftDone,
          total: sftSteps,
          lr: sft ? undefined : (step) => warmupLr(spec, step),
          step: async (batch, lr) => {
            const r = await trainers.step(batch, { method: 'sft', lr }, this.failed.signal);
            if (r.skipped)
              this.noteSkipped(`${sft ? 'step' : 'warmup step'} ${trainers.version + 1}`, r.loss);
            return r.loss;
          },
          stopRequested: () => this.stopRequested,
          afterStep: async (s, loss, samples, seconds) => {
            o.log(`${sft ? 'step' : 'warmup step'} ${s}/${sftSteps}: sft loss ${loss.toFixed(4)}`);
            if (!sft) {
              this.warmupDone = s;
              if (s === sftSteps) {
                // RL starts with a fresh AdamW (train.warmup.resetOptimizer), before the
                // checkpoint, so a resume from it continues with RL's optimizer.
                if (spec.train.warmup?.resetOptimizer !== false) await trainers.resetOptimizer();
                await this.publish(trainers, engines, true);
                await this.checkpoint(trainers, ledger);
                await runEval(true);
              }
              return;
            }
            this.step = s;
            this.samplesTrained += samples;
            this.history.push({
              step: s,
              rewardMean: 0,
              successRate: 0,
              staleness: 0,
              episodes: 0,
              samples,
              ...(Number.isFinite(loss) ? { loss } : { loss: null, skipped: true as const }),
              seconds,
            });
            this.metrics.steps.inc({ job: this.job });
            this.metrics.samples.inc({ job: this.job }, samples);
            const every = spec.eval.everySteps;
            // SFT needs no rollouts, so the engines get the weights only when something reads them.
            const evalDue = every > 0 && (s % every === 0 || s === sftSteps);
            if (evalDue || s === sftSteps) await this.publish(trainers, engines, true);
            if (evalDue) await runEval();
            await this.maybeCheckpoint(trainers, ledger);
          },
        });
      }

      if (!sft && this.stepsLeft(this.step) && !this.stopRequested) {
        this.phase = 'training';
        await this.runRl({
          actors,
          engines,
          judge,
          trainers,
          ledger,
          codec,
          remote,
          trainTasks: rlTasks,
          play,
          runEval,
        });
      }
      const lastEval = this.evals.at(-1);
      if (!this.stopRequested && (!lastEval || lastEval.step !== this.step)) await runEval();
      await this.checkpoint(trainers, ledger);
      this.phase = 'done';
      const trajectories = await ledger.counts();
      this.setTrajectoryMetrics(trajectories);
      return this.summary(this.stopRequested ? 'stopped' : 'completed', trajectories);
    } catch (err) {
      // What the job did before it failed (steps, evaluations) still belongs in its summary.
      const trajectories = await ledger.counts().catch(() => null);
      this.failedSummary = { ...this.summary('failed', trajectories), error: (err as Error).message };
      throw err;
    } finally {
      this.gate?.close();
      engines.close();
      judgeEngines.close();
      await actors.close();
    }
  }

  /** The summary of this run so far. */
  private summary(status: RLJobSummary['status'], trajectories: TrajectoryCounts | null): RLJobSummary {
    const { spec, o } = this;
    const p = this.rates();
    return {
      submissionId: o.submissionId,
      job: this.job,
      track: spec.track,
      method: spec.method,
      status,
      steps: this.step,
      warmupSteps: this.sftJob ? 0 : this.warmupDone,
      skippedSteps: this.skippedSteps,
      metric: spec.track === 'personal' ? 'preference_score' : 'heldout_success',
      heldout: heldoutSummary(this.evals),
      samplesPerSecond: p.samplesPerSecond,
      trainerIdleRatio: p.trainerIdleRatio,
      rolloutIdleRatio: p.rolloutIdleRatio,
      elapsedSeconds: (performance.now() - this.startedAt) / 1000,
      resumedFromStep: this.resumedFrom,
      checkpointDir: this.state.dir,
      checkpoint:
        this.lastCheckpointPath !== null && this.lastCheckpointStep !== null
          ? {
              path: this.lastCheckpointPath,
              step: this.lastCheckpointJobStep ?? this.step,
              trainerStep: this.lastCheckpointStep,
            }
          : null,
      trajectories,
      recoveries: {
        engines: this.parts?.engines.recoveries ?? 0,
        trainers: this.parts?.trainers.recoveries ?? 0,
      },
      runtime: this.parts?.runtime ?? { rollout: [], trainer: [] },
      mismatch: meanOrNull(this.drift.mismatch),
      policyLag: meanOrNull(this.drift.policyLag),
      policyLagVersions: meanOrNull(this.drift.versions),
      ...(spec.method === 'opd' || spec.method === 'combine'
        ? { teacher: { kind: spec.judge.teacher, turns: this.teacherTurns } }
        : {}),
      curves: this.drawCurves(),
      evals: this.evals,
      history: this.history,
    };
  }

  /**
   * The job's curves so far, drawn into its checkpoint directory. A picture that cannot be
   * written is a warning in the log (once), never the job's failure.
   */
  private drawCurves(): JobCurves {
    const curves = curvesFrom(this.evals, this.history, this.spec.method);
    let svg: string | null = null;
    try {
      svg = writeCurves(this.state.dir, curves, {
        title: `${this.job} (${this.o.submissionId})`,
        heldout: this.spec.track === 'personal' ? 'preference score' : 'held-out success',
        noReward: noRewardNote(this.spec.method),
      });
    } catch (err) {
      if (!this.curvesWarned) {
        this.curvesWarned = true;
        this.o.log(
          `warning: the learning curves were not drawn in ${this.state.dir}: ${(err as Error).message}`,
        );
      }
    }
    return { ...curves, svg };
  }

  /**
   * After run() threw: what the job had done until then (status 'failed', with the error), or
   * null when it failed before its actors were up.
   */
  partialSummary(): RLJobSummary | null {
    return this.failedSummary ?? null;
  }

  /** Continues this submission (a restarted driver), or adopts another's checkpoint (`--resume`). */
  private async restore(
    trainers: TrainerGroup,
    engines: EnginePool<ActorHandle<RolloutEngine>>,
    ledger: TrajectoryLedger,
  ) {
    let state: DriverState | null = this.state.latest();
    if (state) {
      this.o.log(`continuing submission ${this.o.submissionId} from its checkpoint at step ${state.step}`);
    } else if (this.o.resume !== undefined) {
      state = this.state.adopt(this.job, this.o.resume);
      if (!state) this.o.log(`no earlier run of ${this.job} in ${this.state.root}; starting from scratch`);
    }
    if (!state) return null;
    await trainers.resume(state.trainerStep);
    this.lastCheckpointStep = state.trainerStep;
    this.lastCheckpointJobStep = state.step;
    this.lastCheckpointPath = join(this.state.dir, `step-${state.trainerStep}`);
    this.step = state.step;
    this.warmupDone = state.warmupDone;
    this.skippedSteps = state.skippedSteps ?? 0;
    this.history.push(...state.history);
    this.evals.push(...state.evals);
    await ledger.restore(state.ledger);
    await engines.publish(trainers.version, await trainers.readWeights());
    this.o.log(
      `resumed from ${this.state.dir} at step ${this.step} (trainer checkpoint step-${state.trainerStep})`,
    );
    return this.step;
  }

  private async runRl(c: {
    actors: ActorSet;
    engines: EnginePool<ActorHandle<RolloutEngine>>;
    judge: { engines: EnginePool<ActorHandle<RolloutEngine>>; codec: ChatCodec };
    trainers: TrainerGroup;
    ledger: TrajectoryLedger;
    codec: ChatCodec;
    remote: RemoteChatModel;
    trainTasks: TrackTask[];
    play(taskId: string, sampling: Sampling, slot: number): Promise<Episode>;
    runEval(afterWarmup?: boolean): Promise<void>;
  }): Promise<void> {
    const { spec, o } = this;
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
      if (!this.failed.signal.aborted) {
        o.log(`failed: ${err.message}`);
        this.failed.abort(err);
      }
      gate.close();
    };
    const plugin = spec.plugins.reward
      ? await loadPluginFunction<(input: RewardInput | TurnRewardInput) => number | Promise<number>>(
          spec.plugins.reward,
          o.workingDir,
          'reward',
        )
      : undefined;
    const rewardFn =
      plugin &&
      (async (input: RewardInput | TurnRewardInput): Promise<number> => {
        const value = await plugin(input);
        if (typeof value !== 'number') {
          throw new ConfigError(
            `spec.plugins.reward returned ${typeof value} ${JSON.stringify(value)?.slice(0, 80)}: a reward function returns a number`,
            { fields: { field: 'spec.plugins.reward' } },
          );
        }
        return value;
      });

    const feedback = new TurnFeedback({ rewardRange: spec.judge.rewardRange });
    const firstSignal = new FirstSignal();
    const source: RolloutSource = personal
      ? personalSourceFor(spec, {
          model: c.remote,
          clusterToken: o.cluster.token,
          feedback,
          registry: o.registry,
          logger: o.logger,
          log: o.log,
        })
      : new EpisodeSource({
          tasks: c.trainTasks,
          samplesPerGroup: G,
          slots: spec.env!.parallel * c.actors.pools.length,
          play: async (ticket: EpisodeTicket, task: TrackTask, slot: number) => {
            const episode = await c.play(task.id, this.sampling(ticket), slot);
            if (rewardFn) {
              episode.customReward = await rewardFn({
                taskId: task.id,
                task,
                messages: episode.messages,
                reward: episode.reward,
                info: episode.info,
              });
            }
            return episodeRecords(episode, task, ticket, G, o.submissionId, spec.rollout.temperature);
          },
        });
    this.rolloutSlots = source.slots;
    let rolloutsDone = false;
    const rolloutLoop = source
      .run({
        gate,
        append: async (records) => {
          await o.buffers.rollouts.append(records);
        },
        signal: this.failed.signal,
        log: o.log,
      })
      .catch(fail)
      .finally(() => {
        rolloutsDone = true;
      });

    const panel = new JudgePanel(this.voters(c.actors, c.judge), {
      votes: spec.judge.votes,
      timeoutMs: spec.judge.timeoutMs,
      voteThreshold: spec.judge.voteThreshold,
      registry: o.registry,
    });
    // judge.stepRule: a rule voter scores each turn; a pure function, so it votes in this process.
    const stepPanel = spec.judge.stepRule
      ? new JudgePanel(
          [new JudgeVoter({ backend: 'rule', rule: spec.judge.stepRule }, { registry: o.registry })],
          {
            votes: 1,
            registry: o.registry,
          },
        )
      : undefined;
    const teacherEngines = spec.judge.teacher === 'frozen' ? c.judge.engines : c.engines;
    const opd = spec.method === 'opd' || spec.method === 'combine';
    const judgeLoop = runJudgeLoop({
      rollouts: o.buffers.rollouts,
      judged: o.buffers.judged,
      rolloutsDone: () => rolloutsDone,
      signal: this.failed.signal,
      log: o.log,
      onWaiting: (n) => this.metrics.bufferLag.set({ job: this.job, stage: 'judge' }, n),
      judge: (turns) =>
        judgeEpisode(
          turns,
          {
            panel,
            kind: personal ? 'turn' : 'episode',
            stepRewardCoef: spec.judge.stepRewardCoef,
            stepPanel,
            outcomeRule: spec.judge.rule,
            opd,
            prm: spec.method === 'combine' || spec.method === 'rl',
            // Scored at the temperature the turn was sampled with, as its rollout logprobs are.
            teacher: (prompt, response, temperature) => {
              this.teacherTurns++;
              return teacherEngines.run(
                async (engine) =>
                  (
                    await engine.call('computeLogprobs', [...prompt, ...response], prompt.length, temperature)
                  ).slice(-response.length),
                isPeerLoss,
              );
            },
            // train.distillTopK: the teacher's top-K too; the student's (topk-overlap) from the rollout engines.
            ...(spec.train.distillTopK !== undefined
              ? {
                  distill: {
                    k: spec.train.distillTopK,
                    hintSelect: spec.train.hintSelect,
                    teacherTopK: (prompt: number[], response: number[], temperature: number, k: number) => {
                      this.teacherTurns++;
                      return topLogprobsOn(teacherEngines, prompt, response, temperature, k);
                    },
                    studentTopK: (prompt: number[], response: number[], temperature: number, k: number) =>
                      topLogprobsOn(c.engines, prompt, response, temperature, k),
                  },
                }
              : {}),
            // train.distillOn teacher | both: the teacher's own greedy reply under the hint, which
            // the student (the rollout engines) scores under the turn's own prompt.
            ...(spec.train.distillOn !== 'student'
              ? {
                  teacherReply: {
                    generate: async (prompt: number[], maxTokens: number) =>
                      (
                        await teacherEngines.run(
                          (engine) =>
                            engine.call('generate', { promptTokenIds: prompt, maxTokens, temperature: 0 }),
                          isPeerLoss,
                        )
                      ).tokenIds,
                    studentLogprobs: (prompt: number[], response: number[], temperature: number) =>
                      c.engines.run(
                        async (engine) =>
                          (
                            await engine.call(
                              'computeLogprobs',
                              [...prompt, ...response],
                              prompt.length,
                              temperature,
                            )
                          ).slice(-response.length),
                        isPeerLoss,
                      ),
                    maxTokens: spec.rollout.maxTokens,
                    maxContext: c.codec.maxContext,
                  },
                }
              : {}),
            encodeChat: (messages) => c.codec.encodeChat(messages),
            ...(personal
              ? {
                  feedback: (r) =>
                    typeof r.extra?.requestId === 'string' ? feedback.take(r.extra.requestId) : undefined,
                  ...(rewardFn ? { turnReward: rewardFn } : {}),
                  ...(spec.method !== 'opd' ? { firstSignal } : {}),
                }
              : {}),
          },
          (turns.at(-1)!.extra?.reference as Record<string, unknown> | undefined) ?? {},
        ),
    }).catch(fail);

    try {
      await runTrainLoop({
        judged: o.buffers.judged,
        trainer: c.trainers,
        publish: (force) => this.publish(c.trainers, c.engines, force),
        ledger: c.ledger,
        gate,
        startStep: this.step,
        totalSteps: spec.train.steps,
        // Live sessions: a batch with nothing to train is not a step (OpenClaw-RL waits for
        // trainable samples). Simulated users (spec.user) measure interactions, as env tracks
        // measure episodes: there it is a step, so train.steps bounds the interactions, and a
        // policy that already pleases every user still ends its job.
        skipEmptySteps: personal && !spec.user,
        onSkippedStep: (r) =>
          this.noteSkipped(
            `step ${r.step}${personal && !spec.user ? ` (a batch of ${r.samples} turn(s), not counted as a step)` : ''}`,
            r.loss,
          ),
        onEmptyBatch: (b) =>
          o.log(
            `a batch of ${b.turns} turn(s) had nothing to train on (${b.noSignal} without signal, ${b.stale} stale, ${b.truncated} empty${b.nonFinite > 0 ? `, ${b.nonFinite} with a reward that is not a finite number` : ''}): not a step`,
          ),
        batchSize: B,
        maxStaleness,
        advantages: {
          method: spec.method as 'rl' | 'opd' | 'combine',
          samplesPerPrompt: G,
          combine: spec.train.combine,
          distillOn: spec.train.distillOn,
        },
        stopRequested: () => this.stopRequested,
        signal: this.failed.signal,
        onWait: (ms) => {
          this.trainerWaitMs += ms;
        },
        onLag: (n) => this.metrics.bufferLag.set({ job: this.job, stage: 'train' }, n),
        afterStep: (r) => this.afterRlStep(r, c.trainers, c.ledger, c.runEval),
      });
    } catch (err) {
      fail(err as Error);
    }
    // Training is over (or failed): the source and the judge stop where they are; what they
    // hold stays in the streams, unacked.
    gate.close();
    if (!this.failed.signal.aborted) this.failed.abort(new Error('training finished'));
    await rolloutLoop;
    await judgeLoop;
    const reason = this.failed.signal.reason as Error | undefined;
    if (reason && reason.message !== 'training finished') throw reason;
  }

  private async afterRlStep(
    r: TrainStepRecord,
    trainers: TrainerGroup,
    ledger: TrajectoryLedger,
    runEval: () => Promise<void>,
  ): Promise<void> {
    const { spec, o } = this;
    this.step = r.step;
    this.samplesTrained += r.episodes;
    const record: StepRecord = {
      step: r.step,
      rewardMean: r.rewardMean,
      successRate: r.successRate,
      staleness: r.staleness,
      episodes: r.episodes,
      samples: r.samples,
      ...(r.skipped ? { loss: null, skipped: true as const } : { loss: r.loss }),
      seconds: r.seconds,
    };
    this.history.push(record);
    this.recordMetrics(record);
    if (r.mismatch !== null && Number.isFinite(r.mismatch)) {
      this.drift.mismatch.push(r.mismatch);
      this.metrics.mismatch.set({ job: this.job }, r.mismatch);
    }
    if (r.policyLag !== null && Number.isFinite(r.policyLag)) {
      this.drift.policyLag.push(r.policyLag);
      this.drift.versions.push(r.policyLagVersions ?? 0);
      this.metrics.policyLag.set({ job: this.job }, r.policyLag);
    }
    if (r.tisWeight !== undefined) this.metrics.tisWeight.set({ job: this.job }, r.tisWeight);
    if (r.distillLoss !== undefined) this.metrics.distillKl.set({ job: this.job }, r.distillLoss);
    const p = this.rates();
    if (r.skipped) {
      o.log(
        `step ${r.step}${spec.train.steps === undefined ? '' : `/${spec.train.steps}`}: skipped (loss or gradients not finite), ${r.samples} samples dropped, ${p.samplesPerSecond.toFixed(2)} samples/s${nonFinite(r.nonFinite)}`,
      );
      await this.maybeCheckpoint(trainers, ledger);
      return;
    }
    const drift = `${r.mismatch === null ? '' : `, mismatch ${r.mismatch.toExponential(2)}`}${r.policyLag === null ? '' : `, policy lag ${r.policyLag.toExponential(2)} (${(r.policyLagVersions ?? 0).toFixed(2)} versions)`}`;
    const tis = r.tisWeight === undefined ? '' : `, tis weight ${r.tisWeight.toFixed(3)}`;
    const distill = r.distillLoss === undefined ? '' : `, distill KL ${r.distillLoss.toFixed(4)}`;
    o.log(
      `step ${r.step}${spec.train.steps === undefined ? '' : `/${spec.train.steps}`}: reward ${r.rewardMean.toFixed(3)}, success ${r.successRate.toFixed(3)}, ${r.samples} samples of ${r.episodes} episodes, staleness ${r.staleness.toFixed(2)}, loss ${r.loss.toFixed(4)}${drift}${tis}${distill}, ${p.samplesPerSecond.toFixed(2)} samples/s${r.staleGroups > 0 ? `, ${r.staleGroups} stale group(s) dropped` : ''}${r.greedy > 0 ? `, ${r.greedy} greedy (temperature 0) turn(s) not trained` : ''}${nonFinite(r.nonFinite)}`,
    );
    const every = spec.eval.everySteps;
    if (every > 0 && r.step % every === 0 && this.stepsLeft(r.step)) await runEval();
    await this.maybeCheckpoint(trainers, ledger);
  }

  private sampling(ticket: EpisodeTicket): Sampling {
    const { rollout, train } = this.spec;
    return {
      maxTokens: rollout.maxTokens,
      temperature: rollout.temperature,
      topP: rollout.topP,
      seed: Number.parseInt(fnv1a(`${train.seed}:${ticket.group}:${ticket.index}`), 16),
    };
  }

  private voters(
    actors: ActorSet,
    engines: { engines: EnginePool<ActorHandle<RolloutEngine>>; codec: ChatCodec },
  ): VoterRef[] {
    const { judge, user } = this.spec;
    if (judge.backend === 'reaction') return [new ReactionJudge(user!.preference, { mode: judge.mode })];
    if (actors.judgeEngines.length > 0) {
      return [
        new EngineVoter(engines.engines, engines.codec, {
          model: judge.model!,
          mode: judge.mode,
          temperature: judge.temperature!,
          maxTokens: judge.maxTokens!,
        }),
      ];
    }
    if (actors.voters.length === 0) {
      throw new ConfigError('spec.resources.judge.replicas: the judge needs at least one replica');
    }
    return actors.voters;
  }

  /** The model directory in-job judge engines serve (llm judge without baseURL), if any. */
  private judgeModelDir(policyDir: string): string | undefined {
    const { judge, model } = this.spec;
    if (judge.backend !== 'llm' || judge.baseURL) return undefined;
    if (judge.model === undefined || judge.model === model.path) return policyDir;
    const dir = resolve(this.o.workingDir, judge.model);
    if (!existsSync(join(dir, CONFIG_FILE))) {
      throw new ConfigError(`spec.judge.model: ${dir} holds no model (no ${CONFIG_FILE})`, {
        fields: { field: 'spec.judge.model', path: dir },
      });
    }
    return dir;
  }

  /** Publishes the trainers' weights when due (every `updateWeightsEvery` versions) or forced. */
  private async publish(
    trainers: TrainerGroup,
    engines: EnginePool<ActorHandle<RolloutEngine>>,
    force: boolean,
  ): Promise<boolean> {
    if (!force && trainers.version % this.spec.train.updateWeightsEvery !== 0) return false;
    const weights = await trainers.readWeights();
    await engines.publish(trainers.version, weights);
    this.o.log(
      `published weight version ${trainers.version} to ${engines.healthyCount} rollout engine(s): ${describePublished(weights)}`,
    );
    return true;
  }

  /**
   * The commit protocol (see trajectory-ledger.ts): trainer checkpoint → driver state naming
   * what it commits → mark trained → ack.
   */
  private async checkpoint(trainers: TrainerGroup, ledger: TrajectoryLedger): Promise<void> {
    // The end of a job whose last step was just checkpointed: the weights and optimizer state
    // on disk are current, so only the driver state (evals, ledger) is written again.
    const unchanged = this.lastCheckpointPath !== null && this.lastCheckpointStep === trainers.version;
    const path = unchanged ? this.lastCheckpointPath! : await trainers.saveCheckpoint(this.step);
    // The same job step checkpointed again (the end, after its final evaluation or a stop):
    // only the driver state is new, and the log must not announce the checkpoint twice.
    const again = unchanged && this.lastCheckpointJobStep === this.step;
    this.lastCheckpointPath = path;
    const ledgerState = ledger.prepareCommit();
    this.state.save({
      format: 'clawray-driver-state',
      submissionId: this.o.submissionId,
      jobName: this.job,
      step: this.step,
      warmupDone: this.warmupDone,
      trainerStep: trainers.version,
      evals: this.evals,
      history: this.history,
      ledger: ledgerState,
      skippedSteps: this.skippedSteps,
      ...(this.baseModel ? { model: this.baseModel } : {}),
      savedAtMs: Date.now(),
    });
    this.lastCheckpointStep = trainers.version;
    this.lastCheckpointJobStep = this.step;
    // The curves beside the checkpoint, so a running (or crashed) job's can be looked at too.
    this.drawCurves();
    await ledger.finishCommit();
    this.setTrajectoryMetrics(await ledger.counts());
    this.o.log(
      again
        ? `driver state saved again at the end of step ${this.step} (the weights in ${path} are unchanged)`
        : `${this.checkpointName()}: ${path}${parenthesis([
            checkpointNaming(this.step, this.sftJob ? 0 : this.warmupDone, trainers.version),
            unchanged ? 'weights unchanged; driver state saved' : '',
          ])}`,
    );
  }

  /** What the log calls the checkpoint being written: by job step, or by warm-start step. */
  private checkpointName(): string {
    const warmup = this.spec.train.warmup?.steps ?? 0;
    if (this.sftJob || this.step > 0 || this.warmupDone === 0) return `checkpoint at step ${this.step}`;
    return this.warmupDone >= warmup
      ? 'checkpoint after the warm start'
      : `checkpoint at warm-start step ${this.warmupDone}/${warmup}`;
  }

  private get sftJob(): boolean {
    return this.spec.method === 'sft';
  }

  private maybeCheckpoint(trainers: TrainerGroup, ledger: TrajectoryLedger): Promise<void> {
    const every = this.spec.checkpoint.everySteps;
    return every > 0 && this.step % every === 0 ? this.checkpoint(trainers, ledger) : Promise.resolve();
  }

  /**
   * A step the trainer did not take: its loss or summed gradients were not finite (a judge that
   * returned NaN, an overflow). Logged and counted; the last good weights keep serving.
   */
  private noteSkipped(what: string, loss: number): void {
    this.skippedSteps++;
    this.metrics.skippedSteps.inc({ job: this.job });
    this.o.log(
      `${what} skipped: its loss (${loss}) or gradients were not finite, so no weight changed and nothing was published (${this.skippedSteps} skipped step(s) so far)`,
    );
  }

  private rates() {
    const rlElapsed = this.rlStartedAt ? (performance.now() - this.rlStartedAt) / 1000 : 0;
    const idle = (ms: number, slots = 1) =>
      rlElapsed > 0 ? Math.min(1, ms / 1000 / (rlElapsed * slots)) : 0;
    return {
      samplesPerSecond: rlElapsed > 0 ? this.samplesTrained / rlElapsed : 0,
      trainerIdleRatio: idle(this.trainerWaitMs),
      rolloutIdleRatio: this.gate ? idle(this.gate.waitedMs, this.rolloutSlots) : 0,
    };
  }

  private recordMetrics(r: StepRecord): void {
    const job = { job: this.job };
    const p = this.rates();
    this.metrics.steps.inc(job);
    this.metrics.samples.inc(job, r.episodes);
    this.metrics.reward.set(job, r.rewardMean);
    this.metrics.success.set({ ...job, split: 'train' }, r.successRate);
    this.metrics.staleness.set(job, r.staleness);
    this.metrics.samplesPerSecond.set(job, p.samplesPerSecond);
    this.metrics.trainerIdle.set(job, p.trainerIdleRatio);
    this.metrics.rolloutIdle.set(job, p.rolloutIdleRatio);
  }

  private setTrajectoryMetrics(t: TrajectoryCounts): void {
    const set = (state: string, v: number) => this.metrics.trajectories.set({ job: this.job, state }, v);
    set('produced', t.produced);
    set('judged', t.judged);
    set('trained', t.trained);
    for (const [reason, n] of Object.entries(t.dropped)) if (reason !== 'total') set(`dropped_${reason}`, n);
    set('lost', t.lost);
    set('duplicated', t.duplicated);
  }
}

/** The top-K logprobs of `response` after `prompt` at `temperature`, on a healthy engine of `engines`. */
function topLogprobsOn(
  engines: EnginePool<ActorHandle<RolloutEngine>>,
  prompt: number[],
  response: number[],
  temperature: number,
  k: number,
) {
  return engines.run(
    (engine) => engine.call('computeTopLogprobs', [...prompt, ...response], prompt.length, temperature, k),
    isPeerLoss,
  );
}

/**
 * The summary's held-out figures from a job's evaluations: the first (before any training), the
 * one that ended the warm start, and the last.
 */
/** The warm start's learning rate after `step` of its steps (train.warmup's schedule). */
export function warmupLr(spec: RLJobManifest['spec'], step: number): number | undefined {
  const w = spec.train.warmup;
  return w && lrAt(step, { baseLr: w.lr, schedule: w.schedule, totalSteps: w.steps, minLr: w.minLr });
}

export function heldoutSummary(evals: readonly EvalRecord[]): RLJobSummary['heldout'] {
  return {
    start: evals[0]?.success ?? null,
    afterWarmup: evals.find((e) => e.afterWarmup)?.success ?? null,
    end: evals.at(-1)?.success ?? null,
  };
}

/**
 * Why a checkpoint of job step `step` is named `step-${trainerStep}`: trainer checkpoints count
 * optimizer steps, warm-start SFT steps included (and RL steps that trained nothing excluded).
 * Empty when the two agree.
 */
export function checkpointNaming(step: number, warmupDone: number, trainerStep: number): string {
  if (trainerStep === step + warmupDone && (warmupDone === 0 || step === 0)) return '';
  if (warmupDone > 0 && trainerStep >= warmupDone) {
    return `optimizer step ${trainerStep}: ${warmupDone} warm-start + ${trainerStep - warmupDone} RL`;
  }
  return `optimizer step ${trainerStep}`;
}

/** ' (a; b)' of the parts that say something, '' when none does. */
function parenthesis(parts: string[]): string {
  const said = parts.filter(Boolean);
  return said.length > 0 ? ` (${said.join('; ')})` : '';
}

/** How often an evaluation logs how far it is (its first line says it began). */
const EVAL_PROGRESS_MS = 2000;

/**
 * An evaluation's progress lines: `0/67 held-out tasks` as it starts, then at most one every
 * EVAL_PROGRESS_MS (`job submit` draws its bar from them; a short evaluation logs only the first).
 */
export function evalProgress(
  total: number,
  what: string,
  log: (line: string) => void,
  now: () => number = () => performance.now(),
): { advance(): void } {
  let done = 0;
  let lastMs = now();
  if (total > 0) log(`0/${total} ${what}`);
  return {
    advance() {
      done = Math.min(done + 1, total);
      if (done < total && now() - lastMs >= EVAL_PROGRESS_MS) {
        lastMs = now();
        log(`${done}/${total} ${what}`);
      }
    },
  };
}

/** The step line's note on turns whose judge gave a NaN or infinite reward (dropped, counted as non_finite). */
function nonFinite(turns: number): string {
  return turns > 0 ? `, ${turns} turn(s) dropped: their judge's reward was not a finite number` : '';
}

/** 'onnxruntime/cpu ×2, onnxruntime/cuda' */
function tally(names: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const n of names) counts.set(n, (counts.get(n) ?? 0) + 1);
  return [...counts].map(([n, c]) => (c > 1 ? `${n} ×${c}` : n)).join(', ') || 'none';
}

/** The mean of a run's per-step figures; null when no step had one. */
function meanOrNull(values: readonly number[]): number | null {
  return values.length > 0 ? values.reduce((a, b) => a + b, 0) / values.length : null;
}
