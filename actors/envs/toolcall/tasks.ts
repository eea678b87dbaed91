/**
 * The toolcall track's built-in task suite, generated locally and deterministically (a seeded
 * PRNG, no downloads): arithmetic word problems for the calculator, facts of the shipped document
 * store for lookup, lookup-then-calculate questions, and small computations for run_python and
 * run_js. Every task carries an ORACLE: a scripted sequence of actions that reaches +1 through
 * the environment.
 *
 * Splits: a task is held out when the FNV-1a hash of its question is 0 mod 5, so train and
 * held-out are disjoint and a task's split never depends on what else was generated (nor on the
 * seed). Task ids are `<kind>-<hash of the question>`; within a kind they are ordered by id.
 */

import { seededRandom } from '../../../common/random.js';
import type { Action, ToolCall } from '../environment.js';
import { fnv1a, type Split, splitOfHash, type TrackTask } from '../track.js';
import { calculate } from './calculator.js';

export type TaskKind = 'arithmetic' | 'lookup' | 'lookup_calc' | 'python' | 'js' | 'custom';
export type { Split };

export interface ToolcallTask extends TrackTask {
  /** The generator template (`custom` for tasks loaded from a file). */
  kind: TaskKind;
  question: string;
  /** The exact string the final `\boxed{…}` must hold. */
  answer: string;
  /** Scripted actions that solve the task: tool calls, then the boxed answer. */
  oracle: Action[];
}

export const SUITE_SEED = 20240601;
export { fnv1a, HELDOUT_EVERY } from '../track.js';

function toolCall(n: number, name: string, args: Record<string, unknown>): ToolCall {
  return { id: `call_${n}`, type: 'function', function: { name, arguments: JSON.stringify(args) } };
}

function finalAnswer(answer: string): Action {
  return { content: `The answer is \\boxed{${answer}}.` };
}

type Draft = Omit<ToolcallTask, 'id' | 'split'>;

function singleTool(kind: TaskKind, question: string, answer: string, tool: string, args: object): Draft {
  return {
    kind,
    question,
    answer,
    oracle: [
      { content: `Let me use ${tool}.`, tool_calls: [toolCall(1, tool, args as Record<string, unknown>)] },
      finalAnswer(answer),
    ],
  };
}

function arithmeticTasks(rand: () => number, perTemplate: number): Draft[] {
  const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
  const out: Draft[] = [];
  const calc = (q: string, expression: string) =>
    singleTool('arithmetic', q, calculate(expression), 'calculator', { expression });
  for (let i = 0; i < perTemplate; i++) {
    const [a, b, c] = [int(12, 90), int(6, 40), int(8, 60)];
    const d = int(1, a * b * c - 1);
    out.push(
      calc(
        `A warehouse holds ${a} crates, each with ${b} boxes of ${c} bolts. After ${d} bolts are shipped, how many bolts remain?`,
        `${a} * ${b} * ${c} - ${d}`,
      ),
    );
    const [v1, t1, v2, t2] = [int(40, 140), int(2, 9), int(40, 140), int(2, 9)];
    out.push(
      calc(
        `A train travels at ${v1} km/h for ${t1} hours and then at ${v2} km/h for ${t2} hours. How many kilometres does it travel in total?`,
        `${v1} * ${t1} + ${v2} * ${t2}`,
      ),
    );
    const [n, per, tip] = [int(3, 12), int(17, 250), int(5, 40)];
    const bill = per * n - tip;
    out.push(
      calc(
        `${n} friends add a tip of ${tip} kellin to a bill of ${bill} kellin and split the total equally. How many kellin does each friend pay?`,
        `(${bill} + ${tip}) / ${n}`,
      ),
    );
    const [x, y, z] = [int(2, 40), int(2, 40), int(100, 9999)];
    out.push(calc(`What is (${x} - ${y})^3 + ${z}?`, `(${x} - ${y})^3 + ${z}`));
  }
  return out;
}

