/**
 * Judges inside the job (OpenClaw-RL's PRM engines): `judge.backend: llm` without `baseURL`
 * puts `resources.judge.replicas` rollout engines in the judge placement group, serving the
 * judge model (default the initial policy) and never receiving a weight update. Votes are chat
 * completions on them, templated and decoded here with the judge model's own files; the same
 * engines are the frozen OPD teacher when they serve the policy's initial weights.
 */

import type { LocalVoter } from '../../actors/judge/judge-panel.js';
import type { VoteOptions } from '../../actors/judge/judge-voter.js';
import type { JudgeMode } from '../../actors/judge/llm-judge.js';
import { LlmVoter } from '../../actors/judge/llm-judge.js';
import type { JudgeInput } from '../../actors/judge/prompts.js';
import type { JudgeVote } from '../../actors/judge/votes.js';
import type { RolloutEngine } from '../../actors/rollout/rollout-engine-actor.js';
import type { ActorHandle } from '../../runtime/index.js';
import type { ChatCodec } from './chat-codec.js';
import type { EnginePool } from './engine-pool.js';
import { isPeerLoss } from './failures.js';

export interface EngineVoterOptions {
  /** The judge model's name (for votes' records). */
  model: string;
  mode: JudgeMode;
  temperature: number;
  /** Tokens per vote; capped at the room the judge prompt leaves in the judge model's context. */
  maxTokens: number;
}

/** One vote per call, generated on the job's judge engines (round robin; a dead engine's vote goes elsewhere). */
export class EngineVoter implements LocalVoter {
  private readonly voter: LlmVoter;

  constructor(
    engines: EnginePool<ActorHandle<RolloutEngine>>,
    codec: ChatCodec,
    private readonly o: EngineVoterOptions,
  ) {
    this.voter = LlmVoter.serving(o, async (messages, sampling) => {
      const promptTokenIds = codec.encodeChat(messages.map((m) => ({ role: m.role, content: m.content })));
      const room = codec.maxContext - promptTokenIds.length;
      if (room < 1) {
        throw new Error(
          `the judge prompt is ${promptTokenIds.length} tokens; the judge model's context holds ${codec.maxContext}`,
        );
      }
      const result = await engines.run(
        (engine) =>
          engine.call('generate', {
            promptTokenIds,
            maxTokens: Math.min(sampling.maxTokens ?? room, room),
            temperature: sampling.temperature,
          }),
        isPeerLoss,
      );
      return result.text ?? codec.decode(result.tokenIds);
    });
  }

  async vote(input: JudgeInput, options: VoteOptions = {}): Promise<JudgeVote> {
    return this.voter.voteOn(input, options.mode ?? this.o.mode);
  }
}
