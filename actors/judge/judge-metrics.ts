/**
 * Prometheus metrics of judging. Votes are counted where they are produced (a `JudgeVoter`
 * actor, or an in-process `LlmJudge`); turn-level figures (agreement, turn latency, hints) where
 * the votes are combined (`JudgePanel`, `LlmJudge`). Inside an actor they go to prom-client's
 * default registry, which the node agent exports.
 *
 *   clawray_judge_votes_total{backend,result}        result: positive | negative | neutral | invalid
 *   clawray_judge_vote_latency_seconds{backend}      one vote, where it was produced
 *   clawray_judge_vote_call_errors_total             panel calls that never reached a voter's answer
 *   clawray_judge_turns_total{result}                result: positive | negative | neutral | no_valid_vote
 *   clawray_judge_turn_latency_seconds               all m votes of a turn, sent to combined
 *   clawray_judge_agreement_ratio                    share of a turn's valid votes equal to its majority
 *   clawray_judge_hints_total{result}                result: accepted | rejected (OPD turns)
 */
import { Counter, Histogram, type Registry, register } from 'prom-client';
import { LATENCY_BUCKETS_S } from '../../common/metrics.js';
import type { JudgeBackend, JudgeResult, JudgeScore, JudgeVote } from './votes.js';

/** LLM judges with thousands of reasoning tokens take tens of seconds, beyond LATENCY_BUCKETS_S. */
export const JUDGE_LATENCY_BUCKETS_S = [...LATENCY_BUCKETS_S, 30, 60, 120, 300];

/** With m votes agreement is k/m; 0.999 splits unanimous turns from the rest. */
export const AGREEMENT_BUCKETS = [0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.999, 1];

export type VoteResultLabel = 'positive' | 'negative' | 'neutral' | 'invalid';

export function voteResultLabel(score: JudgeScore | null): VoteResultLabel {
  if (score === 1) return 'positive';
  if (score === -1) return 'negative';
  if (score === 0) return 'neutral';
  return 'invalid';
}

function counter<L extends string>(registry: Registry, name: string, help: string, labelNames: L[]) {
  return (
    (registry.getSingleMetric(name) as Counter<L> | undefined) ??
    new Counter({ name, help, labelNames, registers: [registry] })
  );
}

function histogram<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: L[],
  buckets: number[],
) {
  return (
    (registry.getSingleMetric(name) as Histogram<L> | undefined) ??
    new Histogram({ name, help, labelNames, buckets, registers: [registry] })
  );
}

/**
 * The judge metrics of one registry. Every voter and panel of a process shares them: the
 * metrics are looked up in the registry before they are created, so any number of instances
 * can be built against it.
 */
export class JudgeMetrics {
  readonly votes: Counter<'backend' | 'result'>;
  readonly voteLatency: Histogram<'backend'>;
  readonly callErrors: Counter<string>;
  readonly turns: Counter<'result'>;
  readonly turnLatency: Histogram<string>;
  readonly agreement: Histogram<string>;
  readonly hints: Counter<'result'>;

  constructor(registry: Registry = register) {
    this.votes = counter(
      registry,
      'clawray_judge_votes_total',
      'Judge votes produced, by backend and result',
      ['backend', 'result'],
    );
    this.voteLatency = histogram(
      registry,
      'clawray_judge_vote_latency_seconds',
      'Time to produce one judge vote, by backend',
      ['backend'],
      JUDGE_LATENCY_BUCKETS_S,
    );
    this.callErrors = counter(
      registry,
      'clawray_judge_vote_call_errors_total',
      'Vote calls of a judge panel that failed or timed out before a voter answered (counted as invalid votes)',
      [],
    );
    this.turns = counter(
      registry,
      'clawray_judge_turns_total',
      'Turns judged, by majority result (no_valid_vote: every vote was invalid)',
      ['result'],
    );
    this.turnLatency = histogram(
      registry,
      'clawray_judge_turn_latency_seconds',
      'Time to judge one turn: all m votes in parallel, then the majority',
      [],
      JUDGE_LATENCY_BUCKETS_S,
    );
    this.agreement = histogram(
      registry,
      'clawray_judge_agreement_ratio',
      'Share of the valid votes of a turn that equal its majority score (turns with at least one valid vote)',
      [],
      AGREEMENT_BUCKETS,
    );
    this.hints = counter(
      registry,
      'clawray_judge_hints_total',
      'OPD turns whose votes gave a usable hint (accepted) or none (rejected)',
      ['result'],
    );
  }

  recordVote(backend: JudgeBackend, vote: JudgeVote): void {
    this.votes.inc({ backend, result: voteResultLabel(vote.score) });
    this.voteLatency.observe({ backend }, vote.latencyMs / 1000);
  }

  recordCallError(): void {
    this.callErrors.inc();
  }

  recordTurn(result: JudgeResult, opd: boolean): void {
    this.turns.inc({ result: result.valid === 0 ? 'no_valid_vote' : voteResultLabel(result.score) });
    this.turnLatency.observe(result.latencyMs / 1000);
    if (result.valid > 0) this.agreement.observe(result.agreement);
    if (opd) this.hints.inc({ result: result.hint ? 'accepted' : 'rejected' });
  }
}
