/**
 * `GET /v1/models` and `GET /v1/models/:id`: the one model this server serves, as OpenAI lists
 * models. A request for any other model (here or in a completion body) is OpenAI's 404
 * `model_not_found`, naming the model that is served.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { fromZod, OpenAiHttpError } from './openai-errors.js';

export interface ModelsContext {
  model: { readonly id: string };
}

/** The route's path parameters (the router only ever gives strings; checked all the same). */
const modelParams = z.object({ id: z.string() });

/** A request named model `asked`; this server serves `served`. */
export function modelNotFound(served: string, asked: string): OpenAiHttpError {
  return new OpenAiHttpError(
    404,
    `The model '${asked}' does not exist; this server serves '${served}'`,
    'invalid_request_error',
    'model',
    'model_not_found',
  );
}

export function registerModels(app: FastifyInstance, c: ModelsContext): void {
  const { model } = c;
  // The model card's `created` is when this server came up: the model has no date of its own.
  const created = Math.floor(Date.now() / 1000);
  const card = () => ({ id: model.id, object: 'model', created, owned_by: 'clawray' });
  app.get('/v1/models', async () => ({ object: 'list', data: [card()] }));
  app.get('/v1/models/:id', async (request) => {
    const parsed = modelParams.safeParse(request.params);
    if (!parsed.success) throw fromZod(parsed.error);
    if (parsed.data.id !== model.id) throw modelNotFound(model.id, parsed.data.id);
    return card();
  });
}
