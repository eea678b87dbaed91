import { describe, expect, it } from 'vitest';
import type { TurnRecord } from '../../actors/rollout/capture-recorder.js';
import { ConfigError } from '../../common/errors.js';
import { parseTrajectoryRecord } from '../buffer/types.js';
import { turnToRecord } from './personal-source.js';

const turn = (temperature: number | null): TurnRecord =>
  ({
    session_id: 's1',
    turn: 2,
    request_id: 'chatcmpl-1',
    messages: [{ role: 'user', content: 'hi' }],
    prompt_token_ids: [1, 2],
    response_token_ids: [3],
    response_logprobs: [-0.5],
    response_text: 'ok',
    next_state: { role: 'user', content: 'thanks' },
    weight_version: 4,
    sampling: { temperature, top_p: 1, top_k: 0, max_tokens: 16, seed: 7 },
  }) as TurnRecord;

describe('turnToRecord', () => {
  it('keeps the sampling the engine reports it drew the turn with, as a valid typed record', () => {
    const r = turnToRecord(turn(0.6));
    expect(r).toMatchObject({ sessionId: 's1', turn: 2, weightVersion: 4, tokenIds: [3], logprobs: [-0.5] });
    expect(r).toMatchObject({
      sampling: { temperature: 0.6, topP: 1, topK: 0, seed: 7 },
      group: { id: 's1:2:chatcmpl-1', size: 1, index: 0 },
      episode: { id: 's1:2:chatcmpl-1', turns: 1, finalMessages: null },
      task: null,
      requestId: 'chatcmpl-1',
      responseText: 'ok',
      judgement: null,
      teacher: null,
    });
    expect(r.extra).toBeUndefined();
    expect(parseTrajectoryRecord(r)).toEqual(r);
  });

  it('refuses a turn without it rather than guessing', () => {
    expect(() => turnToRecord(turn(null))).toThrow(ConfigError);
    expect(() => turnToRecord(turn(null))).toThrow(
      'captured turn s1:2:chatcmpl-1: sampling.temperature is missing',
    );
  });
});
