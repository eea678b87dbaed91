/**
 * What `clawray job submit MANIFEST` shows of an RL driver's log while the job runs. In a
 * terminal: one bar per phase, drawn from the driver's own lines (warm start `warmup step
 * N/M: sft loss …`, evaluations `eval …: N/M held-out tasks`, RL `step N/M: reward …`) with
 * the numbers that matter (SFT loss, reward, success, samples/s, the last held-out figure), a
 * finished phase's last frame kept, and the driver's other lines printed above the bar. Piped:
 * the log's lines as they are, except that a long series of step lines is thinned to about ten
 * (the first, every n-th and the last; the log file has each) and evaluation progress is left
 * out (its result line stays).
 */

import {
  barFrame,
  LiveLine,
  type OutStream,
  parseStepLine,
  plainEvery,
  StepTiming,
  TIME_STAMP,
} from './progress.js';

export interface RljobViewOptions {
  /** A terminal: bars on `err`. Otherwise the log's lines go to `out`, notes to `err`. */
  live: boolean;
  out: OutStream;
  err: OutStream;
  /** Where the whole log is kept (named where lines are left out). */
  logFile?: string;
  now?: () => number;
}

const WARMUP_LINE = new RegExp(String.raw`^${TIME_STAMP}warmup step (\d+)\/(\d+):\s*(.*)$`);
const EVAL_PROGRESS = new RegExp(String.raw`^${TIME_STAMP}eval (.+?): (\d+)\/(\d+) held-out (\w+)$`);
const EVAL_RESULT = new RegExp(
  String.raw`^${TIME_STAMP}eval (.+?): held-out (success|preference score) (-?[\d.]+)`,
);
const SUMMARY = new RegExp(String.raw`^${TIME_STAMP}summary \{`);
/** Driver lines a terminal does not need (the bars and the final summary say it). */
const QUIET = new RegExp(`^${TIME_STAMP}(published weight version |eval sample: |driver state saved again )`);
const TITLE_WIDTH = 10;

type Phase = 'warm start' | 'RL' | 'SFT' | 'eval';

interface Bar {
  title: Phase;
  total: number;
  done: number;
  /** What the driver's line said of the step (drawn through `stepLabel` for RL and SFT). */
  label: string;
  timing: StepTiming;
}

export class RljobView {
  private readonly line?: LiveLine;
  private readonly bars = new Map<Phase, Bar>();
  /** The bar drawn now, and the one an evaluation interrupted (drawn again after it). */
  private active?: Bar;
  private interrupted?: Bar;
  /** The last held-out figure, for the RL bar's label. */
  private heldout?: string;
  /** Plain output: the last step printed of each series, and the series already noted. */
  private readonly printed = new Map<string, number>();
  private readonly noted = new Set<string>();

  constructor(private readonly o: RljobViewOptions) {
    if (o.live) this.line = new LiveLine(o.err);
  }

  /** One whole line of the driver's log. */
  push(text: string): void {
    if (this.line) this.draw(text);
    else this.plain(text);
  }

  /** The log ended: a bar left unfinished (a stop, a failure) stays where it was. */
  end(): void {
    if (!this.line) return;
    const open = this.active ?? this.interrupted;
    this.line.clear();
    if (open && open.title !== 'eval' && open.done < open.total) this.line.print(this.frame(open));
    this.active = undefined;
    this.interrupted = undefined;
  }

  private plain(text: string): void {
    if (EVAL_PROGRESS.test(text)) return;
    const warmup = WARMUP_LINE.exec(text);
    const step = warmup ? { step: Number(warmup[1]), total: Number(warmup[2]) } : parseStepLine(text);
    if (step) {
      const series = `${warmup ? 'warm start' : 'step'}/${step.total}`;
      const every = plainEvery(step.total);
      const last = this.printed.get(series);
      const show = last === undefined || step.step % every === 0 || step.step >= step.total;
      if (!show) {
        if (!this.noted.has(series)) {
          this.noted.add(series);
          this.o.err.write(
            `clawray: showing every ${every}th of the ${step.total} ${warmup ? 'warm-start ' : ''}step lines${this.o.logFile ? `; all are in ${this.o.logFile}` : ''}\n`,
          );
        }
        return;
      }
      this.printed.set(series, step.step);
    }
    this.o.out.write(`${text}\n`);
  }

  private draw(text: string): void {
    const line = this.line!;
    const warmup = WARMUP_LINE.exec(text);
    if (warmup) {
      this.advance('warm start', Number(warmup[1]), Number(warmup[2]), warmup[3]);
      return;
    }
    const step = parseStepLine(text);
    if (step) {
      const sft = /^sft loss /.test(step.label);
      this.advance(sft ? 'SFT' : 'RL', step.step, step.total, step.label);
      return;
    }
    const progress = EVAL_PROGRESS.exec(text);
    if (progress) {
      const done = Number(progress[2]);
      if (done === 0 || this.active?.title !== 'eval') {
        if (this.active && this.active.title !== 'eval') this.interrupted = this.active;
        this.bars.delete('eval');
      }
      const at = progress[1].startsWith('step ') ? `at ${progress[1]}` : progress[1];
      this.advance('eval', done, Number(progress[3]), `held-out ${progress[4]} ${at}`);
      return;
    }
    if (SUMMARY.test(text) || QUIET.test(text)) return;
    const result = EVAL_RESULT.exec(text);
    if (result) {
      this.heldout = `held-out ${Number(result[3]).toFixed(3)}`;
      if (this.active?.title === 'eval') {
        this.active = this.interrupted;
        this.interrupted = undefined;
        line.clear();
        if (this.active) line.draw(this.frame(this.active));
      }
    }
    line.print(text);
  }

  private advance(title: Phase, done: number, total: number, label: string): void {
    let bar = this.bars.get(title);
    if (!bar || bar.total !== total || done < bar.done) {
      bar = { title, total, done, label, timing: new StepTiming(this.o.now) };
      this.bars.set(title, bar);
    }
    bar.done = done;
    bar.label = label;
    bar.timing.observe(done);
    if (title !== 'eval' && this.active?.title === 'eval') this.interrupted = undefined;
    this.active = bar;
    const line = this.line!;
    if (done >= total && title !== 'eval') {
      // A finished phase keeps its last frame.
      line.clear();
      line.print(this.frame(bar));
      this.active = undefined;
      return;
    }
    line.draw(this.frame(bar));
  }

  private frame(bar: Bar): string {
    // A step's label is drawn with the newest held-out figure, also when an evaluation brought it.
    const label = bar.title === 'RL' || bar.title === 'SFT' ? this.stepLabel(bar.label) : bar.label;
    return barFrame(bar.title.padEnd(TITLE_WIDTH), bar.done, bar.total, bar.timing, label);
  }

  /** `reward 0.531, success 0.500, 3.21 samples/s, held-out 0.448` from an RL step line's label. */
  private stepLabel(label: string): string {
    const parts: string[] = [];
    if (/^skipped/.test(label)) parts.push('skipped (not finite)');
    for (const re of [
      /\bsft loss -?[\d.]+(e-?\d+)?/,
      /\breward -?[\d.]+/,
      /\bsuccess [\d.]+/,
      /\b[\d.]+ samples\/s/,
    ]) {
      const m = re.exec(label);
      if (m) parts.push(m[0]);
    }
    if (parts.length === 0) parts.push(label);
    if (this.heldout) parts.push(this.heldout);
    return parts.join(', ');
  }
}
