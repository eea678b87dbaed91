import { afterEach, describe, expect, it, vi } from 'vitest';
import type { DriverProgress } from './driver.js';
import { progressInfo, reportProgress } from './progress-report.js';

const at = (p: Partial<DriverProgress>): DriverProgress => ({
  phase: 'training',
  step: 3,
  steps: 20,
  warmupStep: 0,
  runtime: 'rollout onnxruntime/cpu ×2; trainer tfjs/wasm',
  skippedSteps: 0,
  ...p,
});

describe('progressInfo', () => {
  it('names the phase, the step of the total and the runtime; empty values remove keys', () => {
    expect(progressInfo(at({}))).toEqual({
      phase: 'training',
      step: '3/20',
      warmup: '',
      runtime: 'rollout onnxruntime/cpu ×2; trainer tfjs/wasm',
      skippedSteps: '',
    });
    expect(
      progressInfo(
        at({ phase: 'warmup', step: 0, steps: null, warmupStep: 40, runtime: null, skippedSteps: 2 }),
      ),
    ).toEqual({
      phase: 'warmup',
      step: '0',
      warmup: '40',
      runtime: '',
      skippedSteps: '2',
    });
  });
});

describe('reportProgress', () => {
  afterEach(() => vi.useRealTimers());

  it('sends when the progress changed, retries a failed send, and sends the last change on stop', async () => {
    vi.useFakeTimers();
    let progress = at({ step: 1 });
    const sent: Record<string, string>[] = [];
    let failNext = false;
    const reporter = reportProgress(
      () => progress,
      async (info) => {
        if (failNext) {
          failNext = false;
          throw new Error('head restarting');
        }
        sent.push(info);
      },
      1000,
    );
    await vi.advanceTimersByTimeAsync(0);
    expect(sent.map((i) => i.step)).toEqual(['1/20']);
    await vi.advanceTimersByTimeAsync(3000); // unchanged: nothing more
    expect(sent).toHaveLength(1);
    progress = at({ step: 2 });
    failNext = true;
    await vi.advanceTimersByTimeAsync(1000); // the send fails …
    expect(sent).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1000); // … and is made again on the next tick
    expect(sent.map((i) => i.step)).toEqual(['1/20', '2/20']);
    progress = at({ step: 20, phase: 'done' });
    await reporter.stop();
    expect(sent.at(-1)).toMatchObject({ phase: 'done', step: '20/20' });
    await vi.advanceTimersByTimeAsync(5000); // stopped: no more ticks
    expect(sent).toHaveLength(3);
  });
});
