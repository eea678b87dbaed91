#!/usr/bin/env node
/**
 * Writes examples/toolcall/tasks.jsonl: "Multiply A by B." with A one digit and B two digits
 * whose product has three digits (out of reach of a tiny model's mental arithmetic, and never
 * seen in training for the held-out pairs), each with its oracle: one calculator call, then the
 * tool's result boxed.
 *
 * One wording and fixed operand and answer lengths keep every copy (question → call arguments,
 * tool result → answer) at a fixed distance, which is what lets a 98k-parameter model learn to
 * copy within a few hundred SFT steps on a CPU.
 *
 * Deterministic (a seeded PRNG, no dependencies). The split is left to the task-file rule
 * (held out when FNV-1a(question) % 5 == 0), so held-out questions are number pairs that never
 * occur in train. Usage: node examples/toolcall/make-tasks.mjs [--count N] [--seed S] [--out FILE]
 * @writes ./tasks.jsonl
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { countOption, fnv1a, option, seededRandom } from '../task-gen.mjs';

const COUNT = countOption('count', 400);
const SEED = countOption('seed', 7);
const OUT = option('out', join(dirname(fileURLToPath(import.meta.url)), 'tasks.jsonl'));

const rand = seededRandom(SEED);
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));

const seen = new Set();
const lines = [];
let heldout = 0;
while (lines.length < COUNT) {
  const a = int(2, 9);
  const b = int(12, 99);
  if (a * b < 100 || a * b > 999) continue;
  const question = `Multiply ${a} by ${b}.`;
  if (seen.has(question)) continue;
  seen.add(question);
  const expression = `${a}*${b}`;
  const answer = String(a * b);
  const oracle = [
    {
      content: null,
      tool_calls: [
        {
          id: 'call_1',
          type: 'function',
          function: { name: 'calculator', arguments: JSON.stringify({ expression }) },
        },
      ],
    },
    { content: `\\boxed{${answer}}` },
  ];
  if (fnv1a(question) % 5 === 0) heldout++;
  lines.push(JSON.stringify({ question, answer, oracle }));
}
writeFileSync(OUT, `${lines.join('\n')}\n`);
console.log(`${OUT}: ${lines.length} tasks, ${lines.length - heldout} train, ${heldout} held out`);
