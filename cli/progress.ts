/**
 * Progress of long CLI work on stderr: a live bar redrawn in place in a terminal, plain lines
 * otherwise (CI logs and pipes must not fill with carriage returns).
 */
export interface Progress {
  /** `done` of `total` finished; `label` says what just finished. */
  update(done: number, label: string): void;
  /** Clears the live line so the final output starts on a clean line. */
  finish(): void;
}

const BAR_WIDTH = 24;

export function progress(
  title: string,
  total: number,
  stream: NodeJS.WriteStream = process.stderr,
): Progress {
  const started = Date.now();
  const live = Boolean(stream.isTTY);
  let drawn = false;
  return {
    update(done, label) {
      const elapsedS = (Date.now() - started) / 1000;
      const etaS = done > 0 ? Math.round((elapsedS / done) * (total - done)) : undefined;
      const eta = etaS === undefined ? '' : ` eta ${etaS}s`;
      if (!live) {
        stream.write(`${title} ${done}/${total} ${label}\n`);
        return;
      }
      const filled = total > 0 ? Math.round((done / total) * BAR_WIDTH) : BAR_WIDTH;
      const line = `${title} [${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}] ${done}/${total}${eta} ${label}`;
      const width = stream.columns ?? 80;
      stream.write(`\r\x1b[2K${line.slice(0, width - 1)}`);
      drawn = true;
    },
    finish() {
      if (drawn) stream.write('\r\x1b[2K');
      drawn = false;
    },
  };
}
