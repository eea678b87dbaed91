/**
 * A rank dying at each stage of a group's life, seen from the surviving ranks: in the
 * handshake, in the middle of a frame, and inside a shared-memory window. Each time the
 * survivors' pending call must reject with a CollectiveError naming the dead rank, not hang.
 * The dead rank is a raw socket speaking the wire protocol (so it can die exactly where the
 * test wants) or, for shared memory, a real process killed while it writes to the region.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { packageRoot } from '../../common/package-root.js';
import { createGroups } from '../../test/helpers/collective-groups.js';
import { within } from '../../test/helpers/processes.js';
import { CollectiveError } from './errors.js';
import { encodeHeader } from './frame-codec.js';
import type { CollectiveGroup } from './group.js';
import { encodeMessage, HELLO_MAGIC } from './handshake.js';
import { allReduceSchedule } from './ring-schedule.js';
import { parseAddress } from './transport.js';

// What createGroups gives every rank.
const GROUP = 'test';
const TOKEN = 't0k3n';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Ranks 0 and 1 of a 3-rank group in this process (rank 2 is the test's to play). */
async function survivors(options: Parameters<typeof createGroups>[1]): Promise<CollectiveGroup[]> {
  const gs = await createGroups(3, options);
  await gs[2]!.close();
  const live = gs.slice(0, 2);
  cleanups.push(() => Promise.all(live.map((g) => g.close())));
  return live;
}

