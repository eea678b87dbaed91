import { describe, expect, it } from 'vitest';
import { parseNvidiaSmi } from './gpu-discovery.js';

describe('parseNvidiaSmi', () => {
  it('parses two GPUs from `--format=csv,noheader,nounits` output', () => {
    const csv =
      '0, GPU-8f2a1c3e-1111-2222-3333-444455556666, NVIDIA H200, 143771\n' +
      '1, GPU-9b3c2d4f-aaaa-bbbb-cccc-ddddeeeeffff, NVIDIA H200, 143771\n';
    expect(parseNvidiaSmi(csv)).toEqual([
      { index: 0, uuid: 'GPU-8f2a1c3e-1111-2222-3333-444455556666', name: 'NVIDIA H200', memoryMb: 143771 },
      { index: 1, uuid: 'GPU-9b3c2d4f-aaaa-bbbb-cccc-ddddeeeeffff', name: 'NVIDIA H200', memoryMb: 143771 },
    ]);
  });

  it('ignores blank lines, trailing spaces and CRLF line ends', () => {
    const csv = '\n  0, GPU-a, NVIDIA A100-SXM4-80GB, 81920   \r\n\n   \n1,GPU-b,Tesla T4,15360  \r\n\n';
    expect(parseNvidiaSmi(csv)).toEqual([
      { index: 0, uuid: 'GPU-a', name: 'NVIDIA A100-SXM4-80GB', memoryMb: 81920 },
      { index: 1, uuid: 'GPU-b', name: 'Tesla T4', memoryMb: 15360 },
    ]);
  });

  it('keeps spaces inside a GPU name', () => {
    const [gpu] = parseNvidiaSmi('3, GPU-x, NVIDIA GeForce RTX 4090, 24564\n');
    expect(gpu).toEqual({ index: 3, uuid: 'GPU-x', name: 'NVIDIA GeForce RTX 4090', memoryMb: 24564 });
  });

  it('skips garbage lines and keeps the good ones', () => {
    const csv = [
      'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.',
      'No devices were found',
      'index, uuid, name, memory.total [MiB]',
      '0, GPU-a, NVIDIA H200, 143771',
      'Failed to initialize NVML: Driver/library version mismatch',
      'x, GPU-b, NVIDIA H200, 143771',
      '1.5, GPU-c, NVIDIA H200, 143771',
      '1, GPU-d, NVIDIA H200, 143771',
    ].join('\n');
    expect(parseNvidiaSmi(csv).map((g) => [g.index, g.uuid])).toEqual([
      [0, 'GPU-a'],
      [1, 'GPU-d'],
    ]);
  });

  it('gives no GPUs for empty or whitespace-only output', () => {
    expect(parseNvidiaSmi('')).toEqual([]);
    expect(parseNvidiaSmi('\n\n  \n')).toEqual([]);
  });

  it('parses a fractional memory value', () => {
    expect(parseNvidiaSmi('0, GPU-a, Some GPU, 1024.5')[0].memoryMb).toBe(1024.5);
  });
});
