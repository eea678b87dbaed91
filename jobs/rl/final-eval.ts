/**
 * The job's last phase before its summary: a held-out evaluation of the final weights (unless
 * the last step was just evaluated, or a stop cut the job short), then the final checkpoint,
 * which holds that evaluation too.
 */
import type { JobContext } from './job-context.js';

export interface FinalEvalPorts {
  evaluate(): Promise<void>;
  /** Writes the final checkpoint (only the driver state when the weights were just saved). */
  checkpoint(): Promise<void>;
}

export async function runFinalEval(ctx: JobContext, p: FinalEvalPorts): Promise<void> {
  const { run } = ctx;
  const lastEval = run.evals.at(-1);
  if (!run.stopRequested && (!lastEval || lastEval.step !== run.step)) await p.evaluate();
  await p.checkpoint();
  run.phase = 'done';
}
