/**
 * Ownership (issue 17), on real processes: a driver's non-detached actors die with its
 * connection (close, or a SIGKILLed process after the head's grace period), detached ones
 * live until killed, actors created by an actor die with that actor's process (restart
 * included, as in Ray), a request waiting for resources is reported to its driver, and
 * `clawray actors kill` kills by id or name.
 */
import { execFile, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatStatus } from '../cli/status-commands.js';
import { ActorDiedError } from '../common/errors.js';
import { distEntry } from '../common/package-root.js';
import type { ActorView } from '../runtime/index.js';
import { Cluster } from '../runtime/index.js';
import { eventually, fixture, startProc, TestCluster, within } from './helpers/processes.js';

const module = fixture('counter.mjs');
const GRACE_MS = 1500;
const WARN_INTERVAL_MS = 300;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      args,
      { env: { ...process.env, ...env }, timeout: 60_000, encoding: 'utf8' },
      (err, stdout, stderr) => {
        const code = err ? ((err as { code?: unknown }).code as number | null) : 0;
        resolve({ code: typeof code === 'number' ? code : null, stdout, stderr });
      },
    );
  });
}

describe('actor ownership', () => {
  const tc = new TestCluster();
  let admin: Cluster;
  let env: NodeJS.ProcessEnv;

  const actor = async (actorId: string): Promise<ActorView | undefined> =>
    (await admin.listActors()).find((a) => a.actorId === actorId);

  beforeAll(async () => {
    // A short grace period and warning interval, through the head's CLAWRAY_… settings.
    tc.head = await startProc(
      ['head', 'start', '--port', '0', '--store', 'memory'],
      {
        ...tc.env,
        CLAWRAY_OWNER_GRACE_MS: String(GRACE_MS),
        CLAWRAY_PENDING_WARN_INTERVAL_MS: String(WARN_INTERVAL_MS),
      },
      /clawray head listening on (?<address>\S+)/,
    );
    await tc.startWorker({ gpus: 2, cpus: 4, poolSize: 2, resources: { slot: 1 } });
    admin = await tc.connect();
    env = { ...tc.env, CLAWRAY_ADDRESS: tc.head.address };
  });
  afterAll(() => tc.teardown());

  it("runs the README's Counter example 5 times in a row: no actor is left alive, none hangs", async () => {
    // Two GPUs hold four half-GPU Counters: without owners the fifth run waits forever.
    for (let i = 1; i <= 5; i++) {
      const r = await within(60_000, `run ${i}`, run([fixture('readme-counter.mjs')], env));
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout.trim().split('\n').pop()!) as { value: number; actorId: string };
      expect(out.value).toBe(15);
      const left = (await admin.listActors()).filter((a) => a.state !== 'DEAD');
      expect(left).toEqual([]);
      const mine = await actor(out.actorId);
      expect(mine?.deathCause?.message).toContain('closed its connection');
    }
    // Five driver processes in a row, each allowed 60 s above: the test's own limit covers them.
  }, 300_000);

  it('keeps a detached actor after its creator closes; it is found by name and killable', async () => {
    const creator = await tc.connect();
    const kept = await creator.createActor({
      module,
      className: 'Counter',
      args: [1],
      options: { name: 'keeper', lifetime: 'detached' },
    });
    const owned = await creator.createActor({ module, className: 'Counter' });
    await creator.close();

    expect((await actor(owned.actorId))?.state).toBe('DEAD');
    const other = await tc.connect();
    const again = await other.getActor('keeper');
    expect(again.actorId).toBe(kept.actorId);
    expect(await again.call('inc', 1)).toBe(2);
    expect((await actor(kept.actorId))?.detached).toBe(true);

    await other.killActor(again);
    expect((await actor(kept.actorId))?.state).toBe('DEAD');
    await expect(again.call('get')).rejects.toBeInstanceOf(ActorDiedError);
    await other.close();
  });

  it("ends a SIGKILLed driver's actors after the grace period; its detached actor lives", async () => {
    const child = spawn(process.execPath, [fixture('owner-holder.mjs'), 'held'], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      const first = await within(
        30_000,
        'the owner printing its actors',
        new Promise<string>((resolve) => createInterface({ input: child.stdout! }).once('line', resolve)),
      );
      const ids = JSON.parse(first) as { owned: string; detached: string };
      expect((await actor(ids.owned))?.state).toBe('ALIVE');
      child.kill('SIGKILL');
      await exited;

      const dead = await eventually(async () => {
        const a = await actor(ids.owned);
        return a?.state === 'DEAD' && a;
      }, 30_000);
      expect(dead.deathCause?.message).toContain('was lost');
      expect((await actor(ids.detached))?.state).toBe('ALIVE');
      await admin.killActor(ids.detached);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('lets a driver that forgets close() exit, and then ends its actors', async () => {
    const r = await within(60_000, 'the forgetful driver', run([fixture('forgetful-driver.mjs')], env));
    expect(r.code, r.stderr).toBe(0);
    const { actorId } = JSON.parse(r.stdout.trim().split('\n').pop()!) as { actorId: string };
    const dead = await eventually(async () => {
      const a = await actor(actorId);
      return a?.state === 'DEAD' && a;
    }, 30_000);
    expect(dead.deathCause?.message).toContain('was lost');
  });

  it("ends an actor's children with its process: on a restart (as Ray) and on its death", async () => {
    const driver = await tc.connect();
    const parent = await driver.createActor({
      module: fixture('owner-parent.mjs'),
      className: 'Parent',
      options: { maxRestarts: 1 },
    });
    const first = (await parent.call('spawn')) as string;
    const kept = (await parent.call('spawn', 'detached')) as string;
    expect((await actor(first))?.ownerActorId).toBe(parent.actorId);
    expect((await actor(first))?.state).toBe('ALIVE');

    await driver.killActor(parent, { noRestart: false });
    const gone = await eventually(async () => {
      const a = await actor(first);
      return a?.state === 'DEAD' && a;
    });
    expect(gone.deathCause?.message).toContain(`its owner, actor Parent (${parent.actorId})`);
    await eventually(async () => {
      const p = await actor(parent.actorId);
      return p?.state === 'ALIVE' && p.numRestarts === 1;
    });

    const second = (await parent.call('spawn')) as string;
    await driver.killActor(parent);
    await eventually(async () => (await actor(second))?.state === 'DEAD');
    expect((await actor(kept))?.state).toBe('ALIVE');
    await driver.killActor(kept);
    await driver.close();
  });

  it('tells the driver what a waiting request needs and what is free; status lists it', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => lines.push(line) });
    const driver = await Cluster.connect({ address: tc.head!.address, token: tc.token, logger });
    const slot = { resources: { slot: 1 } };
    const holder = await driver.createActor({ module, className: 'Counter', options: slot });
    const waiting = driver.createActor({ module, className: 'Counter', options: slot });

    const warning = await eventually(
      () =>
        lines
          .map((l) => (JSON.parse(l) as { msg: string }).msg)
          .find((msg) => msg.includes('is pending creation')),
      20_000,
    );
    expect(warning).toContain('Required resources: {slot: 1}; strategy: DEFAULT');
    expect(warning).toMatch(/Available resources: node_\S+ \(\S+\) \{CPU: 4, GPU: 2, .*\} of \{.*slot: 1\}/);

    const status = await driver.status();
    const demand = status.pendingDemands.find((d) => d.kind === 'actor');
    expect(demand?.bundles[0].slot).toBe(1);
    expect(formatStatus(status)).toContain('{slot: 1} (DEFAULT): 1 actor, waiting');

    await driver.killActor(holder);
    const second = await waiting;
    expect(await second.call('inc', 1)).toBe(1);

    // A placement group waits too, and the driver's close removes it (and kills its actor).
    const group = driver.createPlacementGroup({ bundles: [slot], strategy: 'PACK' }).catch((e: unknown) => e);
    const groupDemand = await eventually(async () =>
      (await admin.status()).pendingDemands.find((d) => d.kind === 'placement group'),
    );
    expect(groupDemand.strategy).toBe('PACK');
    await driver.close();
    expect(await group).toBeInstanceOf(Error);
    expect((await admin.status()).pendingDemands).toEqual([]);
    expect((await actor(second.actorId))?.state).toBe('DEAD');
  });

  it('clawray actors kill kills by name or id, for good unless --restart', async () => {
    const driver = await tc.connect();
    const victim = await driver.createActor({
      module,
      className: 'Counter',
      options: { name: 'victim', maxRestarts: 2 },
    });
    const cli = (...args: string[]) => run([distEntry('cli/main'), 'actors', 'kill', ...args], env);

    let r = await cli('victim', '--restart');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`killed actor Counter 'victim' (${victim.actorId}); it restarts`);
    await eventually(async () => {
      const a = await actor(victim.actorId);
      return a?.state === 'ALIVE' && a.numRestarts === 1;
    });

    // As ray.kill: for good by default, though a restart is left.
    r = await cli('victim');
    expect(r.code, r.stderr).toBe(0);
    expect((await actor(victim.actorId))?.state).toBe('DEAD');

    r = await cli(victim.actorId, '--json');
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ actorId: victim.actorId, alreadyDead: true });

    r = await cli('victim');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("no live actor named 'victim' in namespace 'default'");
    await driver.close();
    // Four CLI processes and a restart one after another: slow on a loaded machine.
  }, 300_000);
});
