/**
 * One episode of an env track: a lease on an env pool, the rollout engine's chat turns as
 * actions, the environment's replies as the next observations. Every turn keeps the engine's
 * exact prompt ids, sampled ids and logprobs and the weight version that produced them.
 */
import { randomUUID } from 'node:crypto';
import type { EnvPool } from '../../actors/envs/env-pool.js';
import type { Action, ChatMessage, ToolSchema } from '../../actors/envs/environment.js';
import { ContextLengthError } from '../../actors/rollout/rollout-engine.js';
import type { ChatResult, RolloutEngine } from '../../actors/rollout/rollout-engine-actor.js';
import { errorOfClass } from '../../common/errors.js';
import type { ActorHandle } from '../../runtime/index.js';
import type { RecordSampling } from '../buffer/types.js';

export interface Sampling {
  maxTokens: number;
  temperature: number;
  topP: number;
  seed?: number;
}

export interface TurnSample {
  /** The conversation the turn answered. */
  messages: ChatMessage[];
  promptTokenIds: number[];
  tokenIds: number[];
  logprobs: number[];
  weightVersion: number;
  /**
   * What the turn was sampled with (its logprobs are under softmax(logits / T)): the engine's own
   * report (`ChatResult.sampling`). A custom rollout that leaves it out gets the episode's
   * `sampling`, what it asked the engine for (records.ts).
   */
  sampling?: RecordSampling;
  /** The assistant message the turn became. */
  action: Action;
}

export interface Episode {
  taskId: string;
  turns: TurnSample[];
  /** The environment's final reward (its evaluation when the turn limit ended the episode). */
  reward: number;
  /** The environment reached `done` (rather than the turn limit). */
  done: boolean;
  info: Record<string, unknown>;
  /** The final observation's messages (the whole conversation). */
  messages: ChatMessage[];
  /** The reward plugin's value, which replaces the judge's outcome. */
  customReward?: number;
}

/** Context handed to a custom rollout function (plugins.rollout). */
export interface RolloutContext {
  taskId: string;
  sampling: Sampling;
  maxTurns: number;
  /** One chat turn on a rollout engine (the job's current policy). */
  chat(messages: ChatMessage[], tools: ToolSchema[]): Promise<ChatResult>;
  reset(): Promise<{ messages: ChatMessage[]; tools: ToolSchema[] }>;
  step(action: Action): Promise<{ messages: ChatMessage[]; reward: number; done: boolean; info: object }>;
  evaluate(): Promise<{ reward: number; info: object }>;
}

export type RolloutFunction = (context: RolloutContext) => Promise<Episode>;

/** The rollout engine's error for a conversation that no longer fits the model's context. */
export function isContextLengthError(err: unknown): boolean {
  return errorOfClass(err, ContextLengthError) !== undefined;
}

/**
 * The default rollout: chat until the environment says done or maxTurns is reached. A
 * conversation that outgrows the model's context ends there, scored by the environment's
 * evaluation (`info.truncated`); one whose first prompt does not fit is a configuration error.
 */
export const defaultRollout: RolloutFunction = async (ctx) => {
  let { messages, tools } = await ctx.reset();
  const turns: TurnSample[] = [];
  for (let t = 0; t < ctx.maxTurns; t++) {
    let result: ChatResult;
    try {
      result = await ctx.chat(messages, tools);
    } catch (err) {
      if (t === 0 || !isContextLengthError(err)) throw err;
      const final = await ctx.evaluate();
      return {
        taskId: ctx.taskId,
        turns,
        reward: final.reward,
        done: false,
        info: { ...final.info, truncated: true },
        messages,
      };
    }
    const action: Action = { content: result.content || null };
    if (result.toolCalls.length > 0) action.tool_calls = result.toolCalls;
    turns.push({
      messages,
      promptTokenIds: result.promptTokenIds,
      tokenIds: result.tokenIds,
      logprobs: result.logprobs,
      weightVersion: result.weightVersion,
      sampling: { ...result.sampling },
      action,
    });
    const step = await ctx.step(action);
    messages = step.messages;
    if (step.done) {
      return { taskId: ctx.taskId, turns, reward: step.reward, done: true, info: { ...step.info }, messages };
    }
  }
  const final = await ctx.evaluate();
  return { taskId: ctx.taskId, turns, reward: final.reward, done: false, info: { ...final.info }, messages };
};

export interface EpisodeOptions {
  pool: ActorHandle<EnvPool>;
  engine: ActorHandle<RolloutEngine>;
  taskId: string;
  sampling: Sampling;
  maxTurns: number;
  rollout?: RolloutFunction;
}

/** Leases an environment, plays the episode and always gives the lease back. */
export async function playEpisode(o: EpisodeOptions): Promise<Episode> {
  const lease = await o.pool.call('allocate', randomUUID());
  try {
    let tools: ToolSchema[] = [];
    const context: RolloutContext = {
      taskId: o.taskId,
      sampling: o.sampling,
      maxTurns: o.maxTurns,
      chat: (messages, turnTools) =>
        o.engine.call('chat', {
          messages: messages as never,
          tools: turnTools.length > 0 ? (turnTools as never) : undefined,
          maxTokens: o.sampling.maxTokens,
          temperature: o.sampling.temperature,
          topP: o.sampling.topP,
          seed: o.sampling.seed,
        }),
      reset: async () => {
        const obs = await o.pool.call('reset', lease.leaseId, o.taskId);
        tools = obs.tools;
        return { messages: obs.messages, tools };
      },
      step: async (action) => {
        const r = await o.pool.call('step', lease.leaseId, action);
        return { messages: r.observation.messages, reward: r.reward, done: r.done, info: r.info };
      },
      evaluate: () => o.pool.call('evaluate', lease.leaseId),
    };
    return await (o.rollout ?? defaultRollout)(context);
  } finally {
    await o.pool.call('release', lease.leaseId).catch(() => {
      // An expired lease is back in the pool already.
    });
  }
}