/** A TCP server playing rank 2's data server; resolves with its address and its connections. */
async function fakeServer(onConnection: (socket: net.Socket) => void): Promise<string> {
  const sockets: net.Socket[] = [];
  const server = net.createServer((socket) => {
    sockets.push(socket);
    socket.on('error', () => {});
    onConnection(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => {
    for (const s of sockets) s.destroy();
    return new Promise((resolve) => server.close(resolve));
  });
  return `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
}

/** Rank 2 dialling `address` (rank 1's), the hello sent in full or cut after `cut` bytes. */
async function dialAsRank2(address: string, cut?: number): Promise<net.Socket> {
  const { host, port } = parseAddress(address);
  const socket = net.connect({ host, port });
  socket.on('error', () => {});
  cleanups.push(() => socket.destroy());
  await new Promise((resolve) => socket.once('connect', resolve));
  const hello = encodeMessage({ magic: HELLO_MAGIC, token: TOKEN, groupName: GROUP, rank: 2, worldSize: 3 });
  socket.write(cut === undefined ? hello : hello.subarray(0, cut));
  return socket;
}

/** The rejection of `outcome`, checked to be a CollectiveError blaming `rank`. */
function blames(outcome: PromiseSettledResult<unknown>, rank: number): CollectiveError {
  expect(outcome.status).toBe('rejected');
  const err = (outcome as PromiseRejectedResult).reason as CollectiveError;
  expect(err).toBeInstanceOf(CollectiveError);
  expect(err.fields.rank).toBe(rank);
  return err;
}

describe('a rank dying', () => {
  it('in the handshake fails connect on both neighbours, naming it', async () => {
    const [g0, g1] = await survivors(() => ({ transport: 'tcp', timeoutMs: 1500 }));
    // Rank 0 dials rank 2, which reads the hello and dies before it answers.
    const rank2 = await fakeServer((socket) => socket.once('data', () => socket.destroy()));
    const addresses = [g0!.address, g1!.address, rank2];
    const connecting = Promise.allSettled([g0!.connect(addresses), g1!.connect(addresses)]);
    // Rank 2 dials rank 1 and dies halfway through its hello.
    const dial = await dialAsRank2(g1!.address, 10);
    dial.end(() => dial.destroy());
    const [at0, at1] = await within(10_000, 'connect with a rank dead in the handshake', connecting);
    expect(blames(at0!, 2).message).toMatch(
      /handshake with rank 2 at 127\.0\.0\.1:\d+ failed: connection closed before the handshake reply/,
    );
    // Rank 1 cannot tell a dead rank 2 from a slow one: it gives up after its timeout.
    expect(blames(at1!, 2).message).toMatch(/rank 2 did not connect within 1500 ms/);
  });

  it('in the middle of a frame fails the all-reduce on every other rank, naming it', async () => {
    const [g0, g1] = await survivors(() => ({ transport: 'tcp', timeoutMs: 60_000 }));
    // Rank 2 accepts rank 0 (the rank it sends to) and answers the handshake.
    let toRank0: net.Socket | undefined;
    const rank2 = await fakeServer((socket) => {
      socket.once('data', () => {
        socket.write(encodeMessage({ ok: true }));
        toRank0 = socket;
      });
    });
    const addresses = [g0!.address, g1!.address, rank2];
    const connecting = Promise.all([g0!.connect(addresses), g1!.connect(addresses)]);
    const toRank1 = await dialAsRank2(g1!.address);
    toRank1.resume(); // the reply, then rank 1's frames: read and dropped
    await within(10_000, 'connect', connecting);

    const length = 30_000;
    let settled = false;
    const ops = Promise.allSettled(
      [g0!, g1!].map((g) => g.allReduce(new Float32Array(length).fill(1)).finally(() => (settled = true))),
    );
    // The first frame rank 0 expects from rank 2: its header and half its payload, then death.
    const first = allReduceSchedule(2, 3, length, 1 << 18).initial[0]!;
    const bytes = (first.end - first.start) * 4;
    toRank0!.write(encodeHeader(1, first.step, first.sub, bytes));
    toRank0!.write(Buffer.alloc(bytes / 2));
    await sleep(100);
    expect(settled).toBe(false); // a partial payload is only slow, not wrong
    toRank0!.destroy();
    toRank1.destroy();
    const [at0, at1] = await within(10_000, 'the all-reduce with a rank dead mid-frame', ops);
    expect(blames(at0!, 2).message).toMatch(/rank 2 closed its connection/);
    blames(at1!, 2);
  });

  it('inside a shared-memory window fails the all-reduce on every other rank, naming it', async () => {
    const mapped = (): number =>
      readFileSync('/proc/self/maps', 'utf8')
        .split('\n')
        .filter((line) => line.includes('memfd:clawray-collective')).length;
    const before = mapped();
    const options = { transport: 'shm' as const, shmWindowBytes: 1024, timeoutMs: 60_000 };
    const [g0, g1] = await survivors(() => options);
    const rank2 = await startDyingRank(options);
    const address = await rank2.call<string>({ cmd: 'init' });
    const addresses = [g0!.address, g1!.address, address];
    await within(
      20_000,
      'connect',
      Promise.all([
        g0!.connect(addresses),
        g1!.connect(addresses),
        rank2.call({ cmd: 'connect', addresses }),
      ]),
    );
    expect([g0!.transport, g1!.transport]).toEqual(['shm', 'shm']);
    // 100,000 floats in windows of 256: ~390 barriers; rank 2 dies at its 40th write to the region.
    const length = 100_000;
    const ops = Promise.allSettled([g0!, g1!].map((g) => g.allReduce(new Float32Array(length).fill(1))));
    void rank2.call({ cmd: 'allreduce', length }).catch(() => {});
    const [at0, at1] = await within(20_000, 'the all-reduce with a rank dead in a window', ops);
    expect(await rank2.exited).toBe('SIGKILL');
    expect(blames(at0!, 2).message).toMatch(/rank 2 /);
    expect(blames(at1!, 2).message).toMatch(/rank 2 /);
    await Promise.all([g0!.close(), g1!.close()]);
    expect(mapped()).toBe(before);
  });
});

/**
 * Rank 2 of a 3-rank shared-memory group in a process of its own, which kills itself (SIGKILL:
 * no goodbye on any socket, the region still mapped) right after its 40th write into the
 * shared region, halfway through a window.
 */
async function startDyingRank(options: Record<string, unknown>) {
  const dist = join(packageRoot(), 'dist', 'actors', 'collective');
  const script = `
    const [dist, token, groupName, options] = process.argv.slice(1);
    const { CollectiveGroup } = await import(dist + '/index.js');
    const { sharedMemory } = await import(dist + '/shared-memory.js');
    const host = await sharedMemory();
    let writes = 0;
    class Dying extends Float32Array {
      set(source, offset) {
        super.set(source, offset);
        if (++writes === 40) process.kill(process.pid, 'SIGKILL');
      }
    }
    const dying = {
      create: (bytes, name) => host.create(bytes, name),
      open(path, bytes) {
        const region = host.open(path, bytes);
        const f = region.floats;
        return { ...region, floats: new Dying(f.buffer, f.byteOffset, f.length) };
      },
    };
    let group;
    process.on('message', async (msg) => {
      try {
        let result;
        if (msg.cmd === 'init') {
          group = await CollectiveGroup.create({
            rank: 2, worldSize: 3, token, groupName, sharedMemory: dying, ...JSON.parse(options),
          });
          result = group.address;
        } else if (msg.cmd === 'connect') await group.connect(msg.addresses);
        else if (msg.cmd === 'allreduce') await group.allReduce(new Float32Array(msg.length).fill(1));
        process.send({ id: msg.id, ok: true, result });
      } catch (err) {
        process.send({ id: msg.id, ok: false, error: String(err) });
      }
    });
    process.send({ ready: true });
  `;
  const child: ChildProcess = spawn(
    process.execPath,
    ['--input-type=module', '-e', script, dist, TOKEN, GROUP, JSON.stringify(options)],
    { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
  );
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    child.once('exit', (code, signal) => resolve(signal ?? code)),
  );
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`rank 2 exited (${code}) before it was ready`)));
  });
  let nextId = 0;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  child.on('message', (msg: { id: number; ok: boolean; result: unknown; error: string }) => {
    const p = pending.get(msg.id);
    pending.delete(msg.id);
    if (msg.ok) p?.resolve(msg.result);
    else p?.reject(new Error(msg.error));
  });
  child.on('exit', () => {
    for (const p of pending.values()) p.reject(new Error('rank 2 exited'));
  });
  return {
    exited,
    call: <T = unknown>(msg: Record<string, unknown>) =>
      new Promise<T>((resolve, reject) => {
        const id = nextId++;
        pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
        child.send({ ...msg, id });
      }),
  };
}
