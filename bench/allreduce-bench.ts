/**
 * `npm run bench -- allreduce`: all-reduce between real actor processes on an embedded local
 * cluster, 2 and 4 ranks × 16 and 64 MiB of fp32, once per transport (the ring over 'tcp' and
 * over 'unix' sockets, and 'shm', the same-host shared-memory all-reduce that 'auto' picks when
 * every rank is on one host), against raw stream throughput measured in the
 * same run: a child process streaming 256 MiB over one loopback TCP socket (and, reported
 * beside it, over one Unix socket) to this process, read the way a Node program reads a socket
 * ('data' events). Also reported: the same TCP stream read the way the collective reads it
 * (node:net `onread` into one reused buffer, no Buffer per read), the best one loopback TCP
 * stream does in Node, as a stricter reference.
 *
 * nccl-tests definitions: algbw = bytes / time, busbw = algbw · 2(N−1)/N (the per-link rate
 * a ring all-reduce needs for that algbw). Target (DESIGN.md §7): busbw for 64 MiB over 4 ranks
 * on the TCP transport at least 0.6 of raw TCP; the same-host transports are reported
 * separately, 'shm' also against this process's memcpy bandwidth (memcpy.ts).
 *
 * The machine's cores are shared, so the raw figures are taken three times before the
 * all-reduces and three times after; the median of the six is the baseline.
 */
import { spawn } from 'node:child_process';
import net from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createCollectiveGroup } from '../actors/collective/driver.js';
import { packageRoot } from '../common/package-root.js';
import { LocalCluster } from '../local/local-cluster.js';
import type { ActorHandle } from '../runtime/index.js';
import { Cluster } from '../runtime/index.js';
import { memcpyBytesPerSecond } from './memcpy.js';

const SIZES_MIB = [16, 64];
const WORLD_SIZES = [2, 4];
const TRANSPORTS = ['tcp', 'unix', 'shm'] as const;
const ROUNDS = 5;
const STREAM_BYTES = 256 * 1024 * 1024;
const TARGET_BUSBW_VS_TCP = 0.6;

const log = (message: string): void => {
  process.stderr.write(`[bench allreduce] ${message}\n`);
};

const sig = (x: number): number => Number(x.toPrecision(3));
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

type StreamKind = 'tcp' | 'unix' | 'tcp-onread';

/** Bytes per second from a child process to this one over one loopback TCP or Unix socket. */
async function streamThroughput(bytes: number, kind: StreamKind): Promise<number> {
  if (kind === 'tcp-onread') return onreadThroughput(bytes);
  const server = net.createServer();
  const path = `\0clawray-bench-allreduce-${process.pid}`;
  await new Promise<void>((resolve) =>
    kind === 'unix' && process.platform === 'linux'
      ? server.listen(path, resolve)
      : server.listen(0, '127.0.0.1', resolve),
  );
  const target =
    kind === 'unix' && process.platform === 'linux'
      ? `{ path: ${JSON.stringify(path)} }`
      : `{ port: ${(server.address() as net.AddressInfo).port}, host: '127.0.0.1', noDelay: true }`;
  const received = new Promise<number>((resolve, reject) => {
    server.once('connection', (socket) => {
      let got = 0;
      let start = 0;
      socket.on('data', (chunk: Buffer) => {
        if (got === 0) start = performance.now();
        got += chunk.length;
      });
      socket.on('end', () => resolve(got / ((performance.now() - start) / 1000)));
      socket.on('error', reject);
    });
  });
  const script = `
    const net = require('node:net');
    const chunk = Buffer.alloc(1 << 20, 7);
    let left = ${bytes} / chunk.length;
    const s = net.connect(${target}, () => {
      const pump = () => {
        while (left > 0) { left--; if (!s.write(chunk)) return s.once('drain', pump); }
        s.end();
      };
      pump();
    });`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'inherit', 'inherit'] });
  try {
    return await received;
  } finally {
    child.kill();
    server.close();
  }
}

