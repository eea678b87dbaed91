/**
 * An RL driver's progress as `clawray job status` shows it: the job's process reports it to the
 * head (ReportJobInfo) while it runs, so the phase, the step and what the actors compute on (a
 * GPU job that silently runs on the CPU must be visible) are one command away, not only in the
 * log and the metrics.
 */
import type { DriverProgress } from './driver.js';

/** The job-info keys for `progress`; an empty value removes a key the head holds. */
export function progressInfo(p: DriverProgress): Record<string, string> {
  return {
    phase: p.phase,
    step: p.steps === null ? String(p.step) : `${p.step}/${p.steps}`,
    warmup: p.warmupStep > 0 ? String(p.warmupStep) : '',
    runtime: p.runtime ?? '',
    skippedSteps: p.skippedSteps > 0 ? String(p.skippedSteps) : '',
  };
}

export interface ProgressReporter {
  /** Sends the last change (if any) and stops. Never throws. */
  stop(): Promise<void>;
}

/**
 * Reads the progress every `everyMs` and sends it when it changed. A failed send (the head
 * restarting) is retried on the next tick; reporting never fails the job.
 */
export function reportProgress(
  read: () => DriverProgress,
  send: (info: Record<string, string>) => Promise<unknown>,
  everyMs: number,
): ProgressReporter {
  let sent = '';
  let inFlight: Promise<void> = Promise.resolve();
  const tick = (): Promise<void> => {
    inFlight = inFlight.then(async () => {
      const info = progressInfo(read());
      const key = JSON.stringify(info);
      if (key === sent) return;
      try {
        await send(info);
        sent = key;
      } catch {
        // the next tick tries again
      }
    });
    return inFlight;
  };
  const timer = setInterval(() => void tick(), everyMs);
  timer.unref();
  void tick();
  return {
    async stop() {
      clearInterval(timer);
      await tick();
    },
  };
}
