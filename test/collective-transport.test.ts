/**
 * The collective transports (TCP, same-host Unix sockets, same-host shared memory, 'auto'
 * choosing) between ranks that are separate real processes: exact all-reduce results against a
 * reference sum for tiny, odd and multi-MB sizes, and a rank killed mid-operation failing the
 * others with CollectiveError and leaving nothing behind (no socket, no /dev/shm file, no
 * shared mapping).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { register } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { CollectiveGroup } from '../actors/collective/group.js';
import { chooseLink, formatAddress, hostId, parseAddress } from '../actors/collective/transport.js';
import { ConfigError } from '../common/errors.js';
import { fixture, within } from './helpers/processes.js';

type Transport = 'auto' | 'tcp' | 'unix' | 'shm';

const intValue = (rank: number, i: number): number => (rank + 1) * ((i % 251) + 1);

/** What every rank must hold after all-reducing the 'int' fill (exact in fp32). */
function expectedChecksum(size: number, n: number, op: 'sum' | 'mean'): string {
  const out = new Float32Array(size);
  for (let i = 0; i < size; i++) {
    let sum = 0;
    for (let r = 0; r < n; r++) sum += intValue(r, i);
    out[i] = op === 'mean' ? sum / n : sum;
  }
  return createHash('sha256').update(new Uint8Array(out.buffer)).digest('hex');
}

interface Rank {
  child: ChildProcess;
  pid: number;
  call<T = Record<string, unknown>>(msg: Record<string, unknown>): Promise<T>;
}

const children: ChildProcess[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
  }
});

async function startRank(): Promise<Rank> {
  const child = fork(fixture('collective-proc.mjs'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`rank process exited (${code}) before it was ready`)));
  });
  let nextId = 0;
  const pending = new Map<number, { resolve: (v: never) => void; reject: (e: Error) => void }>();
  child.on(
    'message',
    (msg: { id: number; ok: boolean; result: never; error: { name: string; message: string } }) => {
      const p = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.ok) p?.resolve(msg.result);
      else
        p?.reject(Object.assign(new Error(msg.error.message), { remoteName: msg.error.name, ...msg.error }));
    },
  );
  child.on('exit', () => {
    for (const p of pending.values()) p.reject(new Error('rank process exited'));
    pending.clear();
  });
  return {
    child,
    pid: child.pid!,
    call: <T>(msg: Record<string, unknown>) =>
      new Promise<T>((resolve, reject) => {
        const id = nextId++;
        pending.set(id, { resolve: resolve as (v: never) => void, reject });
        child.send({ ...msg, id });
      }),
  };
}

/** n processes in one ring; `transports[r]` is rank r's option. Returns each rank's links. */
async function ring(
  transports: Transport[],
  extra: Record<string, unknown> = {},
): Promise<{ ranks: Rank[]; links: string[] }> {
  const n = transports.length;
  const ranks = await Promise.all(transports.map(() => startRank()));
  const inits = await Promise.all(
    ranks.map((r, rank) =>
      r.call<{ address: string }>({ cmd: 'init', rank, worldSize: n, transport: transports[rank], ...extra }),
    ),
  );
  const addresses = inits.map((i) => i.address);
  const connected = await Promise.all(
    ranks.map((r) => r.call<{ transport: string }>({ cmd: 'connect', addresses })),
  );
  return { ranks, links: connected.map((c) => c.transport) };
}

/**
 * Unix socket names of these ranks still live (/proc/net/unix), their /dev/shm and tmpdir
 * entries, and the shared all-reduce regions their live processes still map.
 */
function leftovers(pids: number[]): string[] {
  const found: string[] = [];
  for (const pid of pids) {
    let maps = '';
    try {
      maps = readFileSync(`/proc/${pid}/maps`, 'utf8');
    } catch {
      continue; // exited
    }
    if (maps.includes('memfd:clawray-collective')) found.push(`shared region mapped by ${pid}`);
  }
  const mine = (name: string): boolean => pids.some((pid) => name.includes(`clawray-collective-${pid}-`));
  if (existsSync('/proc/net/unix'))
    for (const line of readFileSync('/proc/net/unix', 'utf8').split('\n')) {
      const name = line.trim().split(/\s+/).pop() ?? '';
      if (mine(name)) found.push(name);
    }
  for (const dir of ['/dev/shm', tmpdir()])
    if (existsSync(dir)) for (const f of readdirSync(dir)) if (mine(f)) found.push(`${dir}/${f}`);
  return [...new Set(found)];
}