/** [question, answer, lookup query] over the facts of corpus.ts. */
const LOOKUP_FACTS: readonly [string, string, string][] = [
  ['What is the capital city of Quessia? Answer with the name only.', 'Velmora', 'capital Quessia'],
  ['In which year was Velmora founded?', '1312', 'Velmora founded'],
  ['How long is the river Sarn, in kilometres? Answer with the number only.', '418', 'river Sarn length'],
  ['What is the name of the highest summit of the Grell Mountains?', 'Mount Taskel', 'Grell highest summit'],
  ['How high is Mount Taskel, in metres? Answer with the number only.', '3907', 'Mount Taskel metres'],
  ['What is the currency of Quessia called? Answer in lowercase.', 'kellin', 'currency Quessia'],
  ['How many pips make one kellin?', '64', 'kellin pips'],
  ['In which village was Ortha Lindqvist born?', 'Harrowmere', 'Ortha Lindqvist born village'],
  ['What was the name of Ortha Lindqvist\u2019s ship?', 'Gull of Ashes', 'Lindqvist ship'],
  ['Who built the lighthouse of Harrowmere?', 'Piet Vallor', 'Harrowmere lighthouse built'],
  ['In which year was the Quessian Academy of Sciences established?', '1704', 'Academy Sciences established'],
  [
    'Who was the first president of the Quessian Academy of Sciences?',
    'Idris Kaul',
    'Academy first president',
  ],
  [
    'What is the orbital period of comet Serevin, in years? Answer with the number only.',
    '47',
    'comet Serevin',
  ],
  ['What is the national dish of Quessia? Answer in lowercase.', 'marrowcake', 'national dish Quessia'],
  [
    'What is the area of Lake Ommet, in square kilometres? Answer with the number only.',
    '212',
    'Lake Ommet area',
  ],
  ['What is the parliament of Quessia called?', 'Tollmoot', 'parliament Quessia'],
  ['How many seats does the Quessian parliament have?', '151', 'parliament seats'],
  ['What is the national animal of Quessia? Answer in lowercase.', 'snow hare', 'national animal Quessia'],
];

/** [question, lookup query, calculator expression] needing a fact, then arithmetic. */
const LOOKUP_CALC: readonly [string, string, string][] = [
  ['In which year after 1986 will comet Serevin next pass the sun?', 'comet Serevin period', '1986 + 47'],
  [
    'How many years after the founding of Velmora was the Quessian Academy of Sciences established?',
    'Velmora founded Academy established',
    '1704 - 1312',
  ],
  ['How many pips are 37 kellin worth?', 'kellin pips', '37 * 64'],
  [
    'If every seat of the Tollmoot were filled 4 times over, how many members would that be?',
    'Tollmoot seats',
    '151 * 4',
  ],
  ['How many metres higher than 3000 metres is Mount Taskel?', 'Mount Taskel metres', '3907 - 3000'],
  [
    'How many kilometres would a boat travel going the full length of the river Sarn and back?',
    'river Sarn length',
    '418 * 2',
  ],
  [
    'How many square kilometres would three lakes the size of Lake Ommet cover?',
    'Lake Ommet area',
    '212 * 3',
  ],
];

function isPrime(n: number): boolean {
  if (n < 2) return false;
  for (let d = 2; d * d <= n; d++) if (n % d === 0) return false;
  return true;
}

function pythonTasks(rand: () => number, perTemplate: number): Draft[] {
  const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
  const py = (q: string, answer: string, code: string) =>
    singleTool('python', q, answer, 'run_python', { code });
  const out: Draft[] = [];
  for (let i = 0; i < perTemplate; i++) {
    const n = int(100, 5000);
    let sum = 0;
    for (let k = 2; k < n; k++) if (isPrime(k)) sum += k;
    out.push(
      py(
        `What is the sum of all prime numbers below ${n}?`,
        String(sum),
        `n = ${n}\nprint(sum(k for k in range(2, n) if all(k % d for d in range(2, int(k ** 0.5) + 1))))\n`,
      ),
    );
    const [fn, m] = [int(50, 500), int(1000, 9999)];
    let [f1, f2] = [1, 1];
    for (let k = 3; k <= fn; k++) [f1, f2] = [f2, (f1 + f2) % m];
    out.push(
      py(
        `With F(1) = F(2) = 1, what is the ${fn}th Fibonacci number modulo ${m}?`,
        String(f2 % m),
        `a, b = 1, 1\nfor _ in range(${fn} - 2):\n    a, b = b, a + b\nprint(b % ${m})\n`,
      ),
    );
    const [limit, a, b] = [int(1000, 100000), int(3, 19), int(3, 19)];
    let count = 0;
    for (let k = 1; k <= limit; k++) if (k % a === 0 || k % b === 0) count++;
    out.push(
      py(
        `How many integers from 1 to ${limit} inclusive are divisible by ${a} or by ${b}?`,
        String(count),
        `print(sum(1 for k in range(1, ${limit} + 1) if k % ${a} == 0 or k % ${b} == 0))\n`,
      ),
    );
    const [base, exp] = [int(2, 99), int(20, 120)];
    const digits = (BigInt(base) ** BigInt(exp))
      .toString()
      .split('')
      .reduce((s, ch) => s + Number(ch), 0);
    out.push(
      py(
        `What is the sum of the decimal digits of ${base}^${exp}?`,
        String(digits),
        `print(sum(int(c) for c in str(${base} ** ${exp})))\n`,
      ),
    );
  }
  return out;
}

