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

/** A `step N/M: what happened` log line (a job driver's), after an optional time stamp. */
export interface StepLine {
  step: number;
  total: number;
  label: string;
}

/** An optional time stamp a log line may start with (`12:01:02 `, `[2025-01-01T12:01:02Z] `). */
export const TIME_STAMP = String.raw`(?:\[?\d[\d:.TZ+-]*\]? )?`;

const STEP_LINE = new RegExp(String.raw`^${TIME_STAMP}step (\d+)\/(\d+):\s*(.*)$`);

export function parseStepLine(line: string): StepLine | undefined {
  const match = STEP_LINE.exec(line);
  if (!match) return undefined;
  return { step: Number(match[1]), total: Number(match[2]), label: match[3] };
}

/** Turns pieces of a text stream into whole lines (a piece may end mid-line). */
export class LineSplitter {
  private partial = '';

  constructor(private readonly onLine: (line: string) => void) {}

  push(text: string): void {
    const parts = (this.partial + text).split('\n');
    this.partial = parts.pop() ?? '';
    for (const line of parts) this.onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
  }

  /** The last line, if the stream did not end with a newline. */
  end(): void {
    if (this.partial) this.onLine(this.partial);
    this.partial = '';
  }
}
