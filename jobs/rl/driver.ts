/**
 * The RL job's driver (what `clawray rljob run` runs as the job's entrypoint): it runs the job's
 * phases over one job context (job-context.ts), each a module of its own that takes its
 * collaborators as arguments:
 *
 *   bring-up (bring-up.ts; restore: checkpoints.ts; tasks: job-tasks.ts)
 *     → warm start (warm-start.ts: train.warmup's SFT, or the whole of a method-sft job)
 *     → RL (rl-phase.ts: source, judge loop and train loop; wired by rl-wiring.ts, judge-wiring.ts)
 *     → final eval (final-eval.ts) → summary (job-summary.ts)
 *
 * and owns the job's durable state. A restarted driver (the job's next attempt) continues its
 * own submission: trainer shards from its newest checkpoint, the ledger's last commit, and
 * whatever the streams still hold.
 */
import { basename, isAbsolute, resolve } from 'node:path';
import type { Registry } from 'prom-client';
import type { EnvPool } from '../../actors/envs/env-pool.js';
import type { Logger } from '../../common/logger.js';
import { loadPluginFunction } from '../../common/plugin-module.js';
import type { ActorHandle, Cluster } from '../../runtime/index.js';
import type { TrajectoryBuffer } from '../buffer/types.js';
import type { RLJobManifest } from '../manifest/schema.js';
import { bringUp, type JobParts } from './bring-up.js';
import { JobCheckpoints } from './checkpoints.js';
import type { RolloutFunction, Sampling } from './episodes.js';
import { runFinalEval } from './final-eval.js';
import {
  type DriverProgress,
  type JobContext,
  jobContext,
  progressOf,
  setTrajectoryMetrics,
} from './job-context.js';
import { heldOutOnPolicy, jobEvaluator } from './job-evaluator.js';
import { JobMetrics } from './job-metrics.js';
import { JobStateStore } from './job-state.js';
import { jobSummary, type RLJobSummary } from './job-summary.js';
import { loadJobTasks } from './job-tasks.js';
import { playOnPool } from './pool-episode.js';
import { RemoteChatModel } from './remote-chat-model.js';
import { runRlPhase } from './rl-phase.js';
import { rlWiring } from './rl-wiring.js';
import { oracleSamples } from './sft.js';
import type { TrajectoryCounts } from './trajectory-ledger.js';
import { runWarmStart } from './warm-start.js';
import { publishWeights } from './weight-publishing.js';

export type { DriverPhase, DriverProgress } from './job-context.js';
export type { EvalRecord, StepRecord } from './job-state.js';
export type { RLJobSummary } from './job-summary.js';
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

export class RLDriver {
  private readonly ctx: JobContext;
  private readonly checkpoints: JobCheckpoints;
  /** What the summary reads of the running job's parts, once they exist. */
  private parts?: JobParts;
  private failedSummary?: RLJobSummary;

  constructor(private readonly o: DriverOptions) {
    const spec = o.manifest.spec;
    this.ctx = jobContext({
      spec,
      job: o.manifest.metadata.name,
      submissionId: o.submissionId,
      log: o.log,
      metrics: new JobMetrics(o.registry),
    });
    const dir = spec.checkpoint.dir;
    this.checkpoints = new JobCheckpoints(
      this.ctx,
      new JobStateStore(
        isAbsolute(dir) ? dir : resolve(o.dataDir, dir),
        o.submissionId,
        spec.checkpoint.keep,
      ),
    );
  }

  get phase(): DriverProgress['phase'] {
    return this.ctx.run.phase;
  }

  /** Where the job is now (reported to the head for `job status`). */
  progress(): DriverProgress {
    return progressOf(this.ctx);
  }

  /** Finish the step in progress, checkpoint, and end (SIGTERM, `job stop`). */
  requestStop(): void {
    const { run } = this.ctx;
    if (run.stopRequested) return;
    run.stopRequested = true;
    run.phase = 'stopping';
    run.gate?.close();
    this.o.log('stop requested: finishing the current step');
  }

