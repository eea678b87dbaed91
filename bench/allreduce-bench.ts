/**
 * `npm run bench -- allreduce`: ring all-reduce between real actor processes on an embedded
 * local cluster, 2 and 4 ranks × 16 and 64 MiB of fp32, against raw loopback TCP throughput
 * measured in the same run (a child process streaming 256 MiB over one socket).
 *
 * nccl-tests definitions: algbw = bytes / time, busbw = algbw · 2(N−1)/N (the per-link rate
 * a ring all-reduce needs for that algbw). Target (DESIGN.md §7): busbw for 64 MiB over 4 ranks
 * at least 0.6 of raw TCP.
 */
import { spawn } from 'node:child_process';
import net from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createCollectiveGroup } from '../actors/collective/driver.js';
import type { ActorHandle } from '../actors/runtime/actor-handle.js';
import { Cluster } from '../actors/runtime/cluster.js';
import { packageRoot } from '../common/package-root.js';
import { LocalCluster } from '../local/local-cluster.js';

const SIZES_MIB = [16, 64];
const WORLD_SIZES = [2, 4];
const ROUNDS = 5;
const TCP_BYTES = 256 * 1024 * 1024;
const TARGET_BUSBW_VS_TCP = 0.6;

const log = (message: string): void => {
  process.stderr.write(`[bench allreduce] ${message}\n`);
};

const sig = (x: number): number => Number(x.toPrecision(3));
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

/** Bytes per second from a child process to this one over one loopback socket. */
async function tcpThroughput(bytes: number): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
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
    const s = net.connect({ port: ${port}, host: '127.0.0.1', noDelay: true }, () => {
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

export async function runAllreduceBench(): Promise<Record<string, unknown>> {
  const local = await LocalCluster.start({ workers: 1, poolSize: 4, cpusPerWorker: 8 });
  const cluster = await Cluster.connect({ address: local.address, token: local.token });
  const module = join(packageRoot(), 'test', 'fixtures', 'collective-rank.mjs');
  try {
    const tcpRounds: number[] = [];
    for (let i = 0; i < 3; i++) tcpRounds.push(await tcpThroughput(TCP_BYTES));
    const tcpBytesPerSec = median(tcpRounds);
    log(`raw loopback TCP: ${sig(tcpBytesPerSec / 1e9)} GB/s`);

    const actors: ActorHandle[] = await Promise.all(
      Array.from({ length: Math.max(...WORLD_SIZES) }, () =>
        cluster.createActor({ module, className: 'CollectiveRank' }),
      ),
    );
    const results: Array<Record<string, number>> = [];
    for (const n of WORLD_SIZES) {
      const ranks = actors.slice(0, n);
      await createCollectiveGroup(cluster, ranks, `bench-${n}`);
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
        const algbw = bytes / seconds;
        const busbw = (algbw * 2 * (n - 1)) / n;
        results.push({
          ranks: n,
          mib,
          ms: sig(seconds * 1000),
          algbwGBps: sig(algbw / 1e9),
          busbwGBps: sig(busbw / 1e9),
          busbwVsTcp: sig(busbw / tcpBytesPerSec),
        });
        log(`${n} ranks ${mib} MiB: ${sig(seconds * 1000)} ms, busbw ${sig(busbw / 1e9)} GB/s`);
      }
    }
    const headline = results.find((r) => r.ranks === 4 && r.mib === 64)!;
    return {
      bench: 'allreduce',
      tcpGBps: sig(tcpBytesPerSec / 1e9),
      results,
      busbwVsTcp: headline.busbwVsTcp,
      target: { busbwVsTcp: { min: TARGET_BUSBW_VS_TCP } },
      pass: headline.busbwVsTcp! >= TARGET_BUSBW_VS_TCP,
      rounds: ROUNDS,
    };
  } finally {
    await cluster.close();
    await local.stop();
  }
}