/** A 1 MiB shared-memory window where the transport maps memory (the others refuse the field). */
const shmWindow = (transport: Transport) =>
  transport === 'shm' || transport === 'auto' ? { shmWindowBytes: 1 << 20 } : {};

async function allReduceAll(
  ranks: Rank[],
  size: number,
  op: 'sum' | 'mean' = 'sum',
  pattern = 'int',
): Promise<Array<{ checksum: string; length: number }>> {
  return Promise.all(
    ranks.map((r) => r.call<{ checksum: string; length: number }>({ cmd: 'allreduce', size, op, pattern })),
  );
}

describe('collective transports between rank processes', () => {
  for (const transport of ['tcp', 'unix', 'shm', 'auto'] as const) {
    for (const n of [2, 4]) {
      it(`${transport}: ${n} ranks all-reduce exactly for tiny, odd and multi-MB sizes`, async () => {
        // Small sub-chunks: the odd sizes cross many frames per step; a 1 MiB shared-memory
        // window: the multi-MB sizes cross several windows.
        const { ranks, links } = await ring(Array(n).fill(transport), {
          subChunkBytes: 4096,
          ...shmWindow(transport),
        });
        // Every process here is on one host: 'auto' picks shared memory.
        expect(links).toEqual(Array(n).fill(transport === 'auto' ? 'shm' : transport));
        for (const size of [1, n - 1, 7, 1001, 262_147, 3_000_001]) {
          for (const op of ['sum', 'mean'] as const) {
            const want = expectedChecksum(size, n, op);
            for (const r of await allReduceAll(ranks, size, op)) {
              expect(r.length).toBe(size);
              expect(r.checksum, `${op} of ${size} floats`).toBe(want);
            }
          }
        }
        // Order-dependent values: every rank ends with the same bytes.
        const frac = await allReduceAll(ranks, 1_000_003, 'sum', 'frac');
        expect(new Set(frac.map((r) => r.checksum)).size).toBe(1);
        await Promise.all(ranks.map((r) => r.call({ cmd: 'close' })));
      });
    }
  }

  it('auto: a rank without a Unix socket gets TCP links, the rest Unix sockets, results exact', async () => {
    // Rank 0 stands for a rank on another host: it listens on TCP only.
    const { ranks, links } = await ring(['tcp', 'auto', 'auto', 'auto']);
    // Rank 1 receives from rank 0 over TCP and sends to rank 2 over a Unix socket; rank 3
    // receives over a Unix socket and is dialled by rank 0 over TCP.
    expect(links).toEqual(['tcp', 'mixed', 'unix', 'mixed']);
    for (const size of [5, 4_000_037]) {
      const want = expectedChecksum(size, 4, 'sum');
      for (const r of await allReduceAll(ranks, size)) expect(r.checksum).toBe(want);
    }
  });

  for (const transport of ['tcp', 'unix', 'shm'] as const) {
    it(`${transport}: a rank killed mid-all-reduce fails the others with CollectiveError, nothing left behind`, async () => {
      // A long no-progress timeout: the failure must come from the death, not the timer.
      const { ranks } = await ring(Array(4).fill(transport), { timeoutMs: 120_000, ...shmWindow(transport) });
      const pids = ranks.map((r) => r.pid);
      // The check below can see them: each live rank listens on a Unix socket unless 'tcp', and
      // maps the shared region under 'shm'.
      expect(leftovers(pids).length).toBe({ tcp: 0, unix: 4, shm: 8 }[transport]);
      // 96 MiB: still running 30 ms after the last rank joins on every transport (shared memory,
      // the fastest, goes through it in ~100 windows of 1 MiB here).
      const size = 24 * 1024 * 1024;
      const outcomes = await within(
        60_000,
        'the all-reduce with a dead rank',
        Promise.allSettled(
          ranks.map((r, rank) =>
            r.call({ cmd: 'allreduce', size, ...(rank === 2 ? { exitAfterMs: 30 } : {}) }),
          ),
        ),
      );
      expect(outcomes[2]!.status).toBe('rejected'); // the process exited
      for (const rank of [0, 1, 3]) {
        const outcome = outcomes[rank]!;
        expect(outcome.status, `rank ${rank}`).toBe('rejected');
        const err = (outcome as PromiseRejectedResult).reason as Error & { remoteName: string };
        expect(err.remoteName).toBe('CollectiveError');
        expect(err.message).toMatch(/rank 2 /);
      }
      await Promise.all([0, 1, 3].map((rank) => ranks[rank]!.call({ cmd: 'close' })));
      expect(leftovers(pids)).toEqual([]);
    });
  }
});

