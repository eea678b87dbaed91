#!/usr/bin/env node
/**
 * Writes the task set of examples/swe/rl.yaml: examples/swe/tasks.jsonl (SWE-bench-like JSONL,
 * the swe track's task format) and examples/swe/repo/ (the one repository every task starts from,
 * a plain directory the track snapshots as one commit).
 *
 * The repository holds two one-line settings files, `min` and `max`, both "0". Every issue asks
 * for one of them to hold a three-digit value; its hidden tests (the task's test_cmd) check that
 * file (FAIL_TO_PASS) and that the other one is untouched (PASS_TO_PASS). A demonstrated issue
 * carries its gold patch (a five-line unified diff, SWE-bench's field) and an `oracle`: the same
 * fix as one `write_file` call, which is what the warm start imitates.
 *
 * - "Set min to NNN." / "Set max to NNN.": clean demonstrations (split train).
 *   The warm start learns from them the call format, copying the value into it, and
 *   these two phrasings.
 * - "Floor is now NNN." (min) / "Limit is now NNN." (max): the RL tasks (no demonstration; split by the
 *   track's hash rule on the instance id, so the held-out split is these phrasings only), plus a
 *   few demonstrations from an unreliable demonstrator who mixes the two files up: half of its
 *   fixes edit the other file (they score −1; the task's tests stay the true ones). Imitating
 *   them leaves the policy at a coin flip between the files for these phrasings, which more SFT
 *   on the same demonstrations cannot resolve; the tests' verdict can.
 *
 * Every value has three digits and ends its issue, and both file names have three letters, so
 * each copy sits at a fixed distance from the end of the prompt, which a 98k-parameter model
 * learns within a few hundred SFT steps on a CPU.
 *
 * Deterministic (a seeded PRNG, no dependencies). Usage:
 *   node examples/swe/make-tasks.mjs [--demos N] [--rl N] [--noisy N] [--seed S] [--out DIR]
 *
 * --demos: clean demonstrations per demonstrated type; --rl: RL tasks per RL type (a fifth of
 * them held out); --noisy: unreliable demonstrations per RL type. The defaults keep the oracle
 * traces (two episodes' worth of sandbox runs per demonstration) and the held-out evaluation
 * cheap on a 2-core machine.
 * @writes ./tasks.jsonl ./repo
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { countOption, fnv1a, option, seededRandom } from '../task-gen.mjs';

const DEMOS = countOption('demos', 60);
const RL = countOption('rl', 100);
const NOISY = countOption('noisy', 10);
const SEED = countOption('seed', 7);
const OUT = option('out', dirname(fileURLToPath(import.meta.url)));

const rand = seededRandom(SEED);
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));

const FILES = ['min', 'max'];
const BASE = '0';
/** [issue prefix, the file it means, demonstrated cleanly, id prefix] */
const TYPES = [
  ['Set min to', 'min', true, 'setmin'],
  ['Set max to', 'max', true, 'setmax'],
  ['Floor is now', 'min', false, 'floor'],
  ['Limit is now', 'max', false, 'limit'],
];
const other = (file) => (file === 'min' ? 'max' : 'min');

/** The gold patch: `file` goes from BASE to `value`. */
const patchFor = (file, value) => `--- a/${file}\n+++ b/${file}\n@@ -1 +1 @@\n-${BASE}\n+${value}\n`;

/**
 * The demonstration: one `write_file` of the new value, as an agent with an editor tool makes the
 * fix (a 35-character call; the gold patch's `git apply` heredoc is 140, too long for a model this
 * small to copy without typos). The gold patch stays in the task as SWE-bench's reference.
 */
const oracleFor = (file, value) => [
  {
    content: null,
    tool_calls: [
      {
        id: 'call_fix',
        type: 'function',
        // The value first: "min" is two tokens and "max" three, so after the path the copy
        // would sit at a distance that depends on the file.
        function: { name: 'write_file', arguments: JSON.stringify({ content: String(value), path: file }) },
      },
    ],
  },
  { content: 'Done.' },
];

/** A test named after its file passes when the file holds `value` (sh; printed pytest-style). */
const check = (file, value) =>
  `[ "$(cat ${file})" = ${value} ] && echo PASSED ${file} || echo FAILED ${file}`;

const lines = [];
const counts = { demonstrated: 0, noisy: 0, rlTrain: 0, heldout: 0 };
const seen = new Set();
for (const [prefix, file, clean, idPrefix] of TYPES) {
  const wanted = clean ? DEMOS : RL + NOISY;
  for (let n = 0; n < wanted; ) {
    const value = int(100, 999);
    const statement = `${prefix} ${value}.`;
    if (seen.has(statement)) continue;
    seen.add(statement);
    // The first NOISY tasks of an RL type are the unreliable demonstrator's; they are marked
    // train so the split rule cannot put them in held-out (RL skips them: they have a demonstration).
    const noisy = !clean && n < NOISY;
    const id = `clawray__limits-${idPrefix}-${n + 1}`;
    n++;
    const task = {
      instance_id: id,
      repo: 'repo',
      problem_statement: statement,
      test_cmd: `${check(file, value)}; ${check(other(file), BASE)}`,
      FAIL_TO_PASS: [file],
      PASS_TO_PASS: [other(file)],
    };
    if (clean) {
      task.patch = patchFor(file, value);
      task.oracle = oracleFor(file, value);
      task.split = 'train';
      counts.demonstrated++;
    } else if (noisy) {
      // Exactly half of its demonstrations edit the other file.
      const edited = counts.noisy % 2 === 0 ? file : other(file);
      task.patch = patchFor(edited, value);
      task.oracle = oracleFor(edited, value);
      task.split = 'train';
      counts.noisy++;
    } else if (fnv1a(id) % 5 === 0) counts.heldout++;
    else counts.rlTrain++;
    lines.push(JSON.stringify(task));
  }
}

mkdirSync(join(OUT, 'repo'), { recursive: true });
for (const file of FILES) writeFileSync(join(OUT, 'repo', file), `${BASE}\n`);
writeFileSync(join(OUT, 'tasks.jsonl'), `${lines.join('\n')}\n`);
console.log(
  `${join(OUT, 'tasks.jsonl')}: ${lines.length} tasks: ${counts.demonstrated} demonstrated (set min, set max), ${counts.noisy} unreliable demonstrations, ${counts.rlTrain} RL train and ${counts.heldout} held out (floor, limit)`,
);
