import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { containerGpus, type GpuAllocationProbe, listDirOrEmpty } from './gpu-allocation.js';

function probe(env: Record<string, string>, dirs: Record<string, string[]> = {}): GpuAllocationProbe {
  return { env, listDir: (path) => dirs[path] ?? [] };
}

const DEV_WITH_TWO_GPUS = [
  'null',
  'nvidia0',
  'nvidia1',
  'nvidiactl',
  'nvidia-uvm',
  'nvidia-uvm-tools',
  'nvidia-modeset',
];

describe('containerGpus', () => {
  it('is undefined outside the NVIDIA container runtime, so the worker asks nvidia-smi', () => {
    expect(containerGpus(probe({}, { '/dev': DEV_WITH_TWO_GPUS }))).toBeUndefined();
  });

  it('counts the UUIDs the device plugin allocated (envvar strategy)', () => {
    const gpus = containerGpus(
      probe({
        NVIDIA_VISIBLE_DEVICES:
          'GPU-8f2a1c3e-1111-2222-3333-444455556666,GPU-9b3c2d4f-aaaa-bbbb-cccc-ddddeeeeffff',
      }),
    );
    expect(gpus?.ids).toEqual([0, 1]);
    expect(gpus?.source).toContain('NVIDIA_VISIBLE_DEVICES=GPU-8f2a');
  });

  it('counts indices and MIG devices, ignoring spaces, blanks and repeats', () => {
    expect(containerGpus(probe({ NVIDIA_VISIBLE_DEVICES: ' 2, 5 ,,7 ' }))?.ids).toEqual([0, 1, 2]);
    expect(containerGpus(probe({ NVIDIA_VISIBLE_DEVICES: 'MIG-a,MIG-b,MIG-a' }))?.ids).toEqual([0, 1]);
  });

  it('gives no GPUs for void, none and an empty value', () => {
    for (const value of ['', 'void', 'none', '  ']) {
      expect(
        containerGpus(probe({ NVIDIA_VISIBLE_DEVICES: value }, { '/dev': DEV_WITH_TWO_GPUS }))?.ids,
      ).toEqual([]);
    }
  });

  it('counts the mounted /dev/nvidiaN for `all` (CUDA images set it; CDI mounts only the allocation)', () => {
    const gpus = containerGpus(probe({ NVIDIA_VISIBLE_DEVICES: 'all' }, { '/dev': DEV_WITH_TWO_GPUS }));
    expect(gpus).toEqual({ ids: [0, 1], source: '2 /dev/nvidiaN (NVIDIA_VISIBLE_DEVICES=all)' });
    // A GPU image scheduled on a node without GPUs.
    expect(
      containerGpus(probe({ NVIDIA_VISIBLE_DEVICES: 'all' }, { '/dev': ['null', 'zero'] }))?.ids,
    ).toEqual([]);
  });

  describe('volume-mounts strategy (a directory with one entry per device)', () => {
    const root = mkdtempSync(join(tmpdir(), 'clawray-gpu-alloc-'));
    afterAll(() => rmSync(root, { recursive: true, force: true }));

    it('counts the entries of the directory on disk', () => {
      const dir = join(root, 'nvidia-container-devices');
      mkdirSync(dir);
      for (const uuid of ['GPU-a', 'GPU-b', 'GPU-c']) writeFileSync(join(dir, uuid), '');
      writeFileSync(join(dir, '.hidden'), '');
      expect(containerGpus({ env: { NVIDIA_VISIBLE_DEVICES: dir }, listDir: listDirOrEmpty })?.ids).toEqual([
        0, 1, 2,
      ]);
      expect(
        containerGpus({ env: { NVIDIA_VISIBLE_DEVICES: join(root, 'missing') }, listDir: listDirOrEmpty })
          ?.ids,
      ).toEqual([]);
    });
  });
});
