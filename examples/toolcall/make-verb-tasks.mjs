#!/usr/bin/env node
/**
 * Writes examples/toolcall/verb-tasks.jsonl, the task file of rl.yaml: two-number arithmetic
 * with four verbs, where the demonstrations teach the format and two of the verbs, and only the
 * reward knows what the other two mean.
 *
 * - "Add AA and BB." (AA+BB) and "Multiply AA and BB." (AA*BB): clean demonstrations (an oracle
 *   trace each, split train). The warm start learns from them the call format, to copy the
 *   operands into the call and the tool's result into the answer, and these two verbs.
 * - "Sum AA and BB." (+) and "Product of AA and BB." (*): the RL tasks (no oracle; split by the
 *   task-file hash rule, so the held-out split is these verbs only), plus a few demonstrations
 *   from an unreliable demonstrator who uses the two verbs interchangeably: half of its traces
 *   call the other operator (and box that result, so they are wrong; the task's answer stays
 *   the true one). Imitating them leaves the policy at a coin flip between + and * for these
 *   verbs, which no amount of SFT on the same traces resolves; the calculator-checked reward does.
 *
 * Every operand has two digits and every true answer three (sums 100..198, products 100..999),
 * and every question ends in "AA and BB.", so each copy sits at a fixed distance from the end of
 * the question, which a 98k-parameter model learns within a few hundred SFT steps on a CPU (see
 * make-tasks.mjs).
 *
 * Deterministic (a seeded PRNG, no dependencies). Usage:
 *   node examples/toolcall/make-verb-tasks.mjs [--per-verb N] [--noisy N] [--seed S] [--out FILE]
 * @writes ./verb-tasks.jsonl
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { countOption, fnv1a, option, seededRandom } from '../task-gen.mjs';

const PER_VERB = countOption('per-verb', 200);
const NOISY = countOption('noisy', 40);
const SEED = countOption('seed', 11);
const OUT = option('out', join(dirname(fileURLToPath(import.meta.url)), 'verb-tasks.jsonl'));

const rand = seededRandom(SEED);
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));

/** [verb prefix, operator, demonstrated cleanly] */
const VERBS = [
  ['Add', '+', true],
  ['Multiply', '*', true],
  ['Sum', '+', false],
  ['Product of', '*', false],
];
const other = (op) => (op === '+' ? '*' : '+');
const value = (a, op, b) => (op === '+' ? a + b : a * b);
const calculatorTrace = (a, op, b) => {
  const result = String(value(a, op, b));
  return [
    {
      content: null,
      tool_calls: [
        {
          id: 'call_1',
          type: 'function',
          function: { name: 'calculator', arguments: JSON.stringify({ expression: `${a}${op}${b}` }) },
        },
      ],
    },
    { content: `\\boxed{${result}}` },
  ];
};

const lines = [];
const counts = { demonstrated: 0, noisy: 0, rlTrain: 0, heldout: 0 };
for (const [verb, op, clean] of VERBS) {
  const seen = new Set();
  const wanted = clean ? PER_VERB : PER_VERB + NOISY;
  while (seen.size < wanted) {
    const a = int(10, 99);
    const b = int(10, 99);
    const v = value(a, op, b);
    if (v < 100 || v > 999) continue;
    const question = `${verb} ${a} and ${b}.`;
    if (seen.has(question)) continue;
    // The first NOISY questions of an RL verb are the unreliable demonstrator's; the split rule
    // must not put them in held-out, so they are marked train (RL skips them: they have an oracle).
    const noisy = !clean && seen.size < NOISY;
    seen.add(question);
    const task = { question, answer: String(v) };
    if (clean) {
      task.split = 'train';
      task.oracle = calculatorTrace(a, op, b);
      counts.demonstrated++;
    } else if (noisy) {
      task.split = 'train';
      // Exactly half of its traces use the wrong operator.
      task.oracle = calculatorTrace(a, counts.noisy % 2 === 0 ? op : other(op), b);
      counts.noisy++;
    } else if (fnv1a(question) % 5 === 0) counts.heldout++;
    else counts.rlTrain++;
    lines.push(JSON.stringify(task));
  }
}
writeFileSync(OUT, `${lines.join('\n')}\n`);
console.log(
  `${OUT}: ${lines.length} tasks: ${counts.demonstrated} demonstrated (add, multiply), ${counts.noisy} unreliable demonstrations, ${counts.rlTrain} RL train and ${counts.heldout} held out (sum, product)`,
);
