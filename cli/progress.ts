/**
 * Progress of long CLI work on stderr: a live bar redrawn in place in a terminal, plain lines
 * otherwise (CI logs and pipes must not fill with carriage returns, nor with one line per
 * step of a 500-step loop: `plainEvery` thins them).
 */
export interface Progress {
  /** `done` of `total` finished; `label` says what just finished. */
  update(done: number, label: string): void;
  /** Clears the live line so the final output starts on a clean line. */
  finish(): void;
}

/** What a terminal stream offers (a plain stream has no `isTTY`/`columns`). */
export type OutStream = Pick<NodeJS.WriteStream, 'write'> & { isTTY?: boolean; columns?: number };

const BAR_WIDTH = 24;
/** Above this many steps, plain output shows every `plainEvery(total)`-th one. */
const PLAIN_ALL_UP_TO = 100;

export interface ProgressOptions {
  /** Plain output (no terminal): print every n-th update (and the first and last). Default 1. */
  plainEvery?: number;
  /** The clock (tests). */
  now?: () => number;
}

export function progress(
  title: string,
  total: number,
  stream: OutStream = process.stderr,
  o: ProgressOptions = {},
): Progress {
  const live = Boolean(stream.isTTY);
  const line = live ? new LiveLine(stream) : undefined;
  const timing = new StepTiming(o.now);
  const every = Math.max(1, o.plainEvery ?? 1);
  let lastPrinted: number | undefined;
  return {
    update(done, label) {
      timing.observe(done);
      if (line) {
        line.draw(barFrame(title, done, total, timing, label));
        return;
      }
      if (lastPrinted === undefined || done >= total || done - lastPrinted >= every) {
        stream.write(`${title} ${done}/${total} ${label}\n`);
        lastPrinted = done;
      }
    },
    finish() {
      line?.clear();
    },
  };
}

/** How many of `total` steps plain output skips between two it prints: 1 up to 100, else ≈ total/10, rounded to 1, 2 or 5 × 10^k. */
export function plainEvery(total: number): number {
  if (total <= PLAIN_ALL_UP_TO) return 1;
  const rough = total / 10;
  const scale = 10 ** Math.floor(Math.log10(rough));
  const nice = [1, 2, 5, 10].map((m) => m * scale).find((n) => n >= rough) ?? rough;
  return Math.round(nice);
}

/**
 * One line of a terminal redrawn in place, with permanent lines printed above it: what a bar
 * needs so that log lines arriving meanwhile do not tear it.
 */
export class LiveLine {
  private current = '';

  constructor(private readonly stream: OutStream) {}

  /** Replaces the live line (cut to the terminal's width: a wrapped line cannot be redrawn). */
  draw(text: string): void {
    const width = this.stream.columns || 80;
    this.current = [...text].slice(0, width - 1).join('');
    this.stream.write(`\r\x1b[2K${this.current}`);
  }

  /** Prints `text` as a line of its own above the live line, which is drawn again below it. */
  print(text: string): void {
    this.stream.write(`\r\x1b[2K${text}\n${this.current}`);
  }

  /** Clears the live line. */
  clear(): void {
    if (this.current) this.stream.write('\r\x1b[2K');
    this.current = '';
  }

  get text(): string {
    return this.current;
  }
}

/**
 * When the steps of one bar happened: the rate comes from the steps seen since the first one
 * (a bar drawn first at 1/60 has no rate yet, so it shows no ETA rather than `eta 0s`).
 */
export class StepTiming {
  private first?: { done: number; atMs: number };
  private last?: { done: number; atMs: number };

  constructor(private readonly now: () => number = Date.now) {}

  observe(done: number): void {
    const atMs = this.now();
    this.first ??= { done, atMs };
    this.last = { done, atMs };
  }

  /** Seconds since the first step seen. */
  elapsedS(): number {
    return this.first ? (this.now() - this.first.atMs) / 1000 : 0;
  }

  /** Seconds left to `total` at the rate seen so far; undefined before there is a rate. */
  etaS(total: number): number | undefined {
    if (!this.first || !this.last) return undefined;
    const steps = this.last.done - this.first.done;
    const ms = this.last.atMs - this.first.atMs;
    if (steps <= 0 || ms <= 0) return undefined;
    return Math.max(0, ((total - this.last.done) * ms) / steps / 1000);
  }
}

/** `title [#####...] done/total 1m02s<3m16s label` (elapsed<left; no ETA before there is a rate). */
export function barFrame(
  title: string,
  done: number,
  total: number,
  timing: StepTiming,
  label: string,
): string {
  const filled = total > 0 ? Math.min(BAR_WIDTH, Math.round((done / total) * BAR_WIDTH)) : BAR_WIDTH;
  const eta = done < total ? timing.etaS(total) : undefined;
  const time = `${duration(timing.elapsedS())}${eta === undefined ? '' : `<${duration(eta)}`}`;
  return `${title} [${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}] ${done}/${total} ${time}${label ? `  ${label}` : ''}`;
}

/** 42s, 4m12s, 1h02m. */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
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
