/**
 * The node table's health decisions, driven by a fake clock: a live node is never declared
 * dead for the time the head itself was down or busy starting, and a reloaded node gets a
 * full timeout plus the reload grace — counted from when the head listens — to re-register.
 */
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../common/logger.js';
import type { NodeRecord } from './model.js';
import { NodeTable, overdueMs, sweepPeriodMs } from './node-table.js';
import { Scheduler } from './scheduler/scheduler.js';
import { MemoryStore } from './store/memory-store.js';

const TIMING = { timeoutMs: 3000, reloadGraceMs: 1000 };

function nodeRecord(nodeId: string): NodeRecord {
  return {
    nodeId,
    address: `127.0.0.1:${nodeId.length}`,
    hostname: 'test',
    resources: { numCpus: 2, numGpus: 0, memoryMb: 1024, custom: {} },
    gpuIds: [],
    labels: {},
    state: 'ALIVE',
    registeredAtMs: 0,
  };
}

/** A node table over a real memory store and scheduler, with its clock in the test's hands. */
async function table() {
  let nowMs = 1_000_000;
  const lost: string[] = [];
  const store = new MemoryStore();
  await store.open();
  const nodes = new NodeTable(
    store,
    new Scheduler(),
    silentLogger,
    TIMING,
    {
      onNodeLost: async (nodeId, reason) => {
        lost.push(`${nodeId}: ${reason}`);
      },
      onBundlesLost: async () => {},
      onCapacity: () => {},
    },
    () => nowMs,
  );
  const period = sweepPeriodMs(TIMING.timeoutMs);
  return {
    nodes,
    lost,
    /** Time passes in sweep periods, the head sweeping as its timer would. */
    async advance(ms: number) {
      for (let t = 0; t < ms; t += period) {
        nowMs += period;
        await nodes.sweep();
      }
    },
    /** Time passes before the sweep has started (the head is still starting). */
    skip(ms: number) {
      nowMs += ms;
    },
    /** The head's event loop is blocked for `ms` (no sweeps), then sweeps once. */
    async stall(ms: number) {
      nowMs += ms;
      await nodes.sweep();
    },
    register(nodeId: string, actors = 0) {
      return nodes.register({
        nodeId,
        address: nodeRecord(nodeId).address,
        hostname: 'test',
        resources: { numCpus: 2, numGpus: 0, memoryMb: 1024, custom: {} },
        gpuIds: [],
        labels: {},
        actors: Array.from({ length: actors }, () => ({ actorId: 'a', address: '', pid: 1, incarnation: 0 })),
      });
    },
  };
}

describe('overdueMs', () => {
  const entry = (lastSeenMs: number, reregistered: boolean) => ({
    record: nodeRecord('n'),
    lastSeenMs,
    reregistered,
  });
  it('allows a registered node the timeout, a reloaded one the timeout plus the grace', () => {
    expect(overdueMs(entry(0, true), 3000, TIMING)).toBe(0);
    expect(overdueMs(entry(0, true), 3001, TIMING)).toBe(1);
    expect(overdueMs(entry(0, false), 4000, TIMING)).toBe(0);
    expect(overdueMs(entry(0, false), 4001, TIMING)).toBe(1);
  });
});

describe('NodeTable health', () => {
  it('declares a silent registered node dead after the timeout, not before', async () => {
    const t = await table();
    t.nodes.begin();
    await t.register('node_a');
    await t.advance(2800);
    expect(t.nodes.get('node_a')!.record.state).toBe('ALIVE');
    t.nodes.heartbeat('node_a');
    await t.advance(2800);
    expect(t.nodes.get('node_a')!.record.state).toBe('ALIVE');
    await t.advance(600);
    expect(t.nodes.get('node_a')!.record.state).toBe('DEAD');
    expect(t.lost).toEqual([expect.stringMatching(/^node_a: node missed heartbeats for \d+ ms$/)]);
  });

  it('starts a reloaded node’s clock when the head listens, not when the store was read', async () => {
    const t = await table();
    t.nodes.restore([nodeRecord('node_a')]);
    // Reading the rest of the store and binding the server take a while (no sweeps yet).
    t.skip(5000);
    t.nodes.begin();
    // Within the timeout plus the grace the node may come back at any time…
    await t.advance(TIMING.timeoutMs + TIMING.reloadGraceMs - 200);
    expect(t.nodes.get('node_a')!.record.state).toBe('ALIVE');
    const { known } = await t.register('node_a', 1);
    expect(known).toBe(true);
    // …and from then on it is an ordinary node with an ordinary timeout.
    await t.advance(2800);
    expect(t.nodes.get('node_a')!.record.state).toBe('ALIVE');
    expect(t.lost).toEqual([]);
  });

  it('declares a reloaded node that never comes back dead once timeout and grace are spent', async () => {
    const t = await table();
    t.nodes.restore([nodeRecord('node_a'), nodeRecord('node_b')]);
    t.nodes.begin();
    await t.advance(1000);
    await t.register('node_b');
    await t.advance(TIMING.timeoutMs - 1000 + 200);
    // Past the plain timeout, still inside the grace.
    expect(t.nodes.get('node_a')!.record.state).toBe('ALIVE');
    await t.advance(TIMING.reloadGraceMs);
    expect(t.nodes.get('node_a')!.record.state).toBe('DEAD');
    // node_b re-registered and then went silent: it has no grace left, only its timeout.
    expect(t.nodes.get('node_b')!.record.state).toBe('DEAD');
    expect(t.lost).toEqual([
      expect.stringMatching(/^node_a: node did not re-register within \d+ ms of the head's restart$/),
      expect.stringMatching(/^node_b: node missed heartbeats for \d+ ms$/),
    ]);
  });

  it('does not hold a stall of the head’s event loop against its nodes', async () => {
    const t = await table();
    t.nodes.begin();
    await t.register('node_a');
    await t.advance(1000);
    await t.stall(10_000);
    expect(t.nodes.get('node_a')!.record.state).toBe('ALIVE');
    t.nodes.heartbeat('node_a');
    expect(t.lost).toEqual([]);
  });

  it('keeps a reloaded node that heartbeats before it re-registers, and asks it to re-register', async () => {
    const t = await table();
    t.nodes.restore([nodeRecord('node_a')]);
    t.nodes.begin();
    for (let i = 0; i < 10; i++) {
      await t.advance(1000);
      expect(t.nodes.heartbeat('node_a')).toEqual({ known: true, reregister: true });
    }
    expect(t.nodes.get('node_a')!.record.state).toBe('ALIVE');
  });
});
