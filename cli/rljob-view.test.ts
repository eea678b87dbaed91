import { describe, expect, it } from 'vitest';
import { barFrame, duration, plainEvery, StepTiming } from './progress.js';
import { RljobView } from './rljob-view.js';

/** A stream that keeps what was written; a terminal when `tty`. */
function sink(tty: boolean) {
  const chunks: string[] = [];
  return {
    isTTY: tty,
    columns: 200,
    write(text: string) {
      chunks.push(text);
      return true;
    },
    get text() {
      return chunks.join('');
    },
    /** Each frame or line as a terminal would show it in turn (redraws split out). */
    get frames() {
      return chunks
        .join('')
        .replaceAll('\r\x1b[2K', '\n')
        .split('\n')
        .filter((l) => l.length > 0);
    },
  };
}

function clock() {
  let ms = 0;
  return { now: () => ms, tick: (s: number) => (ms += s * 1000) };
}

describe('progress bars', () => {
  it('shows no ETA before it has a rate: the first frame of 60 steps is not "eta 0s"', () => {
    const c = clock();
    const timing = new StepTiming(c.now);
    timing.observe(1);
    expect(barFrame('rl', 1, 60, timing, 'reward 0.1')).toBe(
      'rl [........................] 1/60 0s  reward 0.1',
    );
    c.tick(2);
    timing.observe(2);
    c.tick(2);
    timing.observe(3);
    // Two steps in 4 s: 57 steps left take 114 s.
    expect(barFrame('rl', 3, 60, timing, '')).toBe('rl [#.......................] 3/60 4s<1m54s');
    expect(duration(3725)).toBe('1h02m');
  });

  it('thins plain output of long series to about ten lines', () => {
    expect(plainEvery(60)).toBe(1);
    expect(plainEvery(100)).toBe(1);
    expect(plainEvery(500)).toBe(50);
    expect(plainEvery(900)).toBe(100);
    expect(plainEvery(1100)).toBe(200);
  });
});

const warmup = (n: number, total = 500) =>
  `12:00:00 warmup step ${n}/${total}: sft loss ${(1 / n).toFixed(4)}`;
const rl = (n: number, total = 60) =>
  `12:00:00 step ${n}/${total}: reward 0.500, success 0.250, 32 samples of 32 episodes, staleness 0.50, loss 0.0100, 3.21 samples/s`;

describe('job submit: the RL job in a terminal', () => {
  it('draws a bar per phase from the driver lines, keeps finished phases and prints the other lines above', () => {
    const c = clock();
    const err = sink(true);
    const out = sink(false);
    const view = new RljobView({ live: true, out, err, now: c.now });
    view.push('12:00:00 actors ready: 1 rollout engine(s)');
    view.push('12:00:00 eval step 0: 0/67 held-out tasks');
    view.push('12:00:01 eval step 0: held-out success 0.000 (67 tasks, mean reward -1.000, 0.8 s)');
    view.push('12:00:01 eval sample: assistant: hi');
    for (let n = 1; n <= 3; n++) {
      view.push(warmup(n, 3));
      c.tick(1);
    }
    view.push('12:00:05 published weight version 3 to 1 rollout engine(s): full weights');
    view.push('12:00:05 checkpoint after the warm start: /c/job-1/step-3');
    view.push(rl(1, 4));
    c.tick(1);
    view.push(rl(2, 4));
    view.push('12:00:06 eval step 2: 0/67 held-out tasks');
    view.push('12:00:08 eval step 2: 30/67 held-out tasks');
    view.push('12:00:09 eval step 2: held-out success 0.448 (67 tasks, mean reward 0.100, 3.0 s)');
    view.push(rl(3, 4));
    view.push('12:00:10 summary {"steps":3}');
    view.end();
    expect(out.text).toBe('');
    const frames = err.frames;
    expect(frames).toContain('12:00:00 actors ready: 1 rollout engine(s)');
    expect(frames).toContain('eval       [........................] 0/67 0s  held-out tasks at step 0');
    // The first warm-start frame has no rate yet; the last one stays.
    expect(frames).toContain('warm start [########................] 1/3 0s  sft loss 1.0000');
    expect(frames).toContain('warm start [########################] 3/3 2s  sft loss 0.3333');
    expect(frames.filter((f) => f.startsWith('warm start [#####')).at(-1)).toMatch(/3\/3 2s {2}sft loss/);
    expect(frames).toContain('eval       [###########.............] 30/67 0s  held-out tasks at step 2');
    // After the evaluation the RL bar comes back, its label with the held-out figure.
    const i = frames.indexOf(
      '12:00:09 eval step 2: held-out success 0.448 (67 tasks, mean reward 0.100, 3.0 s)',
    );
    expect(i).toBeGreaterThan(0);
    expect(frames.slice(i).some((f) => /^RL {9}\[#+\.*\] 2\/4 .*held-out 0\.448$/.test(f))).toBe(true);
    expect(frames.at(-1)).toMatch(
      /^RL {9}\[#{18}\.{6}\] 3\/4 1s<1s {2}reward 0\.500, success 0\.250, 3\.21 samples\/s, held-out 0\.448$/,
    );
    // Lines a person does not need here: the bars and the summary say them.
    expect(err.text).not.toMatch(/published weight version|eval sample|summary \{|warmup step|step 1\/4/);
  });

  it('piped: the log as it is, a long warm start thinned to about ten lines with a note, no evaluation progress', () => {
    const err = sink(false);
    const out = sink(false);
    const view = new RljobView({ live: false, out, err, logFile: '/h/logs/rljobs/j.log' });
    view.push('12:00:00 eval step 0: 0/67 held-out tasks');
    view.push('12:00:01 eval step 0: held-out success 0.000 (67 tasks, mean reward -1.000, 0.8 s)');
    for (let n = 1; n <= 500; n++) view.push(warmup(n));
    for (let n = 1; n <= 60; n++) view.push(rl(n));
    view.push('12:00:10 summary {"steps":60}');
    view.end();
    const lines = out.text.trim().split('\n');
    const warm = lines.filter((l) => / warmup step /.test(l));
    expect(warm.map((l) => /step (\d+)\//.exec(l)![1])).toEqual([
      '1',
      '50',
      '100',
      '150',
      '200',
      '250',
      '300',
      '350',
      '400',
      '450',
      '500',
    ]);
    expect(lines.filter((l) => / step \d+\/60: /.test(l))).toHaveLength(60);
    expect(lines[0]).toMatch(/eval step 0: held-out success 0\.000/);
    expect(lines.at(-1)).toBe('12:00:10 summary {"steps":60}');
    expect(err.text).toBe(
      'clawray: showing every 50th of the 500 warm-start step lines; all are in /h/logs/rljobs/j.log\n',
    );
  });

  it('keeps the frame of a phase that did not finish (a stop, a failure)', () => {
    const err = sink(true);
    const view = new RljobView({ live: true, out: sink(false), err });
    view.push(rl(7, 60));
    view.push('12:00:00 the job failed: boom');
    view.end();
    expect(err.frames).toContain('12:00:00 the job failed: boom');
    expect(err.frames.at(-1)).toMatch(/^RL {9}\[#{3}\.+\] 7\/60 0s {2}reward 0\.500/);
    expect(err.text.endsWith('\n')).toBe(true);
  });
});
