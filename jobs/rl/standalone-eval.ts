/**
 * `clawray eval`'s work: a job's held-out evaluation outside the job. It creates the rollout
 * engines (and env pools) the manifest's evaluation uses, hands the engines a checkpoint's
 * weights the way the job's WeightPublisher did, and runs the job's own evaluation code
 * (`runHeldOutEval`: greedy, temperature 0, the same tasks, seeds and turn limits), so a
 * checkpoint evaluated here scores exactly what the job logged for the same weights.
 */
import { resolve } from 'node:path';
import type { EnvPool } from '../../actors/envs/env-pool.js';
import { loadTasks, loadTrack } from '../../actors/envs/tracks.js';
import type { RolloutEngine } from '../../actors/rollout/rollout-engine-actor.js';
import { WeightPublisher } from '../../actors/trainer/weight-publisher.js';
import { ConfigError } from '../../common/errors.js';
import { loadPluginFunction, pluginLocation } from '../../common/plugin-module.js';
import type { ActorHandle, Cluster } from '../../runtime/index.js';
import type { RLJobManifest } from '../manifest/schema.js';
import { ChatCodec } from './chat-codec.js';
import { checkpointWeights } from './checkpoint-weights.js';
import { engineOptions } from './engine-options.js';
import { EnginePool } from './engine-pool.js';
import { isContextLengthError, type RolloutFunction } from './episodes.js';
import { type EvalTarget, recordedEval } from './eval-target.js';
import type { EvalResult } from './evaluation.js';
import { evalTaskIds, runHeldOutEval } from './heldout-eval.js';
import { prepareModelDir } from './model-source.js';
import { playOnPool } from './pool-episode.js';
import { RemoteChatModel } from './remote-chat-model.js';

/** How long the eval's actors may wait for room on a busy cluster. */
const ACTOR_READY_TIMEOUT_MS = 600_000;

export interface StandaloneEvalOptions {
  /** The cluster, connected once the inputs are checked (a mistake starts nothing). */
  connect(): Promise<Cluster>;
  /** The job's manifest (or one made from flags): track, tasks, sampling, user, base model. */
  manifest: RLJobManifest;
  /** Where the manifest's relative paths resolve. */
  workingDir: string;
  /** Where an `init` model preset is written (the clawray home). */
  dataDir: string;
  target: EvalTarget;
  log(line: string): void;
  /** `done` of `total` evaluation episodes (personal: replies) finished. */
  onProgress?(done: number, total: number, label: string): void;
}

export interface StandaloneEvalResult extends EvalResult {
  track: string;
  metric: 'heldout_success' | 'preference_score';
  /** The checkpoint (or model) directory evaluated. */
  checkpoint: string;
  /** The task split evaluated (env tracks; personal: heldout). */
  split: RLJobManifest['spec']['eval']['split'];
  /** The job step of the checkpoint (its driver state), else the trainer step; null for a model dir. */
  step: number | null;
  /** What the job's own evaluation measured with these weights, when it recorded one. */
  recorded: { step: number; success: number; rewardMean: number } | null;
}

