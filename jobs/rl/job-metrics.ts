/**
 * Prometheus metrics of an RL job, set by its driver (`clawray rljob run`, which serves them on
 * `--metrics-port`). Every series carries the job's name as `job`.
 *
 *   clawray_job_steps_total{job}                    optimizer steps taken
 *   clawray_job_skipped_steps_total{job}            steps the trainer skipped: loss or gradients not finite
 *   clawray_job_samples_total{job}                  trajectories trained on
 *   clawray_job_samples_per_second{job}             trained trajectories per second, since the job started
 *   clawray_job_reward_mean{job}                    mean reward of the last step's batch
 *   clawray_job_success_ratio{job,split}            share of episodes solved: train (last batch), heldout (last eval)
 *   clawray_job_staleness_versions{job}             mean policy-version lag of the last batch's samples
 *   clawray_job_logprob_abs_diff{job}               mean |trainer − rollout logprob| of the last step (goal ≤ 1e-3)
 *   clawray_job_tis_weight{job}                     mean truncated importance weight of the last step (train.tis)
 *   clawray_job_trainer_idle_ratio{job}             share of wall time the trainer waited for samples
 *   clawray_job_rollout_idle_ratio{job}             share of rollout slot time spent waiting (staleness gate, weights)
 *   clawray_job_buffer_lag_entries{job,stage}       entries appended but not yet consumed (stage: judge | train)
 *   clawray_job_trajectories{job,state}             trajectory accounting at the last checkpoint: produced, judged,
 *                                                   trained, dropped_<reason>, lost, duplicated
 */
import { Counter, Gauge, type Registry, register } from 'prom-client';

export const JOB_METRIC_NAMES = [
  'clawray_job_steps_total',
  'clawray_job_skipped_steps_total',
  'clawray_job_samples_total',
  'clawray_job_samples_per_second',
  'clawray_job_reward_mean',
  'clawray_job_success_ratio',
  'clawray_job_staleness_versions',
  'clawray_job_logprob_abs_diff',
  'clawray_job_tis_weight',
  'clawray_job_trainer_idle_ratio',
  'clawray_job_rollout_idle_ratio',
  'clawray_job_buffer_lag_entries',
  'clawray_job_trajectories',
] as const;

function metric<T>(registry: Registry, name: string, make: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? make();
}

export class JobMetrics {
  readonly steps: Counter<'job'>;
  readonly skippedSteps: Counter<'job'>;
  readonly samples: Counter<'job'>;
  readonly samplesPerSecond: Gauge<'job'>;
  readonly reward: Gauge<'job'>;
  readonly success: Gauge<'job' | 'split'>;
  readonly staleness: Gauge<'job'>;
  readonly mismatch: Gauge<'job'>;
  readonly policyLag: Gauge<'job'>;
  readonly tisWeight: Gauge<'job'>;
  readonly distillKl: Gauge<'job'>;
  readonly trainerIdle: Gauge<'job'>;
  readonly rolloutIdle: Gauge<'job'>;
  readonly bufferLag: Gauge<'job' | 'stage'>;
  readonly trajectories: Gauge<'job' | 'state'>;

  constructor(registry: Registry = register) {
    const counter = (name: string, help: string) =>
      metric(registry, name, () => new Counter({ name, help, labelNames: ['job'], registers: [registry] }));
    const gauge = <L extends string>(name: string, help: string, labelNames: L[]) =>
      metric(registry, name, () => new Gauge<L>({ name, help, labelNames, registers: [registry] }));
    this.steps = counter('clawray_job_steps_total', 'Optimizer steps taken by the job');
    this.skippedSteps = counter(
      'clawray_job_skipped_steps_total',
      'Steps the trainer did not take because their loss or gradients were not finite (the weights stayed as they were)',
    );
    this.samples = counter('clawray_job_samples_total', 'Trajectories the job has trained on');
    this.samplesPerSecond = gauge(
      'clawray_job_samples_per_second',
      'Trained trajectories per second since the job started',
      ['job'],
    );
    this.reward = gauge('clawray_job_reward_mean', "Mean reward of the last step's batch", ['job']);
    this.success = gauge(
      'clawray_job_success_ratio',
      'Share of episodes solved: split=train for the last batch, split=heldout for the last evaluation',
      ['job', 'split'],
    );
    this.staleness = gauge(
      'clawray_job_staleness_versions',
      "Mean policy-version lag of the last batch's samples behind the policy they trained",
      ['job'],
    );
    this.mismatch = gauge(
      'clawray_job_mismatch',
      'Train–inference mismatch of the last step: mean |trainer − rollout logprob| of tokens scored with the weights that drew them, both at the sampling temperature (goal ≤ 1e-3)',
      ['job'],
    );
    this.policyLag = gauge(
      'clawray_job_policy_lag',
      "Policy lag of the last step: mean |trainer − rollout logprob| of its stale samples' tokens under the newer weights (train.async)",
      ['job'],
    );
    this.tisWeight = gauge(
      'clawray_job_tis_weight',
      "Mean truncated importance weight min(exp(proximal − rollout logprob), cap) of the last step's tokens (train.tis)",
      ['job'],
    );
    this.distillKl = gauge(
      'clawray_job_distill_kl',
      'Mean top-K reverse KL(student ‖ teacher) per distilled token of the last step (train.distillTopK)',
      ['job'],
    );
    this.trainerIdle = gauge(
      'clawray_job_trainer_idle_ratio',
      'Share of the wall time the trainer spent waiting for samples',
      ['job'],
    );
    this.rolloutIdle = gauge(
      'clawray_job_rollout_idle_ratio',
      'Share of rollout slot time spent waiting (staleness bound, weight updates) instead of generating',
      ['job'],
    );
    this.bufferLag = gauge(
      'clawray_job_buffer_lag_entries',
      'Entries appended to a stage of the trajectory buffer and not yet consumed by it',
      ['job', 'stage'],
    );
    this.trajectories = gauge(
      'clawray_job_trajectories',
      'Trajectories by state at the last checkpoint: produced, judged, trained, dropped_<reason>, lost, duplicated',
      ['job', 'state'],
    );
  }
}
