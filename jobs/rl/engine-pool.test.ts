import { describe, expect, it } from 'vitest';
import { ActorDiedError, ActorUnavailableError } from '../../common/errors.js';
import { EnginePool } from './engine-pool.js';
import { isPeerLoss } from './failures.js';

/** An engine whose process can die and come back (at weight version 0, as a restart does). */
class FakeEngine {
  alive = true;
  version = 0;
  readonly staged: number[] = [];

  constructor(readonly name: string) {}

  async call(method: string, ...args: unknown[]): Promise<unknown> {
    if (!this.alive) throw new ActorUnavailableError(`${this.name} is restarting`);
    if (method === 'ready') return { weightVersion: this.version };
    if (method === 'work') return { by: this.name, weightVersion: this.version };
    throw new Error(`unknown method ${method} ${args.length}`);
  }

  die(): void {
    this.alive = false;
  }

  restart(): void {
    this.alive = true;
    this.version = 0;
  }
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

function pool(engines: FakeEngine[]) {
  const lines: string[] = [];
  const p = new EnginePool(engines, {
    publish: async (members, version) => {
      for (const e of members) {
        if (!e.alive) throw new ActorDiedError(`${e.name} is dead`);
        e.staged.push(version);
        e.version = version;
      }
    },
    healIntervalMs: 5,
    log: (l) => lines.push(l),
  });
  return { p, lines };
}

describe('EnginePool', () => {
  it('moves work off a dead engine and brings it back with the current weights', async () => {
    const engines = [new FakeEngine('a'), new FakeEngine('b')];
    const { p, lines } = pool(engines);
    await p.publish(3, new Map());
    engines[0].die();
    const by = new Set<string>();
    for (let i = 0; i < 6; i++) {
      const r = (await p.run((e) => e.call('work'), isPeerLoss)) as { by: string };
      by.add(r.by);
    }
    expect(by).toEqual(new Set(['b']));
    expect(p.healthyCount).toBe(1);
    engines[0].restart();
    await wait(50);
    expect(p.healthyCount).toBe(2);
    expect(engines[0].version).toBe(3);
    expect(p.recoveries).toBe(1);
    expect(lines.some((l) => l.includes('back in the pool at weight version 3'))).toBe(true);
    p.close();
  });

  it('reports the version every healthy engine committed, without a request being served', async () => {
    const engines = [new FakeEngine('a'), new FakeEngine('b')];
    const { p } = pool(engines);
    expect(p.committedVersion).toBe(0);
    await p.publish(2, new Map());
    expect(p.committedVersion).toBe(2);
    engines[1].die();
    await p.publish(3, new Map()); // b misses it and leaves the pool; a alone serves 3
    expect(p.committedVersion).toBe(3);
    p.close();
  });

  it('takes out an engine that silently restarted (it answers with old weights)', async () => {
    const engines = [new FakeEngine('a'), new FakeEngine('b')];
    const { p } = pool(engines);
    await p.publish(2, new Map());
    engines[1].restart();
    // An answer from before the swap, to a call sent before it, is no sign of a restart.
    p.noteVersion(1, 0, 0);
    expect(p.healthyCount).toBe(2);
    expect(p.servedVersion(1)).toBe(2);
    p.noteVersion(1, 0, p.servedVersion(1));
    expect(p.healthyCount).toBe(1);
    await wait(30);
    expect(engines[1].version).toBe(2);
    expect(p.healthyCount).toBe(2);
    p.close();
  });

  it('waits while every engine is down instead of failing', async () => {
    const engines = [new FakeEngine('a')];
    const { p } = pool(engines);
    engines[0].die();
    const result = p.run((e) => e.call('work'), isPeerLoss);
    await wait(20);
    engines[0].restart();
    expect(await result).toMatchObject({ by: 'a' });
    p.close();
  });

  it('does not retry work that failed on its own', async () => {
    const { p } = pool([new FakeEngine('a')]);
    await expect(
      p.run(async () => {
        throw new TypeError('bad request');
      }, isPeerLoss),
    ).rejects.toThrow('bad request');
    expect(p.healthyCount).toBe(1);
    p.close();
  });
});