export async function runStandaloneEval(o: StandaloneEvalOptions): Promise<StandaloneEvalResult> {
  const { spec } = o.manifest;
  const personal = spec.track === 'personal';
  if (personal && !spec.user) {
    throw new ConfigError(
      "the personal track's evaluation is the simulated user's preference score: give --user-preference PREF, or a manifest with spec.user",
      { fields: { field: 'spec.user' } },
    );
  }
  const modelDir = prepareModelDir(spec.model, o.workingDir, o.dataDir);
  const codec = new ChatCodec(modelDir);
  // Personal replies are generated from token ids, which the engine refuses past the context
  // (env tracks' chat caps maxTokens at the room left): say so before starting anything.
  if (personal && spec.rollout.maxTokens >= codec.maxContext) {
    throw new ConfigError(
      `spec.rollout.maxTokens (${spec.rollout.maxTokens}) leaves no room for a prompt in the model's context of ${codec.maxContext} tokens: set it lower (--set spec.rollout.maxTokens=N)`,
      { fields: { field: 'spec.rollout.maxTokens', maxContext: codec.maxContext } },
    );
  }
  const { target } = o;
  const loaded =
    target.kind === 'checkpoint' ? await checkpointWeights(target.dir, modelDir, spec.train.lora) : undefined;
  if (loaded) {
    o.log(
      `checkpoint ${target.dir}: ${loaded.loraAdapters > 0 ? `${loaded.loraAdapters} LoRA adapter(s) merged into` : 'full weights for'} ${modelDir}`,
    );
  }

  // The tasks before any actor: a wrong file or an empty split is the user's to fix.
  const tasksPath =
    spec.eval.tasks && spec.eval.tasks !== 'builtin' ? resolve(o.workingDir, spec.eval.tasks) : 'builtin';
  let taskIds: string[] = [];
  if (!personal) {
    const tasks = await loadTasks(await loadTrack(spec.track), tasksPath);
    taskIds = evalTaskIds(tasks, spec.eval.split);
    if (taskIds.length === 0) {
      throw new ConfigError(`no tasks in split '${spec.eval.split}' of ${tasksPath}`, {
        fields: { field: 'spec.eval.split', tasks: tasksPath },
      });
    }
  }
  const rolloutFn = spec.plugins.rollout
    ? await loadPluginFunction<RolloutFunction>(spec.plugins.rollout, o.workingDir, 'rollout')
    : undefined;

  const cluster = await o.connect();
  const r = spec.resources;
  const placed: ActorHandle<unknown>[] = [];
  const create = async <T>(request: Parameters<Cluster['createActor']>[0]) => {
    const handle = await cluster.createActor<T>(request);
    placed.push(handle as ActorHandle<unknown>);
    return handle;
  };
  let pool: EnginePool<ActorHandle<RolloutEngine>> | undefined;
  try {
    const engines = await Promise.all(
      Array.from({ length: r.rollout.replicas }, () =>
        create<RolloutEngine>({
          module: 'clawray/rollout',
          className: 'RolloutEngine',
          args: [
            {
              modelDir,
              ...engineOptions(spec.model, r.rollout.cpus),
            },
          ],
          options: {
            numGpus: r.rollout.gpus,
            numCpus: r.rollout.cpus,
            memoryMb: r.rollout.memoryMb,
            maxRestarts: -1,
          },
        }),
      ),
    );
    const environmentModule = spec.plugins.environment
      ? (({ path, exportName }) => `${path}#${exportName}`)(
          pluginLocation(spec.plugins.environment, o.workingDir),
        )
      : undefined;
    const pools = personal
      ? []
      : await Promise.all(
          Array.from({ length: r.env.replicas }, () =>
            create<EnvPool>({
              module: 'clawray/envs',
              className: 'EnvPool',
              args: [
                {
                  track: spec.track as Exclude<typeof spec.track, 'personal'>,
                  tasks: tasksPath,
                  parallel: spec.env!.parallel,
                  seed: spec.env!.seed,
                  settings: spec.env!.settings,
                  environmentModule,
                  allocateTimeoutMs: ACTOR_READY_TIMEOUT_MS,
                },
              ],
              options: { numCpus: r.env.cpus, memoryMb: r.env.memoryMb, maxRestarts: -1 },
            }),
          ),
        );
    await Promise.all([...engines.map((e) => e.call('ready')), ...pools.map((p) => p.call('ready'))]);
    o.log(`actors ready: ${engines.length} rollout engine(s), ${pools.length} env pool(s)`);

    const publisher = new WeightPublisher(engines);
    pool = new EnginePool(engines, {
      publish: async (members, version, weights) => {
        await publisher.publish(version, weights, members);
      },
      log: o.log,
    });
    if (loaded && target.kind === 'checkpoint') {
      await pool.publish(target.trainerStep, loaded.weights);
      if (pool.healthyCount < engines.length) {
        throw new Error(
          `the checkpoint's weights could not be published to every rollout engine (see above)`,
        );
      }
    }
    const remote = new RemoteChatModel('eval', codec, pool);
    const enginePool = pool;
    const replies = personal ? spec.user!.evalSessions * spec.user!.turnsPerSession : 0;
    let replied = 0;
    o.log(
      personal
        ? `evaluating: ${spec.user!.evalSessions} held-out session(s) of the simulated user (${spec.user!.preference}), greedy`
        : `evaluating: ${taskIds.length} ${spec.eval.split} task(s) of ${spec.track} (${tasksPath}), greedy`,
    );
    const result = await runHeldOutEval(spec, {
      generate: async (request) => {
        const out = await remote.generate(request);
        o.onProgress?.(Math.min(++replied, replies), replies, 'replies');
        return out;
      },
      codec,
      taskIds,
      play: (taskId, sampling, slot) =>
        playOnPool(enginePool, pools, {
          taskId,
          sampling,
          slot,
          maxTurns: spec.rollout.maxTurns,
          rollout: rolloutFn,
        }),
      onEpisode: (episode, done) =>
        o.onProgress?.(done, taskIds.length, `${episode.taskId}: reward ${episode.reward.toFixed(3)}`),
    }).catch((err: unknown) => {
      // The job fails the same way; here it is the user's to fix, so it is said as such.
      if (!isContextLengthError(err)) throw err;
      throw new ConfigError(
        `${(err as Error).message}: the evaluation's first prompt does not fit the model: give it a longer context (spec.model.init.maxContext) or shorter prompts (spec.env.settings)`,
        { cause: err },
      );
    });
    // runHeldOutEval is undefined only without tasks or a simulated user, both refused above.
    if (!result) throw new Error('nothing was evaluated');
    const recorded = recordedEval(target);
    return {
      ...result,
      track: spec.track,
      metric: personal ? 'preference_score' : 'heldout_success',
      split: personal ? 'heldout' : spec.eval.split,
      checkpoint: target.dir,
      step: target.kind === 'checkpoint' ? (target.state?.step ?? target.trainerStep) : null,
      recorded: recorded
        ? { step: recorded.step, success: recorded.success, rewardMean: recorded.rewardMean }
        : null,
    };
  } finally {
    pool?.close();
    await Promise.allSettled(placed.map((h) => cluster.killActor(h, { noRestart: true })));
  }
}
