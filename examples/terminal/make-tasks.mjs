#!/usr/bin/env node
/**
 * Writes examples/terminal/tasks/, the task suite of rl.yaml, in terminal-bench's directory
 * layout (one directory per task: task.yaml, setup.sh, solution.sh, run-tests.sh, tests/).
 * Every task is one line of shell on a file the setup created holding "log": either replace its
 * content with a number (`echo NNN > fDD.txt`) or add the number as a new last line
 * (`echo NNN >> fDD.txt`). The test compares the file's bytes with the expected ones, so the
 * wrong redirection fails as surely as a miscopied number.
 *
 * - "Write NNN to fDD.txt." (>) and "Append NNN to fDD.txt." (>>): clean demonstrations (solution.sh,
 *   split train). The warm start learns from them the tool-call format, to copy the number and the
 *   file name into the command, to end the episode, and these two verbs.
 * - "Save NNN to fDD.txt." (>) and "Add NNN to fDD.txt." (>>): the RL tasks (no solution.sh; split by
 *   the hash rule on the task id, so the held-out split is these verbs only), plus a few
 *   demonstrations from an unreliable demonstrator who uses the two verbs interchangeably: half
 *   of its solutions use the other redirection. Imitating them leaves the policy at a coin flip
 *   between > and >> for these verbs, which no amount of SFT on the same traces resolves; the
 *   tests do.
 *
 * The number has three digits and the file name is "f", two digits and ".txt", and every
 * instruction ends in "NNN to fDD.txt.": the tokenizer splits numbers into single digits, so each
 * copy sits at a fixed distance from the end of the instruction in tokens, which a model this
 * small learns within a few hundred SFT steps. (With letters, byte-pair merges made the
 * distance vary from task to task, and the warm start miscopied most file names.)
 *
 * Deterministic (a seeded PRNG, no dependencies). Usage:
 *   node examples/terminal/make-tasks.mjs [--per-verb N] [--noisy N] [--seed S] [--out DIR]
 * @writes ./tasks
 */
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { countOption, fnv1a, option, seededRandom } from '../task-gen.mjs';

const PER_VERB = countOption('per-verb', 120);
const NOISY = countOption('noisy', 30);
const SEED = countOption('seed', 7);
const OUT = option('out', join(dirname(fileURLToPath(import.meta.url)), 'tasks'));

const rand = seededRandom(SEED);
const digits = (n) => String(10 ** (n - 1) + Math.floor(rand() * 9 * 10 ** (n - 1)));

/** [verb, id prefix, redirection, demonstrated cleanly] */
const VERBS = [
  ['Write', 'write', '>', true],
  ['Append', 'append', '>>', true],
  ['Save', 'save', '>', false],
  ['Add', 'add', '>>', false],
];
const other = (op) => (op === '>' ? '>>' : '>');
const EXISTING = 'log\n';
const expected = (op, word) => (op === '>' ? `${word}\n` : `${EXISTING}${word}\n`);

const RUN_TESTS = `#!/bin/sh
# One test: the file's bytes are the expected ones (pytest-style result line).
cd /workspace || exit 1
if cmp -s "$(cat "$TEST_DIR/file")" "$TEST_DIR/expected"; then
  echo "PASSED test_outputs.py::test_file_content"
else
  echo "FAILED test_outputs.py::test_file_content"
fi
`;

function writeTask(id, { instruction, split, file, word, op, solutionOp }) {
  const dir = join(OUT, id);
  mkdirSync(join(dir, 'tests'), { recursive: true });
  const yaml = [
    `instruction: ${JSON.stringify(instruction)}`,
    ...(split ? [`split: ${split}`] : []),
    'max_agent_timeout_sec: 30',
    'max_test_timeout_sec: 30',
    'test_names: [test_outputs.py::test_file_content]',
  ];
  writeFileSync(join(dir, 'task.yaml'), `${yaml.join('\n')}\n`);
  writeFileSync(join(dir, 'setup.sh'), `printf 'log\\n' > ${file}\n`, { mode: 0o755 });
  if (solutionOp)
    writeFileSync(join(dir, 'solution.sh'), `echo ${word} ${solutionOp} ${file}`, { mode: 0o755 });
  writeFileSync(join(dir, 'run-tests.sh'), RUN_TESTS, { mode: 0o755 });
  writeFileSync(join(dir, 'tests', 'file'), file);
  writeFileSync(join(dir, 'tests', 'expected'), expected(op, word));
}

if (existsSync(OUT) && readdirSync(OUT).length > 0) rmSync(OUT, { recursive: true });
mkdirSync(OUT, { recursive: true });
const counts = { demonstrated: 0, noisy: 0, rlTrain: 0, heldout: 0 };
for (const [verb, prefix, op, clean] of VERBS) {
  const seen = new Set();
  const wanted = clean ? PER_VERB : PER_VERB + NOISY;
  while (seen.size < wanted) {
    const word = digits(3);
    const file = `f${digits(2)}.txt`;
    const id = `${prefix}-${word}-${file.replace('.txt', '')}`;
    if (seen.has(id)) continue;
    // The first NOISY tasks of an RL verb are the unreliable demonstrator's; the split rule must
    // not put them in held-out, so they are marked train (RL skips them: they have an oracle).
    const noisy = !clean && seen.size < NOISY;
    seen.add(id);
    const instruction = `${verb} ${word} to ${file}.`;
    const task = { instruction, file, word, op };
    if (clean) {
      writeTask(id, { ...task, split: 'train', solutionOp: op });
      counts.demonstrated++;
    } else if (noisy) {
      // Exactly half of its solutions use the other redirection.
      writeTask(id, { ...task, split: 'train', solutionOp: counts.noisy % 2 === 0 ? op : other(op) });
      counts.noisy++;
    } else {
      writeTask(id, task);
      if (fnv1a(id) % 5 === 0) counts.heldout++;
      else counts.rlTrain++;
    }
  }
}
console.log(
  `${OUT}: ${counts.demonstrated + counts.noisy + counts.rlTrain + counts.heldout} tasks: ${counts.demonstrated} demonstrated (write, append), ${counts.noisy} unreliable demonstrations, ${counts.rlTrain} RL train and ${counts.heldout} held out (save, add)`,
);