describe('collective transport choice and reporting', () => {
  it('addresses carry the Unix socket and host id; auto picks by host id', () => {
    const here = parseAddress(
      formatAddress({ host: '10.0.0.5', port: 4000, unix: '\0x-y', hostId: hostId() }),
    );
    expect(here).toEqual({ host: '10.0.0.5', port: 4000, unix: '\0x-y', hostId: hostId() });
    expect(parseAddress('[::1]:7')).toEqual({ host: '::1', port: 7 });
    expect(chooseLink('auto', here)).toBe('unix');
    expect(chooseLink('tcp', here)).toBe('tcp');
    expect(chooseLink('auto', { ...here, hostId: 'another-host|boot|net' })).toBe('tcp');
    expect(chooseLink('unix', { host: 'h', port: 1 })).toBe('tcp');
  });

  it('refuses an unknown transport naming the field', async () => {
    await expect(
      CollectiveGroup.create({
        rank: 0,
        worldSize: 1,
        groupName: 'x',
        token: 't',
        transport: 'rdma' as never,
      }),
    ).rejects.toThrow(ConfigError);
    await expect(
      CollectiveGroup.create({
        rank: 0,
        worldSize: 1,
        groupName: 'x',
        token: 't',
        transport: 'rdma' as never,
      }),
    ).rejects.toThrow(/transport must be one of auto, tcp, unix, shm, got rdma/);
  });

  for (const transport of ['tcp', 'unix', 'shm'] as const) {
    it(`${transport}: frames of operations a rank has not started yet wait for it, then land in place`, async () => {
      const gs = await Promise.all(
        [0, 1, 2].map((rank) =>
          CollectiveGroup.create({
            rank,
            worldSize: 3,
            groupName: 'late',
            token: 't',
            transport,
            subChunkBytes: 1024,
          }),
        ),
      );
      await Promise.all(gs.map((g) => g.connect(gs.map((x) => x.address))));
      const sizes = [10_007, 0, 3, 50_000];
      const bufs = gs.map((_, r) =>
        sizes.map((size) => Float32Array.from({ length: size }, (_, i) => intValue(r, i))),
      );
      // Ranks 0 and 1 queue every operation at once; rank 2 starts each one late, so the
      // others' frames for operations it has not begun reach it first.
      const early = gs.slice(0, 2).flatMap((g, r) => sizes.map((_, k) => g.allReduce(bufs[r]![k]!)));
      for (let k = 0; k < sizes.length; k++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        await gs[2]!.allReduce(bufs[2]![k]!);
      }
      await Promise.all(early);
      for (let k = 0; k < sizes.length; k++) {
        const want = expectedChecksum(sizes[k]!, 3, 'sum');
        for (const r of [0, 1, 2])
          expect(createHash('sha256').update(new Uint8Array(bufs[r]![k]!.buffer)).digest('hex')).toBe(want);
      }
      await Promise.all(gs.map((g) => g.close()));
    });
  }

  it('reports each link and operation by transport in the metrics', async () => {
    const gs = await Promise.all(
      [0, 1].map((rank) =>
        CollectiveGroup.create({ rank, worldSize: 2, groupName: 'm', token: 't', transport: 'unix' }),
      ),
    );
    await Promise.all(gs.map((g) => g.connect(gs.map((x) => x.address))));
    expect(gs.map((g) => g.transport)).toEqual(['unix', 'unix']);
    const bufs = [new Float32Array(1000).fill(1), new Float32Array(1000).fill(2)];
    await Promise.all(gs.map((g, r) => g.allReduce(bufs[r]!)));
    expect(bufs[0]!.every((x) => x === 3)).toBe(true);
    const text = await register.metrics();
    expect(text).toMatch(/clawray_collective_links\{transport="unix"\} [1-9]/);
    expect(text).toMatch(/clawray_allreduce_bytes_total\{transport="unix"\} [1-9]/);
    await Promise.all(gs.map((g) => g.close()));
    expect(await register.metrics()).toMatch(/clawray_collective_links\{transport="unix"\} 0/);
  });
});