/** As `streamThroughput` over TCP, but this side dials and reads with `onread` into one buffer. */
async function onreadThroughput(bytes: number): Promise<number> {
  const script = `
    const net = require('node:net');
    const chunk = Buffer.alloc(1 << 20, 7);
    const server = net.createServer({ noDelay: true }, (s) => {
      let left = ${bytes} / chunk.length;
      const pump = () => {
        while (left > 0) { left--; if (!s.write(chunk)) return s.once('drain', pump); }
        s.end();
      };
      pump();
    });
    server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = await new Promise<number>((resolve) =>
      child.stdout.once('data', (d) => resolve(Number(String(d)))),
    );
    const buffer = Buffer.allocUnsafe(4 << 20);
    let got = 0;
    let start = 0;
    return await new Promise<number>((resolve, reject) => {
      const socket = net.connect({
        port,
        host: '127.0.0.1',
        onread: {
          buffer,
          callback: (n: number) => {
            if (got === 0) start = performance.now();
            got += n;
            return true;
          },
        },
      });
      socket.on('end', () => resolve(got / ((performance.now() - start) / 1000)));
      socket.on('error', reject);
    });
  } finally {
    child.kill();
  }
}

async function baselines(into: Record<StreamKind, number[]>): Promise<void> {
  for (let i = 0; i < 3; i++)
    for (const kind of ['tcp', 'unix', 'tcp-onread'] as const)
      into[kind].push(await streamThroughput(STREAM_BYTES, kind));
}

export async function runAllreduceBench(): Promise<Record<string, unknown>> {
  const local = await LocalCluster.start({ workers: 1, poolSize: 4, cpusPerWorker: 8 });
  const cluster = await Cluster.connect({ address: local.address, token: local.token });
  const module = join(packageRoot(), 'test', 'fixtures', 'collective-rank.mjs');
  try {
    const raw: Record<StreamKind, number[]> = { tcp: [], unix: [], 'tcp-onread': [] };
    await baselines(raw);
    log(
      `raw loopback TCP: ${sig(median(raw.tcp) / 1e9)} GB/s, Unix socket ${sig(median(raw.unix) / 1e9)} GB/s`,
    );

    const actors: ActorHandle[] = await Promise.all(
      Array.from({ length: Math.max(...WORLD_SIZES) }, () =>
        cluster.createActor({ module, className: 'CollectiveRank' }),
      ),
    );
    const timed: Array<{ transport: string; ranks: number; mib: number; seconds: number }> = [];
    let reduceKernel = '';
    for (const transport of TRANSPORTS) {
      for (const n of WORLD_SIZES) {
        const ranks = actors.slice(0, n);
        await createCollectiveGroup(cluster, ranks, `bench-${transport}-${n}`, { transport });
        const info = (await ranks[0]!.call('transportInfo')) as { transport: string; reduceKernel: string };
        reduceKernel = info.reduceKernel;
        for (const mib of SIZES_MIB) {
          const bytes = mib * 1024 * 1024;
          await Promise.all(ranks.map((h) => h.call('fill', bytes / 4, 'int')));
          await Promise.all(ranks.map((h) => h.call('timeAllReduce', 1, 'sum'))); // warm-up
          const perRank = (await Promise.all(
            ranks.map((h) => h.call('timeAllReduce', ROUNDS, 'sum')),
          )) as number[][];
          // A round ends when its slowest rank ends.
          const rounds = Array.from({ length: ROUNDS }, (_, i) => Math.max(...perRank.map((t) => t[i]!)));
          const seconds = median(rounds) / 1000;
          timed.push({ transport: info.transport, ranks: n, mib, seconds });
          const busbw = ((bytes / seconds) * 2 * (n - 1)) / n;
          log(
            `${info.transport} ${n} ranks ${mib} MiB: ${sig(seconds * 1000)} ms, busbw ${sig(busbw / 1e9)} GB/s`,
          );
        }
      }
    }
    await baselines(raw);
    const tcpBytesPerSec = median(raw.tcp);
    const unixBytesPerSec = median(raw.unix);
    const onreadBytesPerSec = median(raw['tcp-onread']);
    log(
      `raw loopback TCP: ${sig(tcpBytesPerSec / 1e9)} GB/s, Unix socket ${sig(unixBytesPerSec / 1e9)} GB/s (all six)`,
    );

    const results = timed.map(({ transport, ranks: n, mib, seconds }) => {
      const bytes = mib * 1024 * 1024;
      const algbw = bytes / seconds;
      const busbw = (algbw * 2 * (n - 1)) / n;
      return {
        transport,
        ranks: n,
        mib,
        ms: sig(seconds * 1000),
        algbwGBps: sig(algbw / 1e9),
        busbwGBps: sig(busbw / 1e9),
        busbwVsTcp: sig(busbw / tcpBytesPerSec),
      };
    });
    const headline = (transport: string) =>
      results.find((r) => r.transport === transport && r.ranks === 4 && r.mib === 64);
    const tcp = headline('tcp')!;
    const unix = headline('unix');
    const shm = headline('shm');
    const memcpy = memcpyBytesPerSecond();
    return {
      bench: 'allreduce',
      tcpGBps: sig(tcpBytesPerSec / 1e9),
      unixSocketGBps: sig(unixBytesPerSec / 1e9),
      tcpOnreadGBps: sig(onreadBytesPerSec / 1e9),
      tcp: {
        busbwGBps: tcp.busbwGBps,
        busbwVsTcp: tcp.busbwVsTcp,
        busbwVsTcpOnread: sig((tcp.busbwGBps * 1e9) / onreadBytesPerSec),
      },
      memcpyGBps: sig(memcpy / 1e9),
      sameHost: {
        unix: unix && {
          busbwGBps: unix.busbwGBps,
          busbwVsTcp: unix.busbwVsTcp,
          busbwVsUnixSocket: sig((unix.busbwGBps * 1e9) / unixBytesPerSec),
        },
        shm: shm && {
          busbwGBps: shm.busbwGBps,
          busbwVsTcp: shm.busbwVsTcp,
          busbwVsUnixRing: unix && sig(shm.busbwGBps / unix.busbwGBps),
          busbwVsMemcpy: sig((shm.busbwGBps * 1e9) / memcpy),
        },
      },
      busbwVsTcp: tcp.busbwVsTcp,
      target: { busbwVsTcp: { min: TARGET_BUSBW_VS_TCP, of: 'tcp transport, 4 ranks, 64 MiB' } },
      pass: tcp.busbwVsTcp >= TARGET_BUSBW_VS_TCP,
      reduceKernel,
      rounds: ROUNDS,
      results,
      rawRounds: {
        tcpGBps: raw.tcp.map((x) => sig(x / 1e9)),
        unixSocketGBps: raw.unix.map((x) => sig(x / 1e9)),
      },
    };
  } finally {
    await cluster.close();
    await local.stop();
  }
}
