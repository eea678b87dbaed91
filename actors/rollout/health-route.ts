/**
 * `GET /healthz`: the liveness probe, with the model and the weights being served. It takes no
 * input and is the one route open without a key (load balancers probe it with none).
 */
import type { FastifyInstance } from 'fastify';

export const HEALTH_PATH = '/healthz';

export interface HealthContext {
  model: { readonly id: string; readonly weightVersion: number };
}

export function registerHealth(app: FastifyInstance, c: HealthContext): void {
  const { model } = c;
  app.get(HEALTH_PATH, async () => ({ status: 'ok', model: model.id, weightVersion: model.weightVersion }));
}
