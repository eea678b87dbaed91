/**
 * The few lines `clawray job submit MANIFEST` ends with, made from the driver's final `summary
 * {…}` line: what the job reached (held-out start → after the warm start → end), how fast,
 * what became of its trajectories, where its checkpoint, learning curves and log are, and the
 * commands that serve and evaluate that checkpoint, as they can be pasted.
 */

import { duration } from './progress.js';
import type { RLJobSummary } from './rljob-submit.js';

/** How a finished RL job reads to a person: what it reached, where it is, what to run next. */
export interface SummaryContext {
  /** The manifest as the user named it, and their --set overrides. */
  manifest: string;
  set: readonly string[];
  /** The job's kept log. */
  logFile?: string;
  /** How the user runs clawray (`clawray`, `npx clawray`). */
  cli: string;
  /** Whether a path is on this machine (a remote cluster's checkpoint may not be). */
  exists(path: string): boolean;
  /** Quotes a word for the shell. */
  quote(word: string): string;
}

/** --set overrides `clawray eval` needs to evaluate as the job did (what to play and how). */
const EVAL_SETS =
  /^\s*spec\.(track|model|env|rollout|user|resources|plugins|train\.lora|eval\.(tasks|split))\b/;

export function humanSummary(
  status: string,
  s: RLJobSummary | null,
  submissionId: string,
  c: SummaryContext,
): string[] {
  const lines: string[] = [];
  const row = (name: string, value: string) => lines.push(`  ${name.padEnd(17)} ${value}`);
  if (s) {
    const kind = s.method === 'sft' ? 'SFT' : s.method === 'rl' ? 'RL' : s.method.toUpperCase();
    const warm = (s.warmupSteps ?? 0) > 0 ? ` after a ${s.warmupSteps}-step warm start` : '';
    const how =
      s.status === 'failed'
        ? `failed at step ${s.steps}${s.error ? `: ${s.error}` : ''}`
        : `${s.status}: ${s.steps} ${kind} step${s.steps === 1 ? '' : 's'}${warm} in ${duration(s.elapsedSeconds)}`;
    lines.push(`${s.job} (${submissionId}) ${how}`);
    const h = s.heldout;
    if (h && h.start !== null) {
      const f = (v: number) => v.toFixed(3);
      const points = [`${f(h.start)} at the start`];
      if (h.afterWarmup !== null) points.push(`${f(h.afterWarmup)} after the warm start`);
      if (h.end !== null) points.push(`${f(h.end)} at the end`);
      const from = h.afterWarmup ?? h.start;
      const gain =
        h.end !== null && s.steps > 0
          ? ` (${h.afterWarmup !== null ? `${kind} ` : ''}${signed(h.end - from)})`
          : '';
      row(
        s.metric === 'preference_score' ? 'preference score' : 'held-out success',
        `${points.join(' → ')}${gain}`,
      );
    }
    const t = s.trajectories;
    if (s.method !== 'sft' && s.steps > 0) {
      const dropped = t
        ? Object.entries(t.dropped)
            .filter(([reason, n]) => reason !== 'total' && n > 0)
            .map(([reason, n]) => `${reason} ${n}`)
        : [];
      const counts = t
        ? `; trajectories ${t.produced} produced, ${t.trained} trained, ${t.dropped.total} dropped${dropped.length ? ` (${dropped.join(', ')})` : ''}, ${t.lost} lost`
        : '';
      row('rollouts', `${s.samplesPerSecond.toFixed(2)} samples/s${counts}`);
    } else if (s.steps > 0) {
      row('training', `${s.samplesPerSecond.toFixed(2)} samples/s`);
    }
    // The trainer's logprobs against the engines': the same weights' (a numerics bug shows here)
    // and, when training ran ahead of the samples, how far the policy had moved.
    const drift = [
      ...(s.mismatch !== null
        ? [
            `mismatch ${s.mismatch.toExponential(1)}${s.mismatch > 1e-3 ? ' (above the 1e-3 goal: trainer and engines compute apart)' : ''}`,
          ]
        : []),
      ...(s.policyLag !== null
        ? [
            `policy lag ${s.policyLag.toExponential(1)} over ${(s.policyLagVersions ?? 0).toFixed(2)} versions`,
          ]
        : []),
    ];
    if (drift.length > 0) row('logprobs', drift.join('; '));
    // A trainer on a GPU backend says so, with its device ('tfjs/webgpu on NVIDIA H200 …'); the
    // CPU backends are the default and go unsaid (a GPU job that fell back is warned about in the log).
    const trainer = s.runtime?.trainer ?? [];
    if (trainer.some((r) => !/^tfjs\/(wasm|cpu)\b/.test(r))) row('trainer', tally(trainer));
    if (s.skippedSteps > 0) {
      row(
        'skipped steps',
        `${s.skippedSteps} (loss or gradients not finite: the weights stayed as they were)`,
      );
    }
  } else {
    lines.push(`${submissionId} ${status}: the driver wrote no summary (see its log)`);
  }
  const ckpt = s?.checkpoint ?? null;
  if (ckpt) {
    const naming =
      ckpt.trainerStep === ckpt.step
        ? `step ${ckpt.step}`
        : `step ${ckpt.step}; optimizer step ${ckpt.trainerStep}${(s?.warmupSteps ?? 0) > 0 && ckpt.trainerStep >= s!.warmupSteps ? `: ${s!.warmupSteps} warm-start + ${ckpt.trainerStep - s!.warmupSteps} ${s!.method === 'sft' ? 'SFT' : 'RL'}` : ''}`;
    const elsewhere = c.exists(ckpt.path) ? '' : ' (on the cluster node that ran the driver)';
    row('checkpoint', `${ckpt.path} (${naming})${elsewhere}`);
  }
  // The held-out and reward curves, drawn beside the checkpoints (open it in a browser).
  const svg = s?.curves?.svg ?? null;
  if (svg) row('curves', `${svg}${c.exists(svg) ? '' : ' (on the cluster node that ran the driver)'}`);
  if (c.logFile) row('job log', c.logFile);
  if (ckpt) {
    const path = c.quote(ckpt.path);
    const sets = c.set.filter((e) => EVAL_SETS.test(e)).flatMap((e) => ['--set', c.quote(e)]);
    row('serve it', `${c.cli} serve --model ${path}`);
    row('evaluate it', [c.cli, 'eval', path, '--manifest', c.quote(c.manifest), ...sets].join(' '));
    if (s && s.status !== 'completed') {
      row('resume it', `${c.cli} job submit ${c.quote(c.manifest)} --resume-from ${submissionId}`);
    }
  }
  return lines;
}

/** 'tfjs/webgpu on X ×2' for two shards alike. */
function tally(items: string[]): string {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(item, (counts.get(item) ?? 0) + 1);
  return [...counts].map(([item, n]) => (n > 1 ? `${item} ×${n}` : item)).join(', ');
}

function signed(v: number): string {
  return `${v >= 0 ? '+' : '−'}${Math.abs(v).toFixed(3)}`;
}
