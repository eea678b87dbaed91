import { describe, expect, it } from 'vitest';
import { parseManifest } from '../manifest/load.js';
import { engineOptions } from './engine-options.js';

const manifest = (model: string) =>
  parseManifest(
    `apiVersion: clawray.dev/v1\nkind: RLJob\nmetadata: { name: m }\nspec:\n  track: toolcall\n  method: rl\n  model: ${model}\n`,
    'job.yaml',
  );

describe('engineOptions', () => {
  it('passes every engine setting of spec.model to the engines, the budget in bytes', () => {
    const m = manifest(
      '{ path: ./m, provider: cpu, maxBatchSize: 8, maxQueue: 32, weightDtype: bfloat16, attention: gqa, intraOpNumThreads: 2, allowSpinning: false, prefillChunkTokens: 128, memoryBudgetMiB: 1.5 }',
    );
    expect(engineOptions(m.spec.model)).toEqual({
      provider: 'cpu',
      maxBatchSize: 8,
      maxQueue: 32,
      weightDtype: 'bfloat16',
      attention: 'gqa',
      intraOpNumThreads: 2,
      allowSpinning: false,
      prefillChunkTokens: 128,
      memoryBudgetBytes: 1_572_864,
    });
  });

  it("sizes the intra-op pool by the role's CPUs when the manifest does not (Ray's OMP_NUM_THREADS)", () => {
    const unset = manifest('{ path: ./m }').spec.model;
    expect(engineOptions(unset, 3).intraOpNumThreads).toBe(3);
    expect(engineOptions(unset, 2.5).intraOpNumThreads).toBe(2);
    expect(engineOptions(unset, 0.5).intraOpNumThreads).toBeUndefined();
    expect(
      engineOptions(manifest('{ path: ./m, intraOpNumThreads: 1 }').spec.model, 4).intraOpNumThreads,
    ).toBe(1);
  });

  it("leaves unset settings to the engine's defaults", () => {
    expect(engineOptions(manifest('{ path: ./m }').spec.model)).toEqual({
      provider: 'auto',
      maxBatchSize: 16,
      maxQueue: 1024,
      weightDtype: undefined,
      attention: undefined,
      intraOpNumThreads: undefined,
      allowSpinning: true,
      prefillChunkTokens: 512,
      memoryBudgetBytes: undefined,
    });
  });

  it('refuses a value the engine cannot take, naming the field', () => {
    expect(() => manifest('{ path: ./m, weightDtype: int4 }')).toThrow(/spec\.model\.weightDtype/);
    expect(() => manifest('{ path: ./m, memoryBudgetMiB: 0 }')).toThrow(/spec\.model\.memoryBudgetMiB/);
    expect(() => manifest('{ path: ./m, intraOpNumThreads: 0 }')).toThrow(/spec\.model\.intraOpNumThreads/);
  });
});
