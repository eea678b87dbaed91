/** `clawray env check`: validate a track's task set before training on it. */
import type { Command } from 'commander';
import { checkTasks } from '../actors/envs/env-check.js';
import { loadTasks, loadTrack } from '../actors/envs/tracks.js';
import { ConfigError } from '../common/errors.js';
import { int } from './cli-parse.js';
import { progress } from './progress.js';
import { table } from './table.js';

const reward = (r: number | null) =>
  r === null || Number.isNaN(r) ? '-' : String(Math.round(r * 1000) / 1000);

export function registerEnvCommands(program: Command): void {
  const env = program.command('env').description('agent environments and their task sets');
  env
    .command('check')
    .description(
      "run every task's oracle (must score +1) and a do-nothing agent (must not); exits 1 when a task fails",
    )
    .argument('<track>', 'toolcall | terminal | swe | gui')
    .option('--tasks <path>', "task file or directory in the track's format (default: the built-in suite)")
    .option('--split <split>', 'only check train or heldout tasks')
    .option('--parallel <n>', 'tasks checked at once, each in its own environment', int('--parallel'), 2)
    .option('--json', 'print one JSON object instead of the table')
    .action(async (trackName: string, o) => {
      if (o.split !== undefined && o.split !== 'train' && o.split !== 'heldout') {
        throw new ConfigError(`--split expects train or heldout, got '${o.split}'`);
      }
      if (o.parallel < 1) throw new ConfigError('--parallel expects a whole number ≥ 1');
      const track = await loadTrack(trackName);
      const all = await loadTasks(track, o.tasks ?? 'builtin');
      const tasks = o.split ? all.filter((t) => t.split === o.split) : all;
      if (tasks.length === 0)
        throw new ConfigError(`no ${o.split} tasks in ${o.tasks ?? 'the built-in suite'}`);
      const bar = progress(`checking ${track.name}`, tasks.length);
      const results = await checkTasks(track, tasks, {
        parallel: o.parallel,
        onResult: (check, done) => bar.update(done, `${check.taskId} ${check.ok ? 'ok' : 'FAILED'}`),
      });
      bar.finish();
      const failed = results.filter((r) => !r.ok);
      if (o.json) {
        const summary = { track: track.name, tasks: results.length, ok: results.length - failed.length };
        process.stdout.write(`${JSON.stringify({ ...summary, failed: failed.length, results })}\n`);
      } else {
        const rows = results.map((r) => [
          r.taskId,
          r.split,
          reward(r.oracleReward),
          reward(r.nothingReward),
          r.ok ? 'ok' : `FAILED: ${r.problem}`,
        ]);
        process.stdout.write(`${table(['TASK', 'SPLIT', 'ORACLE', 'NOTHING', 'CHECK'], rows)}\n`);
        const bySplit = (split: string) => results.filter((r) => r.split === split).length;
        process.stdout.write(
          `${results.length} tasks (train ${bySplit('train')}, heldout ${bySplit('heldout')}): ` +
            `${results.length - failed.length} ok, ${failed.length} failed\n`,
        );
      }
      if (failed.length > 0) process.exitCode = 1;
    });
}
