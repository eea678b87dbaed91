import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { eventually, fixture, TestCluster, within } from './helpers/processes.js';

const module = fixture('counter.mjs');

describe('worker SIGTERM', () => {
  const tc = new TestCluster();
  afterAll(() => tc.teardown());

  it('drains: stops actors gracefully, moves restartable ones without using a restart, deregisters', async () => {
    // A node timeout far longer than the test: the node can only be DEAD by deregistering.
    await tc.startHead({ nodeTimeoutMs: 120_000 });
    const first = await tc.startWorker({ labels: { role: 'first' } });
    const cluster = await tc.connect();
    const marker = join(tc.home, 'disposed.txt');
    const actor = await within(
      20_000,
      'createActor',
      cluster.createActor({
        module,
        className: 'Disposable',
        args: [marker],
        options: { maxRestarts: 1 },
      }),
    );
    const pid = (await within(10_000, 'first call', actor.call('pid'))) as number;
    const second = await tc.startWorker({ labels: { role: 'second' } });

    await within(15_000, 'worker exit after SIGTERM', first.kill('SIGTERM'));
    expect(await first.exited).toBe(0);
    expect(readFileSync(marker, 'utf8')).toBe(`disposed by ${pid}`);
    const status = await eventually(async () => {
      const s = await cluster.status();
      const moved = s.actors.find((a) => a.actorId === actor.actorId);
      return moved?.state === 'ALIVE' && moved.nodeId === second.nodeId ? s : undefined;
    });
    // Deregistered at once, not after the heartbeat timeout.
    expect(status.nodes.find((n) => n.nodeId === first.nodeId)?.state).toBe('DEAD');
    expect(status.actors.find((a) => a.actorId === actor.actorId)?.numRestarts).toBe(0);
    expect(await within(10_000, 'call after the move', actor.call('pid'))).not.toBe(pid);
    expect(existsSync(marker)).toBe(true);
  });
});
