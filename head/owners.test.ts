import { EventEmitter } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../common/logger.js';
import type * as m from '../proto/messages.js';
import { OwnerRegistry } from './owners.js';

/** The server side of an owner's stream, as the registry uses it: events, write, end. */
class Stream extends EventEmitter {
  readonly written: m.OwnerEvent[] = [];
  ended = false;
  write(event: m.OwnerEvent): boolean {
    this.written.push(event);
    return true;
  }
  end(): void {
    this.ended = true;
    this.emit('close');
  }
  /** The client went away (process killed, connection lost). */
  drop(): void {
    this.emit('cancelled');
  }
}

const GRACE_MS = 1000;
const request = (ownerId: string): m.OwnerSessionRequest__Output => ({
  ownerId,
  pid: 42,
  hostname: 'box',
  jobId: '',
});

describe('OwnerRegistry', () => {
  let released: Array<{ ownerId: string; reason: string }>;
  let owners: OwnerRegistry;
  const attach = (id: string) => {
    const stream = new Stream();
    owners.attach(request(id), stream as never);
    return stream;
  };

  beforeEach(() => {
    vi.useFakeTimers();
    released = [];
    owners = new OwnerRegistry({
      graceMs: GRACE_MS,
      logger: silentLogger,
      release: async (ownerId, reason) => {
        released.push({ ownerId, reason });
        return { actors: 1, groups: 0 };
      },
    });
  });
  afterEach(() => {
    owners.stop();
    vi.useRealTimers();
  });

  it('answers READY, and releases at once on a clean close', async () => {
    const stream = attach('o1');
    expect(stream.written[0].kind).toBe('READY');
    expect(owners.connected('o1')).toBe(true);
    await owners.close('o1');
    expect(released).toEqual([{ ownerId: 'o1', reason: 'its owner (pid 42 on box) closed its connection' }]);
    expect(stream.ended).toBe(true);
    vi.advanceTimersByTime(GRACE_MS * 2);
    expect(released).toHaveLength(1);
  });

  it('gives a broken session the grace period to come back, then releases it', () => {
    const first = attach('o1');
    first.drop();
    vi.advanceTimersByTime(GRACE_MS - 1);
    expect(released).toEqual([]);
    const second = attach('o1');
    vi.advanceTimersByTime(GRACE_MS * 2);
    expect(released).toEqual([]);

    owners.send('o1', { kind: 'PENDING', message: 'waiting' });
    expect(first.written.map((e) => e.kind)).toEqual(['READY']);

    expect(second.written.map((e) => e.kind)).toEqual(['READY', 'PENDING']);
    second.drop();
    vi.advanceTimersByTime(GRACE_MS);
    expect(released).toHaveLength(1);
    expect(released[0].reason).toContain('was lost');
    expect(owners.connected('o1')).toBe(false);
  });

  it('watches an owner it has not seen (a head restart), and releases a late request of an ended one', async () => {
    owners.track('o2');
    vi.advanceTimersByTime(GRACE_MS);
    expect(released.map((r) => r.ownerId)).toEqual(['o2']);

    await owners.close('o3');
    owners.track('o3');
    expect(released.map((r) => r.ownerId)).toEqual(['o2', 'o3', 'o3']);
  });
});
