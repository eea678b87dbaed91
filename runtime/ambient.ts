/**
 * Inside an actor process: the head address and token the node agent handed over, and the
 * one cluster client the process shares (for handles that arrive in arguments and for
 * `connect()` called from actor code).
 */
import { actorContext, insideActor } from './actor-context.js';
import { Cluster } from './cluster.js';

let settings: { address: string; token: string; jobId: string } | undefined;
let shared: Cluster | undefined;

export function setAmbientCluster(value: { address: string; token: string; jobId: string }): void {
  settings = value;
}

/** The process's shared client, or undefined outside an actor process. */
export function ambientCluster(): Cluster | undefined {
  if (!settings) return undefined;
  shared ??= new Cluster({
    address: settings.address,
    token: settings.token,
    jobId: settings.jobId,
    // What the actor creates belongs to the actor (this incarnation), as in Ray.
    ownerActor: () => {
      if (!insideActor()) return undefined;
      const { actorId, incarnation } = actorContext();
      return { actorId, incarnation };
    },
  });
  return shared;
}

/** The cluster token handed to this actor process, or undefined outside an actor process. */
export function ambientToken(): string | undefined {
  return settings?.token;
}
