/**
 * `clawray status` on a cluster of real processes that has dead actors: live and pending ones
 * are listed, dead ones only counted unless `--all`; `--json` carries the counts of every state;
 * `clawray actors list --state dead` lists them, and an unknown state is refused.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { distEntry } from '../common/package-root.js';
import type { ActorHandle } from '../runtime/index.js';
import { eventually, fixture, TestCluster } from './helpers/processes.js';

const DEAD = 3;

describe('clawray status with dead actors', () => {
  const tc = new TestCluster();
  const dead: string[] = [];
  let alive: ActorHandle;
  let pendingId = '';
  let pendingCreation: Promise<unknown> | undefined;

  function clawray(args: string[]) {
    const r = spawnSync(process.execPath, [distEntry('cli/main'), ...args, '--address', tc.head!.address], {
      encoding: 'utf8',
      env: { ...process.env, CLAWRAY_ADDRESS: '', ...tc.env },
      timeout: 30_000,
    });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  }

  beforeAll(async () => {
    await tc.startHead();
    await tc.startWorker({ cpus: 8, resources: { slot: 1 }, poolSize: 2 });
    const cluster = await tc.connect();
    const module = fixture('counter.mjs');
    for (let i = 0; i < DEAD; i++) {
      const a = await cluster.createActor({ module, className: 'Counter', options: { numCpus: 0.1 } });
      await cluster.killActor(a);
      dead.push(a.actorId);
    }
    alive = await cluster.createActor({
      module,
      className: 'Counter',
      options: { name: 'holder', resources: { slot: 1 } },
    });
    // Waits for the one `slot`, which `holder` keeps.
    pendingCreation = cluster
      .createActor({ module, className: 'Counter', options: { resources: { slot: 1 } } })
      .catch((e: unknown) => e);
    pendingId = (await eventually(async () => (await cluster.listActors({ state: 'PENDING_CREATION' }))[0]))
      .actorId;
  });

  afterAll(async () => {
    await tc.teardown();
    await pendingCreation;
  });

  it('lists live and pending actors and only counts the dead ones', () => {
    const { code, stdout, stderr } = clawray(['status']);
    expect(code, stderr).toBe(0);
    expect(stdout).toContain(`actors: 1 ALIVE, 1 PENDING_CREATION, ${DEAD} DEAD`);
    expect(stdout).toContain(alive.actorId);
    expect(stdout).toContain('holder');
    expect(stdout).toContain(pendingId);
    for (const id of dead) expect(stdout).not.toContain(id);
    expect(stdout).toContain(
      `(${DEAD} dead actors not listed: clawray status --all, or clawray actors list --state DEAD)`,
    );
  });

  it('--all lists the dead ones too', () => {
    const { code, stdout } = clawray(['status', '--all']);
    expect(code).toBe(0);
    for (const id of [...dead, alive.actorId, pendingId]) expect(stdout).toContain(id);
    expect(stdout).not.toContain('not listed');
  });

  it('--json has the counts of every state and the dead actors only with --all', () => {
    const summary = JSON.parse(clawray(['status', '--json']).stdout);
    expect(summary.actorCounts).toEqual({ ALIVE: 1, PENDING_CREATION: 1, DEAD: DEAD });
    expect(summary.deadActorsListed).toBe(false);
    expect(summary.actors.map((a: { actorId: string }) => a.actorId).sort()).toEqual(
      [alive.actorId, pendingId].sort(),
    );
    expect(summary.droppedDeadActors).toBe(0);

    const all = JSON.parse(clawray(['status', '--json', '--all']).stdout);
    expect(all.actorCounts).toEqual(summary.actorCounts);
    expect(all.deadActorsListed).toBe(true);
    expect(all.actors).toHaveLength(DEAD + 2);
  });

  it('actors list --state takes any case and refuses a state that is not one', () => {
    const list = clawray(['actors', 'list', '--state', 'dead', '--json']);
    expect(list.code, list.stderr).toBe(0);
    expect(
      JSON.parse(list.stdout)
        .map((a: { actorId: string }) => a.actorId)
        .sort(),
    ).toEqual([...dead].sort());
    const pending = clawray(['actors', 'list', '--state', 'pending']);
    expect(pending.stdout).toContain(pendingId);
    expect(pending.stdout).not.toContain(alive.actorId);

    const bad = clawray(['actors', 'list', '--state', 'zombie']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--state "zombie" is not an actor state');
    expect(bad.stderr).toContain('ALIVE, PENDING_CREATION, RESTARTING, DEAD');
  });
});
