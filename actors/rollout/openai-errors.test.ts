import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { CHAT_REQUEST_PARAMS, chatRequestSchema } from './chat-request.js';
import { fromZod, toOpenAiError, withApiNames } from './openai-errors.js';

const messages = [{ role: 'user', content: 'hi' }];

function refusal(body: unknown) {
  const parsed = chatRequestSchema.safeParse(body);
  if (parsed.success) throw new Error('expected a refusal');
  return fromZod(parsed.error, CHAT_REQUEST_PARAMS).body().error;
}

describe('request errors, as a client of the API reads them', () => {
  it('names the parameter an unknown one was probably meant to be', () => {
    expect(refusal({ model: 'm', messages, max_token: 16 })).toMatchObject({
      message: "Unrecognized request argument supplied: max_token (did you mean 'max_tokens'?)",
      param: 'max_token',
    });
    expect(refusal({ model: 'm', messages, temprature: 0.5 }).message).toContain(
      "did you mean 'temperature'?",
    );
    // Nothing close: said plainly.
    expect(refusal({ model: 'm', messages, best_of: 2 }).message).toBe(
      'Unrecognized request argument supplied: best_of (this server does not implement it)',
    );
  });

  it('suggests among other problems too', () => {
    expect(refusal({ model: 'm', max_token: 16 }).message).toMatch(
      /'messages': .*Unrecognized key: "max_token" \(max_token: did you mean 'max_tokens'\?\)/,
    );
  });

  it("speaks of the API's parameters, not the engine's fields", () => {
    const engine = new ConfigError(
      "prompt (2 tokens) + maxTokens (100000) exceeds the model's context of 1024",
    );
    expect(toOpenAiError(engine, 1024).body().error.message).toBe(
      "prompt (2 tokens) + max_tokens (100000) exceeds the model's context of 1024",
    );
    const withParam = new ConfigError('topK must be a whole number ≥ 1, got 0', {
      fields: { param: 'topK' },
    });
    expect(toOpenAiError(withParam, 1024).body().error).toMatchObject({
      message: 'top_k must be a whole number ≥ 1, got 0',
      param: 'top_k',
    });
    // Whole words only.
    expect(withApiNames('maxTokensPerStep and promptTokenIdsX stay')).toBe(
      'maxTokensPerStep and promptTokenIdsX stay',
    );
  });
});
