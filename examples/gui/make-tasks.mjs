#!/usr/bin/env node
/**
 * Writes examples/gui/tasks/, the task directory of rl.yaml in the gui track's on-disk format
 * (`tasks.jsonl` + the pages it names): a small page, "Size", with two text fields, Width and
 * Height, whose values are the page state the evaluator reads, and below them the requested
 * three-digit number (one page per number, `pages/NNN.html`). Every task asks for that number in
 * one of the fields and is solved by one `type` call; its goal is that field holding the number
 * and the other one still empty, so typing into the wrong field scores −1.
 *
 * - "Set the width to NNN." and "Set the height to NNN.": clean demonstrations (an oracle of one
 *   `type` call each, split train). The warm start learns from them the call format, to copy the
 *   number into the call, and which field these two phrasings name.
 * - "Make it wider, to NNN." (Width) and "Make it taller, to NNN." (Height): the RL tasks (no
 *   oracle; split by the track's hash rule on the instruction, so the held-out split is these
 *   phrasings only), plus demonstrations from an unreliable demonstrator who mixes the two fields
 *   up: it was asked each of its requests twice and typed into each field once (two task lines,
 *   ids `<kind>-NNN-a` / `-b`). Imitating them leaves the policy at a coin flip between the fields
 *   for these phrasings, whatever the number, which more SFT on the same traces cannot resolve;
 *   the page's own verdict (the reward) can. (With one trace per request, half of them wrong, the
 *   warm start memorised a field per number instead, and sampling then picked the same field for
 *   every sample of a task: GRPO saw no group with both rewards, and learned nothing.)
 *
 * The number is the last thing of the page's accessibility tree, so it sits at a fixed distance
 * from the end of every prompt, and the call's arguments put the text first
 * (`{"text": "NNN", "element": "Width"}`), so the copy lands at a fixed place in the reply: what a
 * 98k-parameter model can learn on a CPU (examples/toolcall does the same with arithmetic). The
 * page lists nothing else, and the environment adds its header, so a prompt stays near 230 tokens.
 *
 * Deterministic (a seeded PRNG, no dependencies). Usage:
 *   node examples/gui/make-tasks.mjs [--per-kind N] [--rl-per-kind N] [--noisy N] [--seed S] [--out DIR]
 * @writes ./tasks
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { countOption, fnv1a, option, seededRandom } from '../task-gen.mjs';

const PER_KIND = countOption('per-kind', 50);
const RL_PER_KIND = countOption('rl-per-kind', 100);
const NOISY = countOption('noisy', 10);
const SEED = countOption('seed', 7);
const OUT = option('out', join(dirname(fileURLToPath(import.meta.url)), 'tasks'));

const rand = seededRandom(SEED);
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));

// The page: two labelled fields and the requested number. Its state is the fields' values.
const pageFor = (number) =>
  `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Size</title></head>
<body>
<input id="width" aria-label="Width" autocomplete="off">
<input id="height" aria-label="Height" autocomplete="off">
<p>NUMBER</p>
<script>
(() => {
  'use strict';
  const state = { width: '', height: '' };
  window.__taskState = state;
  for (const id of ['width', 'height']) {
    document.getElementById(id).addEventListener('input', (e) => { state[id] = e.target.value; });
  }
})();
</script>
</body>
</html>
`.replace('NUMBER', number);
// One page per number (tasks that ask for the same number share it).
const pagePath = (number) => `pages/${number}.html`;
const pages = new Map();

/** [kind, instruction prefix, the field it names, demonstrated cleanly] */
const KINDS = [
  ['width', 'Set the width to', 'Width', true],
  ['height', 'Set the height to', 'Height', true],
  ['wider', 'Make it wider, to', 'Width', false],
  ['taller', 'Make it taller, to', 'Height', false],
];
const otherField = (field) => (field === 'Width' ? 'Height' : 'Width');
const goalFor = (field, number) => ({
  state: { width: field === 'Width' ? number : '', height: field === 'Height' ? number : '' },
});
// One call, text first: the copied number sits at the same place of every reply.
const typeTrace = (field, number) => [
  {
    content: null,
    tool_calls: [
      {
        id: 'call_1',
        type: 'function',
        function: { name: 'type', arguments: JSON.stringify({ text: number, element: field }) },
      },
    ],
  },
];

const lines = [];
const counts = { demonstrated: 0, noisy: 0, rlTrain: 0, heldout: 0 };
for (const [kind, prefix, field, clean] of KINDS) {
  const seen = new Set();
  const wanted = clean ? PER_KIND : RL_PER_KIND + NOISY;
  while (seen.size < wanted) {
    const number = String(int(100, 999));
    const instruction = `${prefix} ${number}.`;
    if (seen.has(instruction)) continue;
    // The first NOISY tasks of an RL kind are the unreliable demonstrator's; they are marked train
    // so the split rule cannot hold them out (RL skips them: they have an oracle).
    const noisy = !clean && seen.size < NOISY;
    seen.add(instruction);
    pages.set(pagePath(number), pageFor(number));
    const task = { kind, page: pagePath(number), instruction, goal: goalFor(field, number) };
    if (clean) {
      task.split = 'train';
      task.oracle = typeTrace(field, number);
      counts.demonstrated++;
    } else if (noisy) {
      // The same request twice, once into each field.
      for (const [suffix, typed] of [
        ['a', field],
        ['b', otherField(field)],
      ]) {
        const id = `${kind}-${number}-${suffix}`;
        lines.push(JSON.stringify({ id, ...task, split: 'train', oracle: typeTrace(typed, number) }));
        counts.noisy++;
      }
      continue;
    } else if (fnv1a(instruction) % 5 === 0) counts.heldout++;
    else counts.rlTrain++;
    lines.push(JSON.stringify(task));
  }
}
mkdirSync(join(OUT, 'pages'), { recursive: true });
for (const [path, html] of [...pages].sort()) writeFileSync(join(OUT, path), html);
writeFileSync(join(OUT, 'tasks.jsonl'), `${lines.join('\n')}\n`);
console.log(
  `${OUT}: ${lines.length} tasks: ${counts.demonstrated} demonstrated (width, height), ${counts.noisy} unreliable demonstrations, ${counts.rlTrain} RL train and ${counts.heldout} held out (wider, taller)`,
);
