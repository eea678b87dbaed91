/**
 * The job's own held-out evaluations: before any training, after the warm start, every
 * `eval.everySteps` steps and at the end. Each records its result in the run's `evals`, sets
 * the held-out success gauge and logs a line (with progress lines while it plays, which `job
 * submit` draws its bar from).
 */
import type { GenerateRequest, GenerateResult } from '../../actors/rollout/rollout-engine.js';
import type { RLJobSpec } from '../manifest/schema.js';
import type { ChatCodec } from './chat-codec.js';
import type { Episode, Sampling } from './episodes.js';
import type { EvalResult } from './evaluation.js';
import { runHeldOutEval } from './heldout-eval.js';
import type { JobContext } from './job-context.js';

export interface EvaluatorPorts {
  /** Env tracks: the evaluation tasks it plays (the personal track counts its user's replies). */
  taskCount: number;
  /** One held-out evaluation of the policy; `advance` after each episode or reply it finished. */
  heldOut(advance: () => void): Promise<EvalResult | undefined>;
}

/** Runs one held-out evaluation (`afterWarmup`: the one that ends the warm start). */
export type Evaluate = (afterWarmup?: boolean) => Promise<void>;

export function jobEvaluator(ctx: JobContext, p: EvaluatorPorts): Evaluate {
  const { spec, run } = ctx;
  return async (afterWarmup = false) => {
    if (run.stopRequested || spec.eval.everySteps <= 0) return;
    const previous = run.phase;
    run.phase = 'evaluating';
    const at = afterWarmup ? 'after the warm start' : `step ${run.step}`;
    const personal = spec.track === 'personal';
    const progress = evalProgress(
      personal ? (spec.user ? spec.user.evalSessions * spec.user.turnsPerSession : 0) : p.taskCount,
      personal ? 'held-out replies' : 'held-out tasks',
      (line) => ctx.log(`eval ${at}: ${line}`),
      ctx.now,
    );
    const r = await p.heldOut(() => progress.advance());
    run.phase = previous;
    if (!r) return;
    run.evals.push({ step: run.step, ...r, ...(afterWarmup ? { afterWarmup } : {}) });
    ctx.metrics.success.set({ job: ctx.job, split: 'heldout' }, r.success);
    ctx.log(
      `eval ${at}: held-out ${personal ? 'preference score' : 'success'} ${r.success.toFixed(3)} (${r.episodes} ${personal ? 'sessions' : 'tasks'}, mean reward ${r.rewardMean.toFixed(3)}, ${r.seconds.toFixed(1)} s)`,
    );
    if (r.sample) ctx.log(`eval sample: ${r.sample}`);
  };
}

/** The held-out evaluation on the job's policy: its engines (env tracks) or its chat model (personal). */
export function heldOutOnPolicy(
  spec: RLJobSpec,
  d: {
    generate(request: GenerateRequest): Promise<GenerateResult>;
    codec: ChatCodec;
    taskIds: string[];
    play(taskId: string, sampling: Sampling, slot: number): Promise<Episode>;
  },
): EvaluatorPorts['heldOut'] {
  const personal = spec.track === 'personal';
  return (advance) =>
    runHeldOutEval(spec, {
      generate: async (request) => {
        const out = await d.generate(request);
        if (personal) advance();
        return out;
      },
      codec: d.codec,
      taskIds: d.taskIds,
      play: d.play,
      onEpisode: () => advance(),
    });
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
