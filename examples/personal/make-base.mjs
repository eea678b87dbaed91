#!/usr/bin/env node
/**
 * Builds examples/personal/base: the personal track's base policy, a tiny model fine-tuned with
 * clawray's SFT step on chats generated from the simulated user's request templates (plain
 * answers in words, and answers that follow an OPD name hint). No download; the same flags
 * write the same model. name.yaml starts from it.
 *
 * Usage (after `npm run build`): node examples/personal/make-base.mjs [--out DIR] [--preset tiny]
 *   [--seed 0] [--steps 400] [--batch 8] [--lr 5e-3] [--turns 2] [--sessions 64] [--names Sam]
 *   [--log-every 50] [--force]
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildPersonalBase, sampleBaseReplies } from '../../dist/jobs/rl/personal-base.js';

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const here = dirname(fileURLToPath(import.meta.url));
const out = opt('out', join(here, 'base'));
const result = await buildPersonalBase({
  outDir: out,
  preset: opt('preset', 'tiny'),
  seed: Number(opt('seed', 0)),
  steps: Number(opt('steps', 400)),
  batchSize: Number(opt('batch', 8)),
  lr: Number(opt('lr', 5e-3)),
  // The names hinted chats ask for. A 98k-parameter byte-level model does not learn to copy a
  // name out of the hint in a few hundred steps (with 22 other names it writes one of those), so
  // by default the hints name the user, as a pretrained instruct model would follow them.
  chats: {
    turnsPerSession: Number(opt('turns', 2)),
    sessions: Number(opt('sessions', 64)),
    names: opt('names', 'Sam').split(','),
  },
  logEvery: Number(opt('log-every', 50)),
  overwrite: args.includes('--force'),
  log: (line) => console.error(line),
});
for (const r of await sampleBaseReplies(result.dir, { count: 4 })) {
  console.error(`${r.hint ? '[hint: Sam] ' : ''}${r.request} -> ${JSON.stringify(r.reply)}`);
}
console.log(JSON.stringify(result));