function jsTasks(rand: () => number, perTemplate: number): Draft[] {
  const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
  const js = (q: string, answer: string, code: string) => singleTool('js', q, answer, 'run_js', { code });
  const out: Draft[] = [];
  for (let i = 0; i < perTemplate; i++) {
    const n = int(10_000, 2_000_000);
    let divisors = 0;
    for (let d = 1; d * d <= n; d++) if (n % d === 0) divisors += d * d === n ? 1 : 2;
    out.push(
      js(
        `How many positive divisors does ${n} have?`,
        String(divisors),
        `let c = 0;\nfor (let d = 1; d * d <= ${n}; d++) if (${n} % d === 0) c += d * d === ${n} ? 1 : 2;\nconsole.log(c);\n`,
      ),
    );
    const start = int(2, 100_000);
    let steps = 0;
    for (let x = start; x !== 1; steps++) x = x % 2 === 0 ? x / 2 : 3 * x + 1;
    out.push(
      js(
        `Starting from ${start}, how many Collatz steps (n -> n/2 if even, else 3n+1) does it take to reach 1?`,
        String(steps),
        `let x = ${start}, s = 0;\nwhile (x !== 1) { x = x % 2 === 0 ? x / 2 : 3 * x + 1; s++; }\nconsole.log(s);\n`,
      ),
    );
  }
  return out;
}

export interface SuiteOptions {
  seed?: number;
  /** Tasks per generator template (arithmetic has 4 templates, python 4, js 2); default 6. */
  perTemplate?: number;
}

/** The whole suite, both splits, in a stable order (kind, then id). */
export function buildTaskSuite(options: SuiteOptions = {}): ToolcallTask[] {
  const seed = options.seed ?? SUITE_SEED;
  const per = options.perTemplate ?? 6;
  const drafts: Draft[] = [
    ...arithmeticTasks(seededRandom(seed), per),
    ...LOOKUP_FACTS.map(([q, a, query]) => singleTool('lookup', q, a, 'lookup', { query })),
    ...LOOKUP_CALC.map(([q, query, expression]): Draft => {
      const answer = calculate(expression);
      return {
        kind: 'lookup_calc',
        question: q,
        answer,
        oracle: [
          { content: 'First I look the fact up.', tool_calls: [toolCall(1, 'lookup', { query })] },
          { content: 'Now I compute.', tool_calls: [toolCall(2, 'calculator', { expression })] },
          finalAnswer(answer),
        ],
      };
    }),
    ...pythonTasks(seededRandom(seed + 1), per),
    ...jsTasks(seededRandom(seed + 2), per),
  ];
  const byKind = new Map<TaskKind, Map<string, Draft>>();
  for (const d of drafts) {
    const kind = byKind.get(d.kind) ?? new Map<string, Draft>();
    byKind.set(d.kind, kind);
    if (!kind.has(d.question)) kind.set(d.question, d); // drop duplicate questions
  }
  const tasks: ToolcallTask[] = [];
  for (const [kind, unique] of byKind) {
    const ordered = [...unique.values()]
      .map((d) => ({ d, h: fnv1a(d.question) }))
      .sort((x, y) => (x.h < y.h ? -1 : x.h > y.h ? 1 : x.d.question < y.d.question ? -1 : 1));
    for (const { d, h } of ordered) {
      const split = splitOfHash(h);
      tasks.push({ ...d, id: `${kind}-${h}`, split });
    }
  }
  return tasks;
}

/** The tasks of one split. */
export function taskSplit(split: Split, options: SuiteOptions = {}): ToolcallTask[] {
  return buildTaskSuite(options).filter((t) => t.split === split);
}
