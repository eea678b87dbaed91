/**
 * `clawray stop` (Ray's `ray stop`): ends what `clawray start --local`, `head start` and
 * `worker start` began on this machine, found through their records under the clawray home
 * (head.json, workers/<pid>.json), never by process name. SIGTERM first, so heads and workers
 * drain as they do on Ctrl-C; SIGKILL for whatever is still there after the grace.
 */
import type { Command } from 'commander';
import { headFilePath } from '../common/home.js';
import { findLocalHead, processAlive, removeLocalHead, staleHeadMessage } from '../common/local-head.js';
import { listWorkerRecords, removeWorkerRecord, workersDir } from '../common/local-workers.js';
import { int } from './cli-parse.js';

/** How long stopped processes get to drain before SIGKILL: a worker's actors get 5 s. */
const DEFAULT_GRACE_MS = 10_000;
const POLL_MS = 100;

interface Target {
  what: string;
  pid: number;
  cleanup: () => void;
  /** Stopped by its parent (`start --local`), which is a target too: only waited for. */
  byParent?: boolean;
}

export function registerStopCommand(program: Command): void {
  program
    .command('stop')
    .description(
      'stop the head and workers started on this machine (clawray start / head start / worker start)',
    )
    .option(
      '--grace-ms <ms>',
      'how long they may take to drain before SIGKILL',
      int('--grace-ms'),
      DEFAULT_GRACE_MS,
    )
    .option('--force', 'SIGKILL at once, without draining')
    .action(async (o: { graceMs: number; force?: boolean }) => {
      const targets: Target[] = [];
      const local = findLocalHead();
      if (local.stale) process.stderr.write(`clawray: ${staleHeadMessage(local.stale)}\n`);
      if (local.head?.pid) {
        const { pid, address } = local.head;
        targets.push({ what: `head ${address}`, pid, cleanup: () => removeLocalHead(pid) });
      }
      const headPid = local.head?.pid;
      for (const worker of listWorkerRecords()) {
        targets.push({
          what: `worker ${worker.address}`,
          pid: worker.pid,
          cleanup: () => removeWorkerRecord(worker.pid),
          // A second SIGTERM would cut its drain short (the first one comes from `start`).
          byParent: headPid !== undefined && worker.parentPid === headPid,
        });
      }
      if (targets.length === 0) {
        process.stdout.write(
          `clawray: nothing to stop: no head or worker started on this machine is running (${headFilePath()}, ${workersDir()})\n`,
        );
        return;
      }
      const signal = o.force ? 'SIGKILL' : 'SIGTERM';
      for (const t of targets) if (o.force || !t.byParent) kill(t.pid, signal);
      const deadline = Date.now() + (o.force ? 0 : o.graceMs);
      while (targets.some((t) => processAlive(t.pid)) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, POLL_MS));
      }
      for (const t of targets) {
        const forced = processAlive(t.pid);
        if (forced) kill(t.pid, 'SIGKILL');
        // A process killed outright cannot remove its own record.
        t.cleanup();
        process.stdout.write(
          `clawray: stopped ${t.what} (pid ${t.pid}${forced && !o.force ? `, SIGKILL after ${o.graceMs} ms` : ''})\n`,
        );
      }
    });
}

function kill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
}
