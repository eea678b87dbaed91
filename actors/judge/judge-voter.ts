/**
 * `JudgeVoter`: one judge vote per call, as an actor. Its options pick the backend:
 *
 *   { backend: 'llm', baseURL, model, mode: 'prm' | 'opd', ... }   an OpenAI-compatible endpoint
 *   { backend: 'onnx-prm', modelDir, threshold?, positiveLabel? }   an ONNX sequence classifier
 *   { backend: 'rule', rule: 'boxed-answer' | 'tests-passed' | 'env-reward' }   an episode's outcome
 *   { backend: 'rule', rule: 'toolcall-step' }                                 one turn (step-rules.ts)
 *
 * m votes of a turn are m `vote` calls spread over voter replicas and combined by the caller
 * (`JudgePanel`). A backend failure (network, HTTP, timeout, model) is an invalid vote
 * (score null with `error`), never an exception; a malformed input is the caller's bug and
 * throws ConfigError. Options are checked when the actor is constructed.
 *
 *   const voter = await cluster.createActor<JudgeVoter>({ module: 'clawray/judge', className: 'JudgeVoter',
 *     args: [{ backend: 'llm', baseURL: 'http://10.0.0.5:30000/v1', model: 'prm' }] });
 *   const vote = await voter.remote.vote({ messages, response, nextState });
 */
import type { Registry } from 'prom-client';
import { z } from 'zod';
import { ConfigError } from '../../common/errors.js';
import { parseWith } from '../../runtime/index.js';
import { EXECUTION_PROVIDERS } from '../models/execution-provider.js';
import { JudgeMetrics } from './judge-metrics.js';
import { type JudgeMode, LlmVoter } from './llm-judge.js';
import { OnnxPrm, type PrmDir, readPrmDir } from './onnx-prm.js';
import type { JudgeInput } from './prompts.js';
import { applyRule, RULES } from './rule-verifiers.js';
import { applyStepRule, STEP_RULES, type StepRuleName } from './step-rules.js';
import type { JudgeBackend, JudgeVote } from './votes.js';

const llmOptionsSchema = z
  .object({
    backend: z.literal('llm'),
    /** Server root or API base of any OpenAI-compatible server (a rollout engine of the job, or external). */
    baseURL: z.url({
      protocol: /^https?$/,
      error: (issue) => (issue.code === 'invalid_format' ? 'must be an http(s) URL' : undefined),
    }),
    model: z.string().min(1),
    apiKey: z.string().min(1).optional(),
    /** Name of an environment variable of the actor process holding the key, so it is not sent as an argument. */
    apiKeyEnv: z.string().min(1).optional(),
    temperature: z.number().min(0).max(2).optional(),
    maxTokens: z.number().int().positive().optional(),
    timeoutMs: z.number().int().positive().optional(),
    mode: z.enum(['prm', 'opd']).default('prm'),
  })
  .strict()
  .refine((o) => o.apiKey === undefined || o.apiKeyEnv === undefined, {
    path: ['apiKeyEnv'],
    message: 'give apiKey or apiKeyEnv, not both',
  });

const onnxPrmOptionsSchema = z
  .object({
    backend: z.literal('onnx-prm'),
    modelDir: z.string().min(1),
    threshold: z.number().min(0).max(1).optional(),
    positiveLabel: z.union([z.string().min(1), z.number().int().nonnegative()]).optional(),
    maxLength: z.number().int().positive().optional(),
    provider: z.enum(['auto', ...EXECUTION_PROVIDERS]).optional(),
  })
  .strict();

const ruleOptionsSchema = z
  .object({
    backend: z.literal('rule'),
    rule: z.enum([...RULES, ...STEP_RULES]),
  })
  .strict();

export const judgeVoterOptionsSchema = z.discriminatedUnion('backend', [
  llmOptionsSchema,
  onnxPrmOptionsSchema,
  ruleOptionsSchema,
]);

export type JudgeVoterOptions = z.input<typeof judgeVoterOptionsSchema>;
export type ParsedJudgeVoterOptions = z.output<typeof judgeVoterOptionsSchema>;

/** Parses voter options; a mistake is a ConfigError naming the field. */
export function parseJudgeVoterOptions(options: unknown): ParsedJudgeVoterOptions {
  return parseWith(judgeVoterOptionsSchema, options, 'judge voter options');
}

const judgeInputSchema = z.object({
  messages: z.array(z.looseObject({ role: z.string() })),
  response: z.string(),
  nextState: z.looseObject({ role: z.string(), content: z.unknown() }).nullish(),
  reference: z
    .object({
      answer: z.string().optional(),
      testsPassed: z.number().optional(),
      testsTotal: z.number().optional(),
      reward: z.number().optional(),
    })
    .optional(),
});

