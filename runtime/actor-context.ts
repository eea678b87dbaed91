/** What an actor can learn about where it runs (set by the host process at start). */
import { ConfigError } from '../common/errors.js';

export interface ActorContext {
  actorId: string;
  nodeId: string;
  /** Physical GPU ids assigned to this actor, in rank order (`CUDA_VISIBLE_DEVICES`). */
  gpuIds: number[];
  jobId: string;
  name: string;
  namespace: string;
  incarnation: number;
}

let current: ActorContext | undefined;

export function setActorContext(context: ActorContext): void {
  current = Object.freeze({ ...context, gpuIds: [...context.gpuIds] });
}

/** Inside an actor: its id, node, GPUs and job. Throws anywhere else. */
export function actorContext(): ActorContext {
  if (!current) {
    throw new ConfigError(
      'actorContext() is only available inside an actor (in a method or the constructor)',
    );
  }
  return current;
}

export function insideActor(): boolean {
  return current !== undefined;
}
