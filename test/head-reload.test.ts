/**
 * Head reload grace (issue 13): a head on Redis that is SIGKILLed and restarted must lose no
 * live node and no actor. Each trial kills the head while actors on three workers are being
 * called, keeps it down for a while (long enough, in some trials, for a reconnect backoff to
 * grow past the node timeout), restarts it on the same store and port, and then checks — after
 * a full node timeout more — that every node and actor is ALIVE in the same process and that no
 * call failed. `CLAWRAY_HEAD_RELOAD_TRIALS=10` raises the trial count.
 */
import { afterEach, describe, expect, inject, it } from 'vitest';
import type { ActorHandle } from '../runtime/index.js';
import { eventually, fixture, type Proc, TestCluster } from './helpers/processes.js';

const module = fixture('counter.mjs');
const NODE_TIMEOUT_MS = 3000;
const TRIALS = Number(process.env.CLAWRAY_HEAD_RELOAD_TRIALS ?? 3);
/** How long the head stays down, cycled over the trials: short, about one timeout, two. */
const DOWN_MS = [500, 3000, 6000];

/** When a worker last logged that it re-registered (its pino `time`), or 0. */
function lastReregisteredAt(worker: Proc): number {
  for (let i = worker.output.length - 1; i >= 0; i--) {
    const line = worker.output[i];
    if (!line.includes('re-registered with the head')) continue;
    try {
      return (JSON.parse(line) as { time: number }).time;
    } catch {
      // A line that is not JSON: keep looking.
    }
  }
  return 0;
}

describe('head reload grace', () => {
  let tc: TestCluster;
  afterEach(() => tc.teardown());

  it(
    `a SIGKILLed and restarted head loses no live node and no actor (${TRIALS} trials)`,
    async () => {
      tc = new TestCluster();
      await tc.startHead({
        store: inject('redisUrl'),
        clusterName: `reload${Date.now()}`,
        nodeTimeoutMs: NODE_TIMEOUT_MS,
      });
      const workers: Proc[] = [];
      for (let i = 0; i < 3; i++) workers.push(await tc.startWorker({ cpus: 2, poolSize: 0 }));
      const cluster = await tc.connect({ headRetryMs: 60_000 });
      const actors: ActorHandle[] = [];
      for (let i = 0; i < 6; i++) {
        actors.push(await cluster.createActor({ module, className: 'Counter', options: { numCpus: 1 } }));
      }
      const before = await cluster.status();
      const pids = new Map(before.actors.map((a) => [a.actorId, a.pid]));
      expect(new Set(before.actors.map((a) => a.nodeId)).size).toBe(3);

      // Every actor is called all through the trials; a call that fails is a lost actor.
      const counts = actors.map(() => 0);
      const failures: unknown[] = [];
      let calling = true;
      const callers = actors.map(async (actor, i) => {
        while (calling) {
          try {
            counts[i] = (await actor.call('inc', 1)) as number;
          } catch (err) {
            failures.push(err);
          }
          await new Promise((r) => setTimeout(r, 20));
        }
      });

      const reregisterMs: number[] = [];
      try {
        for (let trial = 0; trial < TRIALS; trial++) {
          await tc.head!.kill('SIGKILL');
          await new Promise((r) => setTimeout(r, DOWN_MS[trial % DOWN_MS.length]));
          const restartedAt = Date.now();
          await tc.restartHead();
          const listeningAt = Date.now();
          // Wait until every worker has re-registered with this head, then a full node timeout
          // more: a node the head was going to give up on would be DEAD by then.
          await eventually(() => workers.every((w) => lastReregisteredAt(w) > restartedAt), 30_000);
          reregisterMs.push(Math.max(...workers.map((w) => lastReregisteredAt(w) - listeningAt)));
          await new Promise((r) => setTimeout(r, NODE_TIMEOUT_MS + 500));
          const status = await cluster.status();
          const label = `trial ${trial + 1}`;
          expect(status.nodes.map((n) => `${n.nodeId}:${n.state}`).sort(), label).toEqual(
            workers.map((w) => `${w.nodeId}:ALIVE`).sort(),
          );
          for (const actor of status.actors) {
            expect(`${actor.actorId}:${actor.state}:${actor.pid}`, label).toBe(
              `${actor.actorId}:ALIVE:${pids.get(actor.actorId)}`,
            );
          }
          expect(failures, label).toEqual([]);
        }
      } finally {
        calling = false;
        await Promise.all(callers);
      }
      // Every actor kept answering, with its state intact.
      for (const [i, actor] of actors.entries()) expect(await actor.call('get')).toBe(counts[i]);
      console.log(
        `head reload: ${TRIALS} trials, workers re-registered ${reregisterMs.join(', ')} ms after the head listened`,
      );
    },
    30_000 + TRIALS * 20_000,
  );
});
