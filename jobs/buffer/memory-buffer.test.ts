import { describe, expect, it } from 'vitest';
import { runBufferContract } from './buffer.contract.js';
import { MemoryTrajectoryBuffer } from './memory-buffer.js';

runBufferContract('memory', async (options) => new MemoryTrajectoryBuffer(options));

describe('MemoryTrajectoryBuffer', () => {
  it('ends a blocking read when closed', async () => {
    const b = new MemoryTrajectoryBuffer();
    const waiting = b.read({ group: 'g', consumer: 'c', blockMs: 10_000 });
    await b.close();
    expect(await waiting).toEqual([]);
  });

  it('rejects bad options', () => {
    expect(() => new MemoryTrajectoryBuffer({ maxDeliveries: 0 })).toThrow(/maxDeliveries/);
    expect(() => new MemoryTrajectoryBuffer({ maxLen: 1.5 })).toThrow(/maxLen/);
    expect(() => new MemoryTrajectoryBuffer({ name: 'a:b' })).toThrow(/buffer name/);
  });
});