/** Throws ConfigError naming the first bad field of a judge input. */
export function checkJudgeInput(input: unknown): asserts input is JudgeInput {
  const result = judgeInputSchema.safeParse(input);
  if (result.success) return;
  const issue = result.error.issues[0];
  const field = issue.path.length > 0 ? issue.path.join('.') : '(input)';
  throw new ConfigError(`invalid judge input: ${field}: ${issue.message}`, { fields: { field } });
}

export interface VoteOptions {
  /** PRM verdict or OPD hint judgement; default the voter's mode (LLM), 'prm' otherwise. */
  mode?: JudgeMode;
}

/** What a voter serves, once loaded. */
export interface JudgeVoterInfo {
  backend: JudgeBackend;
  mode?: JudgeMode;
  model?: string;
  url?: string;
  labels?: string[];
  positiveLabel?: string;
  threshold?: number;
  provider?: string;
  rule?: string;
}

/** In-process extras that cannot travel as actor arguments. */
export interface JudgeVoterLocal {
  /** Where votes are counted (default prom-client's default registry, which the node agent exports). */
  registry?: Registry;
  fetch?: typeof fetch;
}

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export class JudgeVoter {
  readonly backend: JudgeBackend;
  private readonly options: ParsedJudgeVoterOptions;
  private readonly metrics: JudgeMetrics;
  private readonly llm?: LlmVoter;
  private readonly prm?: Promise<OnnxPrm>;

  constructor(options: JudgeVoterOptions, local: JudgeVoterLocal = {}) {
    const o = parseJudgeVoterOptions(options);
    this.options = o;
    this.backend = o.backend;
    this.metrics = new JudgeMetrics(local.registry);
    if (o.backend === 'llm') {
      let apiKey = o.apiKey;
      if (o.apiKeyEnv !== undefined) {
        apiKey = process.env[o.apiKeyEnv];
        if (!apiKey) {
          throw new ConfigError(`invalid judge voter options: apiKeyEnv: ${o.apiKeyEnv} is not set`, {
            fields: { field: 'apiKeyEnv' },
          });
        }
      }
      this.llm = new LlmVoter({ ...o, apiKey, fetch: local.fetch });
    } else if (o.backend === 'onnx-prm') {
      // Read now, so a bad directory fails the actor's creation; the session loads in the background.
      const spec: PrmDir = readPrmDir(o);
      this.prm = OnnxPrm.load(o, spec);
      this.prm.catch(() => {
        // Reported by ready() and as invalid votes.
      });
    }
  }

  /** Waits for the backend to load (the ONNX session); rejects with the load error. */
  async ready(): Promise<JudgeVoterInfo> {
    const o = this.options;
    switch (o.backend) {
      case 'llm':
        return { backend: 'llm', mode: o.mode, model: o.model, url: this.llm!.url };
      case 'onnx-prm': {
        const prm = await this.prm!;
        return {
          backend: 'onnx-prm',
          labels: prm.labels,
          positiveLabel: prm.positiveLabel,
          threshold: prm.spec.threshold,
          provider: prm.provider,
        };
      }
      case 'rule':
        return { backend: 'rule', rule: o.rule };
    }
  }

  /** One vote on one turn. Backend failures give an invalid vote; only a malformed input throws. */
  async vote(input: JudgeInput, options: VoteOptions = {}): Promise<JudgeVote> {
    checkJudgeInput(input);
    const t0 = performance.now();
    const mode = options.mode ?? (this.options.backend === 'llm' ? this.options.mode : 'prm');
    let vote: JudgeVote;
    try {
      vote = await this.produce(input, mode);
    } catch (e) {
      vote = { score: null, error: errorMessage(e), backend: this.backend, latencyMs: 0 };
      if (mode === 'opd') vote.hint = null;
    }
    vote.latencyMs = performance.now() - t0;
    this.metrics.recordVote(this.backend, vote);
    return vote;
  }

  private async produce(input: JudgeInput, mode: JudgeMode): Promise<JudgeVote> {
    const o = this.options;
    if (o.backend === 'llm') return this.llm!.voteOn(input, mode);
    if (mode === 'opd') {
      // Hints need a generative judge; a classifier or a rule has nothing to say in hindsight.
      throw new Error(`the ${o.backend} backend gives no OPD hints; use an llm voter`);
    }
    if (o.backend === 'onnx-prm') {
      if (!input.nextState) throw new Error('no next state to judge the turn by');
      const { probability, score } = await (await this.prm!).scoreTurn(input);
      return { score, probability, backend: 'onnx-prm', latencyMs: 0 };
    }
    if ((STEP_RULES as readonly string[]).includes(o.rule)) {
      const { score, reason } = applyStepRule(o.rule as StepRuleName, input);
      return { score, text: reason, backend: 'rule', latencyMs: 0 };
    }
    const { score, reward } = applyRule(o.rule as (typeof RULES)[number], input.response, input.reference);
    return { score, reward, backend: 'rule', latencyMs: 0 };
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await (await this.prm?.catch(() => undefined))?.release();
  }
}
