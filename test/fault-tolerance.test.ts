import { afterEach, describe, expect, inject, it } from 'vitest';
import { ActorDiedError, ActorUnavailableError, AuthError } from '../common/errors.js';
import { Cluster } from '../runtime/index.js';
import { eventually, fixture, pidAlive, TestCluster } from './helpers/processes.js';

const module = fixture('counter.mjs');

describe('failures', () => {
  let tc: TestCluster;
  afterEach(() => tc.teardown());

  async function twoNodes() {
    tc = new TestCluster();
    await tc.startHead();
    const a = await tc.startWorker({ labels: { role: 'first' } });
    const b = await tc.startWorker({ labels: { role: 'second' } });
    return { a, b, cluster: await tc.connect() };
  }

  it('makes an actor dead when its only eligible node dies, even with restarts left', async () => {
    const { a, cluster } = await twoNodes();
    const actor = await cluster.createActor({
      module,
      className: 'Worker',
      options: { maxRestarts: 1, maxTaskRetries: 1, labelSelector: { role: 'first' } },
    });
    const pid = (await actor.call('pid')) as number;
    const call = actor.call('slow', 1500).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 200));
    await a.kill('SIGKILL');
    const err = (await call) as Error;
    expect(err).toBeInstanceOf(ActorDiedError);
    expect(err.message).toContain('role');
    await eventually(() => !pidAlive(pid));
  });

  it('moves a restartable actor to a live node and resends retriable in-flight calls', async () => {
    const { a, b, cluster } = await twoNodes();
    const mover = await cluster.createActor({
      module,
      className: 'Worker',
      options: { maxRestarts: 1, maxTaskRetries: 1 },
    });
    const victimNode = (await cluster.listActors()).find((x) => x.actorId === mover.actorId)!.nodeId;
    const [victim, survivor] = victimNode === a.nodeId ? [a, b] : [b, a];
    const before = (await mover.call('pid')) as number;
    const inFlight = mover.call('slow', 2000) as Promise<{ pid: number }>;
    await new Promise((r) => setTimeout(r, 200));
    await victim.kill('SIGKILL');
    const result = await inFlight;
    expect(result.pid).not.toBe(before);
    const after = (await cluster.listActors()).find((x) => x.actorId === mover.actorId)!;
    expect(after.state).toBe('ALIVE');
    expect(after.nodeId).toBe(survivor.nodeId);
    expect(after.numRestarts).toBe(1);
    // The worker's actor processes died with it.
    await eventually(() => !pidAlive(before));
    // Its restart budget is spent: another death is final.
    await survivor.kill('SIGKILL');
    await expect(mover.call('slow', 1)).rejects.toBeInstanceOf(ActorDiedError);
  });

  it('fails in-flight calls without retries with ActorUnavailableError while the actor restarts', async () => {
    tc = new TestCluster();
    await tc.startHead();
    await tc.startWorker();
    const cluster = await tc.connect();
    const actor = await cluster.createActor({ module, className: 'Worker', options: { maxRestarts: 2 } });
    const pid = (await actor.call('pid')) as number;
    const inFlight = actor.call('slow', 3000).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 200));
    process.kill(pid, 'SIGKILL');
    expect(await inFlight).toBeInstanceOf(ActorUnavailableError);
    // New calls wait for the restarted actor.
    const newPid = (await actor.call('pid')) as number;
    expect(newPid).not.toBe(pid);
    // A crash from inside the actor (process.exit) restarts it too.
    await actor.call('crash', 3);
    await eventually(async () => ((await actor.call('pid')) as number) !== newPid);
    const view = (await cluster.listActors()).find((x) => x.actorId === actor.actorId)!;
    expect(view.numRestarts).toBe(2);
    // No restarts left: the next crash is final and says why.
    await actor.call('crash', 4);
    const err = (await eventually(
      () =>
        actor.call('pid').then(
          () => undefined,
          (e: unknown) => e,
        ),
      10_000,
    )) as Error;
    expect(err).toBeInstanceOf(ActorDiedError);
    expect(err.message).toMatch(/exited with code 4|is dead/);
  });

  it('ends an actor whose method hits a WebAssembly trap, and restarts it', async () => {
    tc = new TestCluster();
    await tc.startHead();
    await tc.startWorker();
    const cluster = await tc.connect();
    const actor = await cluster.createActor({ module, className: 'Worker', options: { maxRestarts: 1 } });
    const pid = (await actor.call('pid')) as number;
    // The caller sees the actor die, not a RuntimeError from a process whose memory is suspect.
    const err = await actor.call('trap').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ActorUnavailableError);
    await eventually(() => !pidAlive(pid));
    expect(await actor.call('pid')).not.toBe(pid);
    const view = (await cluster.listActors()).find((x) => x.actorId === actor.actorId)!;
    expect(view.numRestarts).toBe(1);
  });

  it('declares a SIGKILLed worker dead within 3 s and fails its non-restartable actors', async () => {
    tc = new TestCluster();
    await tc.startHead();
    const w = await tc.startWorker();
    const cluster = await tc.connect();
    const actor = await cluster.createActor({ module, className: 'Worker' });
    const inFlight = actor.call('slow', 10_000).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 100));
    await w.kill('SIGKILL');
    // The default timeout is 3 s; allow as much again for a loaded machine.
    await eventually(async () => (await cluster.status()).nodes[0].state === 'DEAD', 6000, 25);
    expect(await inFlight).toBeInstanceOf(ActorDiedError);
    await expect(actor.call('pid')).rejects.toThrow(/was lost: node missed heartbeats/);
  });

  it('keeps serving calls while the head is down and reconciles after a restart on Redis', async () => {
    tc = new TestCluster();
    const clusterName = `ft${Date.now()}`;
    await tc.startHead({ store: inject('redisUrl'), clusterName });
    const w = await tc.startWorker({ gpus: 2 });
    const cluster = await tc.connect({ headRetryMs: 20_000 });
    const counter = await cluster.createActor({
      module,
      className: 'Counter',
      options: { name: 'survivor', numGpus: 1 },
    });
    await counter.call('inc', 1);
    const before = (await cluster.listActors()).find((a) => a.actorId === counter.actorId)!;

    await tc.head!.kill('SIGKILL');
    // Calls never pass through the head.
    for (let i = 0; i < 50; i++) await counter.call('inc', 1);
    expect(await counter.call('get')).toBe(51);

    await tc.restartHead();
    const after = await eventually(async () => {
      const status = await cluster.status();
      const node = status.nodes.find((n) => n.nodeId === w.nodeId);
      const actor = status.actors.find((a) => a.actorId === counter.actorId);
      return node?.state === 'ALIVE' && actor?.state === 'ALIVE' ? { node, actor } : undefined;
    }, 15_000);
    expect(after.actor.pid).toBe(before.pid);
    expect(after.actor.gpuIds).toEqual(before.gpuIds);
    // The reloaded head still accounts for the actor's GPU.
    expect(after.node.available.GPU).toBe(1);
    expect(await counter.call('inc', 1)).toBe(52);
    const named = await cluster.getActor('survivor');
    expect(named.actorId).toBe(counter.actorId);
    // The restarted head can create new actors on the re-registered worker.
    const fresh = await cluster.createActor({ module, className: 'Counter', options: { numGpus: 1 } });
    expect(await fresh.call('inc', 2)).toBe(2);
  });

  it('rejects a wrong token with a message saying where the token comes from', async () => {
    tc = new TestCluster();
    await tc.startHead();
    const err = await Cluster.connect({ address: tc.head!.address, token: 'wrong' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthError);
    expect((err as Error).message).toMatch(
      /wrong or missing cluster token.*--token.*CLAWRAY_TOKEN.*token file/s,
    );
  });
});
