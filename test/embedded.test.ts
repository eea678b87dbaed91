import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { connect } from '../index.js';
import { fixture, pidAlive } from './helpers/processes.js';

describe('connect() without an address', () => {
  it('starts an embedded cluster in-process, serves actors (which can use the SDK), and stops on close', async () => {
    const saved = process.env.CLAWRAY_ADDRESS;
    const savedHome = process.env.CLAWRAY_HOME;
    delete process.env.CLAWRAY_ADDRESS;
    // A home without head.json: a cluster started on this machine would be used instead.
    const home = mkdtempSync(join(tmpdir(), 'clawray-embedded-'));
    process.env.CLAWRAY_HOME = home;
    try {
      const cluster = await connect(undefined, { local: { gpusPerWorker: 1, poolSize: 1 } });
      const status = await cluster.status();
      expect(status.nodes).toHaveLength(1);
      expect(status.nodes[0].total.GPU).toBe(1);
      const spawner = await cluster.createActor({ module: fixture('counter.mjs'), className: 'Spawner' });
      expect(await spawner.call('spawnAndCall', 4)).toBe(4);
      const pids = (await cluster.listActors()).map((a) => a.pid);
      expect(pids).toHaveLength(2);
      await cluster.close();
      for (const pid of pids) expect(pidAlive(pid)).toBe(false);
    } finally {
      if (saved !== undefined) process.env.CLAWRAY_ADDRESS = saved;
      if (savedHome !== undefined) process.env.CLAWRAY_HOME = savedHome;
      else delete process.env.CLAWRAY_HOME;
      rmSync(home, { recursive: true, force: true });
    }
  });
});
