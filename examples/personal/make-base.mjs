#!/usr/bin/env node
/**
 * Builds examples/personal/base: the personal track's base policy, a tiny model fine-tuned with
 * clawray's SFT step on chats generated from the simulated user's request templates: plain
 * answers in words, answers that follow an OPD name hint, and sessions where the user corrects
 * a reply without their name, after which the base heeds the correction 30% of the time (an
 * instruct model that sometimes follows a correction in its context). No download; the same
 * flags write the same model. name.yaml starts from it.
 *
 * Defaults are the example's recipe: 500 steps of 8 at lr 5e-3 on 660 chats from 128 sessions
 * of 4 turns, half of them corrected, 30% of the turns also hinted (10 min on 2 free cores,
 * 17–22 min on a shared machine).
 *
 * Usage (after `npm run build`): node examples/personal/make-base.mjs [--out DIR] [--preset tiny]
 *   [--seed 0] [--steps 500] [--batch 8] [--lr 5e-3] [--turns 4] [--sessions 128] [--names Sam]
 *   [--corrected 0.5] [--heed 0.3] [--hint-share 0.3] [--log-every 50] [--force]
 * @writes ./base
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ClawrayError } from '../../dist/common/errors.js';
import { buildPersonalBase, sampleBaseReplies } from '../../dist/jobs/rl/personal-base.js';
import { countOption, fractionOption, option as opt } from '../task-gen.mjs';

const args = process.argv.slice(2);
const here = dirname(fileURLToPath(import.meta.url));
const out = opt('out', join(here, 'base'));
// A wrong flag is the user's mistake: say what is wrong, without a stack trace.
const result = await buildPersonalBase({
  outDir: out,
  preset: opt('preset', 'tiny'),
  seed: countOption('seed', 0),
  steps: countOption('steps', 500),
  batchSize: countOption('batch', 8),
  lr: Number(opt('lr', 5e-3)),
  // The names hinted chats ask for. A 98k-parameter byte-level model does not learn to copy a
  // name out of the hint in a few hundred steps (with 22 other names it writes one of those), so
  // by default the hints name the user, as a pretrained instruct model would follow them.
  chats: {
    turnsPerSession: countOption('turns', 4),
    sessions: countOption('sessions', 128),
    names: opt('names', 'Sam').split(','),
    // Without corrections heeded now and then, OPD from the policy's own samples never finds the
    // name: with --heed 0 the job stays at 0.03 (the student gives "Sam," no probability to move).
    correctedShare: fractionOption('corrected', 0.5),
    heedShare: fractionOption('heed', 0.3),
    // Hinted chats teach the teacher to follow the hint, and every one of them opens with "Sam,":
    // at half the turns base seed 2 also opened 6 of 16 unhinted first replies with it (the job
    // started at 0.26–0.37, not ≤ 0.2); at 30% no base does (starts 0.00–0.11), and the teacher
    // still follows the hint. At 20% a base (seed 1) carried an earlier correction into later
    // requests' first replies instead (starts 0.28–0.32).
    hintShare: fractionOption('hint-share', 0.3),
  },
  logEvery: countOption('log-every', 50),
  overwrite: args.includes('--force'),
  log: (line) => console.error(line),
}).catch((err) => {
  if (!(err instanceof ClawrayError)) throw err;
  console.error(`make-base: ${err.message}`);
  process.exit(2);
});
for (const r of await sampleBaseReplies(result.dir, { count: 4 })) {
  console.error(`${r.hint ? '[hint: Sam] ' : ''}${r.request} -> ${JSON.stringify(r.reply)}`);
}
console.log(JSON.stringify(result));