  /**
   * After run() threw: what the job had done until then (status 'failed', with the error), or
   * null when it failed before its actors were up.
   */
  partialSummary(): RLJobSummary | null {
    return this.failedSummary ?? null;
  }

  async run(): Promise<RLJobSummary> {
    const { ctx, o, checkpoints } = this;
    const { spec, run } = ctx;
    const parts = await bringUp(ctx, {
      cluster: o.cluster,
      manifest: o.manifest,
      workingDir: o.workingDir,
      dataDir: o.dataDir,
      checkpointDir: checkpoints.dir,
      buffers: o.buffers,
      registry: o.registry,
      lastCheckpointStep: () => checkpoints.trainerStep,
    });
    checkpoints.baseModel = parts.baseModel;
    const { actors, engines, trainers, ledger, codec } = parts;
    const publish = (force: boolean) => publishWeights(ctx, trainers, engines, force);
    const checkpoint = () => checkpoints.save(trainers, ledger);
    const checkpointIfDue = () => checkpoints.saveIfDue(trainers, ledger);
    try {
      this.parts = parts;
      run.resumedFrom = await checkpoints.restore(trainers, engines, ledger, o.resume);
      const rolloutFn = spec.plugins.rollout
        ? await loadPluginFunction<RolloutFunction>(spec.plugins.rollout, o.workingDir, 'rollout')
        : undefined;
      const { trainTasks, rlTasks, evalTasks } = await loadJobTasks(spec, parts.tasksPath);
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
      const evaluate = jobEvaluator(ctx, {
        taskCount: evalTasks.length,
        heldOut: heldOutOnPolicy(spec, {
          generate: (request) => remote.generate(request),
          codec,
          taskIds: evalTasks,
          play,
        }),
      });

      run.startedAt = ctx.now();
      if (run.evals.length === 0) await evaluate();
      await runWarmStart(ctx, {
        trainer: trainers,
        traces: (options) =>
          oracleSamples(actors.pools[0] as ActorHandle<EnvPool> | undefined, codec, trainTasks, options),
        oracleTasks: trainTasks.filter((t) => t.oracle.length > 0).length,
        publish,
        checkpoint,
        checkpointIfDue,
        evaluate,
      });
      await runRlPhase(ctx, {
        buffers: o.buffers,
        trainer: trainers,
        ledger,
        publish,
        wire: () =>
          rlWiring(spec, {
            workingDir: o.workingDir,
            submissionId: o.submissionId,
            remote,
            clusterToken: o.cluster.token,
            logger: o.logger,
            log: o.log,
            trainTasks: rlTasks,
            pools: actors.pools.length,
            play,
            judge: {
              actors,
              engines,
              judge: parts.judge,
              codec,
              registry: o.registry,
              onTeacherTurn: () => {
                run.teacherTurns++;
              },
            },
          }),
        evaluate: () => evaluate(),
        checkpointIfDue,
      });
      await runFinalEval(ctx, { evaluate: () => evaluate(), checkpoint });
      const trajectories = await ledger.counts();
      setTrajectoryMetrics(ctx, trajectories);
      return this.summary(run.stopRequested ? 'stopped' : 'completed', trajectories);
    } catch (err) {
      // What the job did before it failed (steps, evaluations) still belongs in its summary.
      const trajectories = await ledger.counts().catch(() => null);
      this.failedSummary = { ...this.summary('failed', trajectories), error: (err as Error).message };
      throw err;
    } finally {
      run.gate?.close();
      await parts.close();
    }
  }

  /** The summary of this run so far. */
  private summary(status: RLJobSummary['status'], trajectories: TrajectoryCounts | null): RLJobSummary {
    const { checkpoints } = this;
    return jobSummary(this.ctx, status, trajectories, {
      checkpointDir: checkpoints.dir,
      checkpoint: checkpoints.latest(),
      recoveries: {
        engines: this.parts?.engines.recoveries ?? 0,
        trainers: this.parts?.trainers.recoveries ?? 0,
      },
      runtime: this.parts?.actors.runtime ?? { rollout: [], trainer: [] },
      curves: () => checkpoints.drawCurves(),
    });
  }
}
