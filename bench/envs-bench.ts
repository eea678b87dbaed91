/**
 * `npm run bench -- envs`: environment steps/s of each track, playing the built-in suites'
 * oracle episodes with two environments at once (one per core here). The baseline is the floor
 * every sandboxed step pays: bare `true` runs in the sandbox per second, in the same run. The gui
 * track is measured twice: a browser context per episode (its default) and one kept page
 * (`isolation: 'page'`).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { playEpisode } from '../actors/envs/env-check.js';
import { runSandboxed } from '../actors/envs/sandbox/sandbox.js';
import { TRACK_NAMES, type TrackTask } from '../actors/envs/track.js';
import { loadTrack } from '../actors/envs/tracks.js';

const PARALLEL = 2;
/** Each track plays its suite until this much time has passed (whole episodes). */
const TRACK_BUDGET_MS = 20_000;

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

async function sandboxBaseline(): Promise<number> {
  const workspace = await mkdtemp(join(tmpdir(), 'clawray-bench-sandbox-'));
  try {
    const started = performance.now();
    let runs = 0;
    while (performance.now() - started < 3_000) {
      await Promise.all(
        Array.from({ length: PARALLEL }, () => runSandboxed({ command: ['true'], workspace })),
      );
      runs += PARALLEL;
    }
    return runs / ((performance.now() - started) / 1000);
  } finally {
    await rm(workspace, { recursive: true, force: true });
  }
}

async function trackBench(name: (typeof TRACK_NAMES)[number], settings?: Record<string, unknown>) {
  const track = await loadTrack(name);
  const tasks: TrackTask[] = await track.builtinTasks();
  let steps = 0;
  let episodes = 0;
  let solved = 0;
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    const env = track.createEnvironment(tasks, { settings });
    try {
      while (performance.now() - started < TRACK_BUDGET_MS) {
        const task = tasks[next++ % tasks.length];
        // +1 for reset: it is an environment call with the same costs (workspace, setup, page load).
        steps += task.oracle.length + 1;
        if ((await playEpisode(env, task.id, task.oracle)) === 1) solved++;
        episodes++;
      }
    } finally {
      await env.close();
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
  const seconds = (performance.now() - started) / 1000;
  const how = settings ? ` ${JSON.stringify(settings)}` : '';
  process.stderr.write(`envs: ${name}${how} ${episodes} episodes, ${steps} steps in ${round(seconds)} s\n`);
  return {
    stepsPerSec: round(steps / seconds),
    episodesPerSec: round(episodes / seconds, 2),
    oracleSolvedRate: round(solved / episodes, 3),
  };
}

export async function runEnvsBench(): Promise<Record<string, unknown>> {
  const result: Record<string, unknown> = { bench: 'envs', parallel: PARALLEL };
  const baseline = await sandboxBaseline();
  result.sandboxBareRunsPerSec = round(baseline);
  for (const name of TRACK_NAMES) {
    const r = await trackBench(name);
    result[`${name}StepsPerSec`] = r.stepsPerSec;
    result[`${name}EpisodesPerSec`] = r.episodesPerSec;
    result[`${name}OracleSolvedRate`] = r.oracleSolvedRate;
  }
  // The gui line above opens a browser context per episode (the default); this one keeps a page.
  const kept = await trackBench('gui', { isolation: 'page' });
  result.guiKeptPageStepsPerSec = kept.stepsPerSec;
  result.guiKeptPageEpisodesPerSec = kept.episodesPerSec;
  result.guiKeptPageOracleSolvedRate = kept.oracleSolvedRate;
  return result;
}
