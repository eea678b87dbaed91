/**
 * The terminal track's built-in suite, generated locally and deterministically (a seeded PRNG, no
 * downloads) from templates of everyday shell work: creating files, counting, sorting and
 * deduplicating, editing a config, fixing a broken script, checksums, directory trees, CSV
 * reports and cleaning up files. Each task's data comes from its setup script; its tests (plain
 * Python printing pytest-style result lines, runnable under pytest too) hold the expected values
 * computed here, so nothing the agent does to the data can move the target. Several tests per
 * task give partial credit; every task has at least one test the untouched workspace fails, so
 * doing nothing never scores +1.
 *
 * Ids are `<template>-<FNV-1a of instruction and setup>`; a task is held out when that hash is
 * 0 mod 5, so a task's split never depends on the seed or on the other tasks. Within a template
 * no two tasks share an instruction, so no held-out task reads exactly like a training one.
 */
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { seededRandom } from '../../../common/random.js';
import { fnv1a, oracleFor, splitOfHash, type TerminalTask } from './task.js';

export const SUITE_SEED = 20240611;
export const DEFAULT_PER_TEMPLATE = 3;

/** The test file every built-in task has, and the prefix of its test names. */
export const BUILTIN_TEST_FILE = 'test_outputs.py';

export const BUILTIN_RUN_TESTS = `#!/bin/sh
# The tests print pytest-style result lines (PASSED/FAILED name); pytest -rA would print the same.
cd /workspace || exit 1
exec python3 "$TEST_DIR/${BUILTIN_TEST_FILE}"
`;

const TEST_PRELUDE = `import os
import subprocess
import tempfile

W = '/workspace'


def path(rel):
    return os.path.join(W, rel)


def read(rel):
    with open(path(rel), encoding='utf-8') as f:
        return f.read()


def lines(rel):
    return read(rel).splitlines()


def run(argv):
    # The program under test is the agent's: its output must not reach the result lines.
    return subprocess.run(argv, cwd=W, capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
`;

const TEST_MAIN = `

def _main():
    for name, fn in list(globals().items()):
        if not name.startswith('test_') or not callable(fn):
            continue
        try:
            fn()
        except BaseException as e:  # an exit or a timeout fails this test; the others still run
            reason = (str(e).splitlines() or [''])[0]
            print(f'FAILED ${BUILTIN_TEST_FILE}::{name} - {type(e).__name__}: {reason}', flush=True)
        else:
            print(f'PASSED ${BUILTIN_TEST_FILE}::{name}', flush=True)


if __name__ == '__main__':
    _main()
`;

interface Draft {
  template: string;
  instruction: string;
  setup?: string;
  solution: string;
  /** Python test functions (`def test_…():`), joined into the test file. */
  tests: string[];
}

type Rand = () => number;

const WORDS = [
  'amber',
  'basil',
  'cedar',
  'delta',
  'ember',
  'fjord',
  'garnet',
  'harbor',
  'indigo',
  'juniper',
  'kelp',
  'lumen',
  'maple',
  'nectar',
  'onyx',
  'pebble',
  'quartz',
  'raven',
  'saffron',
  'tundra',
  'umber',
  'velvet',
  'willow',
  'yarrow',
  'zephyr',
  'birch',
  'coral',
  'dune',
  'flint',
  'glacier',
];
const FIRST_NAMES = [
  'Ada',
  'Boris',
  'Chen',
  'Dalia',
  'Emeka',
  'Farah',
  'Goran',
  'Hana',
  'Ivo',
  'Jun',
  'Kira',
  'Lars',
  'Mira',
  'Nadia',
  'Omar',
  'Priya',
  'Quinn',
  'Rosa',
  'Sven',
  'Tala',
  'Uma',
  'Viktor',
  'Wen',
  'Yusuf',
];
const SURNAMES = [
  'Abara',
  'Berg',
  'Costa',
  'Dahl',
  'Eze',
  'Fischer',
  'Garcia',
  'Haddad',
  'Ito',
  'Jensen',
  'Khan',
  'Lindqvist',
  'Moreau',
  'Novak',
  'Okafor',
  'Petrov',
  'Rossi',
  'Sato',
  'Tanaka',
  'Varga',
];
const CITIES = ['Lisbon', 'Oslo', 'Nairobi', 'Osaka', 'Quito', 'Tallinn', 'Hobart'];
const COMPONENTS = ['auth', 'db', 'cache', 'api', 'queue', 'mailer', 'scheduler'];
const CONFIG_KEYS = ['TIMEOUT', 'REGION', 'MODE', 'OWNER', 'TIER', 'COLOR', 'ZONE'];

function tools(rand: Rand) {
  const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  /** `k` distinct elements in random order. */
  const sample = <T>(xs: readonly T[], k: number): T[] => {
    const copy = [...xs];
    for (let i = copy.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [copy[i], copy[j]] = [copy[j], copy[i]];
    }
    return copy.slice(0, k);
  };
  const words = (n: number) => Array.from({ length: n }, () => pick(WORDS)).join(' ');
  return { int, pick, sample, words };
}

/** A literal for the Python tests (JSON strings, numbers and lists of them are Python too). */
const py = (value: string | number | readonly (string | number)[]): string => JSON.stringify(value);

/** Shell script lines writing `text` (which ends with a newline) to `file` through a quoted heredoc. */
function heredoc(file: string, text: string): string {
  return `cat > ${file} <<'CLAWRAY_EOF'\n${text}CLAWRAY_EOF\n`;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const dirname = (path: string) => posix.dirname(path);
const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function createFiles(rand: Rand): Draft {
  const { pick, sample, words, int } = tools(rand);
  const [noteName, project] = sample(WORDS, 2);
  const note = `notes/${noteName}.txt`;
  const env = `config/${project}.env`;
  const keep = pick(['logs/.keep', 'cache/.gitkeep', 'tmp/.placeholder']);
  const line = `${words(3)} ${int(100, 999)}`;
  const [k1, k2] = sample(CONFIG_KEYS, 2);
  const [v1, v2] = [pick(WORDS), String(int(1, 500))];
  const dirs = [...new Set([note, env, keep].map((f) => f.slice(0, f.indexOf('/'))))];
  return {
    template: 'create-files',
    instruction:
      'Create these files in /workspace, with their directories:\n' +
      `- \`${note}\` containing the single line \`${line}\`\n` +
      `- \`${env}\` containing the two lines \`${k1}=${v1}\` and \`${k2}=${v2}\`, in that order\n` +
      `- an empty file \`${keep}\`\n` +
      'Every line of a text file ends with a newline.',
    solution:
      `mkdir -p ${dirs.join(' ')}\n` +
      `printf '%s\\n' '${line}' > ${note}\n` +
      `printf '%s\\n' '${k1}=${v1}' '${k2}=${v2}' > ${env}\n` +
      `: > ${keep}\n`,
    tests: [
      `def test_note():\n    assert read(${py(note)}) == ${py(`${line}\n`)}`,
      `def test_env_file():\n    assert read(${py(env)}) == ${py(`${k1}=${v1}\n${k2}=${v2}\n`)}`,
      `def test_empty_file():\n    assert os.path.isfile(path(${py(keep)}))\n    assert os.path.getsize(path(${py(keep)})) == 0`,
    ],
  };
}

function countLog(rand: Rand): Draft {
  const { int, pick, words } = tools(rand);
  const levels = ['INFO', 'INFO', 'INFO', 'DEBUG', 'WARN', 'ERROR'];
  const level = pick(['WARN', 'ERROR']);
  const file = `logs/${pick(COMPONENTS)}.log`;
  const n = int(30, 90);
  const day = String(int(1, 28)).padStart(2, '0');
  const entries: string[] = [];
  for (let i = 0; i < n; i++) {
    const time = [int(0, 23), int(0, 59), int(0, 59)].map((x) => String(x).padStart(2, '0')).join(':');
    entries.push(`2024-03-${day} ${time} ${pick(levels)} ${pick(COMPONENTS)}: ${words(int(2, 7))}`);
  }
  const matching = entries.filter((e) => e.split(' ')[2] === level).length;
  const wordCount = entries.reduce((sum, e) => sum + e.split(' ').length, 0);
  const out = level.toLowerCase();
  return {
    template: 'count-log',
    instruction:
      `The file \`${file}\` holds one log entry per line (date, time, level, component, message). Write:\n` +
      `- to \`counts/lines.txt\` the number of lines of the file;\n` +
      `- to \`counts/${out}.txt\` the number of entries whose level is ${level};\n` +
      `- to \`counts/words.txt\` the number of words of the file, as \`wc -w\` counts them.\n` +
      'Each of these files holds just the number, followed by a newline.',
    setup: `mkdir -p logs\n${heredoc(file, `${entries.join('\n')}\n`)}`,
    solution:
      'mkdir -p counts\n' +
      `wc -l < ${file} | tr -d ' ' > counts/lines.txt\n` +
      `awk '$3 == "${level}" { n++ } END { print n + 0 }' ${file} > counts/${out}.txt\n` +
      `wc -w < ${file} | tr -d ' ' > counts/words.txt\n`,
    tests: [
      `def test_lines():\n    assert read('counts/lines.txt').strip() == ${py(String(n))}`,
      `def test_${out}_entries():\n    assert read(${py(`counts/${out}.txt`)}).strip() == ${py(String(matching))}`,
      `def test_words():\n    assert read('counts/words.txt').strip() == ${py(String(wordCount))}`,
    ],
  };
}

function sortDedupe(rand: Rand): Draft {
  const { int, sample, pick } = tools(rand);
  const pool = sample(FIRST_NAMES, int(10, 16));
  const repeated = pool.slice(0, int(3, 5));
  const names = [...pool, ...repeated, ...Array.from({ length: int(2, 6) }, () => pick(repeated))];
  const shuffled = sample(names, names.length);
  const list = `lists/${pick(WORDS)}.txt`;
  const distinct = [...new Set(names)].sort(byteOrder);
  const dupes = [...new Set(repeated)].sort(byteOrder);
  return {
    template: 'sort-dedupe',
    instruction:
      `The file \`${list}\` has one name per line, in no order, some more than once. Write:\n` +
      '- `out/sorted.txt`: every distinct name once, sorted in byte order (as `LC_ALL=C sort` sorts);\n' +
      '- `out/repeated.txt`: the names that occur more than once, once each, in the same order;\n' +
      '- `out/distinct.txt`: the number of distinct names, followed by a newline.\n' +
      'The name files have one name per line.',
    setup: `mkdir -p lists\n${heredoc(list, `${shuffled.join('\n')}\n`)}`,
    solution:
      'mkdir -p out\n' +
      `LC_ALL=C sort -u ${list} > out/sorted.txt\n` +
      `LC_ALL=C sort ${list} | uniq -d > out/repeated.txt\n` +
      `wc -l < out/sorted.txt | tr -d ' ' > out/distinct.txt\n`,
    tests: [
      `def test_sorted():\n    assert lines('out/sorted.txt') == ${py(distinct)}`,
      `def test_repeated():\n    assert lines('out/repeated.txt') == ${py(dupes)}`,
      `def test_distinct_count():\n    assert read('out/distinct.txt').strip() == ${py(String(distinct.length))}`,
    ],
  };
}

function editConfig(rand: Rand): Draft {
  const { int, pick, sample } = tools(rand);
  const [name, newHostWord] = sample(WORDS, 2);
  const oldPort = int(2000, 8999);
  let newPort = int(2000, 8999);
  if (newPort === oldPort) newPort++;
  const oldHost = `${pick(['db', 'pg', 'store'])}.internal`;
  const newHost = `${newHostWord}-${int(1, 9)}.example.net`;
  const newLevel = pick(['info', 'warning', 'error']);
  const original = [
    '[server]',
    'host = 0.0.0.0',
    `port = ${oldPort}`,
    `workers = ${int(2, 16)}`,
    '',
    '[database]',
    `url = postgres://${oldHost}:5432/${name}`,
    `replica = postgres://${oldHost}:5433/${name}`,
    `pool = ${int(5, 50)}`,
    '',
    '[logging]',
    'level = debug',
    `file = /var/log/${name}.log`,
  ];
  const changed = original.map((l) =>
    l === `port = ${oldPort}`
      ? `port = ${newPort}`
      : l === 'level = debug'
        ? `level = ${newLevel}`
        : l.replace(oldHost, newHost),
  );
  const edited = original.map((l, i) => (l === changed[i] ? -1 : i)).filter((i) => i >= 0);
  const file = 'app/config.ini';
  return {
    template: 'edit-config',
    instruction:
      `Edit \`${file}\`: change the server port from ${oldPort} to ${newPort}, set the logging level to ` +
      `\`${newLevel}\`, and replace the database host \`${oldHost}\` with \`${newHost}\` everywhere. ` +
      'Leave every other line as it is, in the same order.',
    setup: `mkdir -p app\n${heredoc(file, `${original.join('\n')}\n`)}`,
    solution:
      `sed -i -e 's/^port = ${oldPort}$/port = ${newPort}/' -e 's/^level = debug$/level = ${newLevel}/' ` +
      `-e 's/${oldHost.replace('.', '\\.')}/${newHost}/g' ${file}\n`,
    tests: [
      `def test_port():\n    got = lines(${py(file)})\n    assert ${py(`port = ${newPort}`)} in got\n    assert ${py(`port = ${oldPort}`)} not in got`,
      `def test_level():\n    got = lines(${py(file)})\n    assert ${py(`level = ${newLevel}`)} in got\n    assert 'level = debug' not in got`,
      `def test_database_host():\n    got = read(${py(file)})\n    assert ${py(oldHost)} not in got\n    assert got.count(${py(newHost)}) == 2`,
      `def test_other_lines_unchanged():\n    got = lines(${py(file)})\n    want = ${py(original)}\n    assert len(got) == len(want)\n    for i in range(len(want)):\n        if i not in ${py(edited)}:\n            assert got[i] == want[i], f'line {i + 1} changed'`,
    ],
  };
}

function fixScript(rand: Rand): Draft {
  const { int, pick } = tools(rand);
  const label = pick(['total', 'sum', 'amount', 'score']);
  const typo = pick(['totl', 'tota', 'totla']);
  const numbers = Array.from({ length: int(8, 20) }, () => int(1, 999));
  const other = Array.from({ length: int(5, 12) }, () => int(1, 5000));
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const header = `#!/bin/sh\n# Prints "${label}: N", N being the sum of the integers (one per line) of the file named by $1.\n`;
  const broken = `${header}total=0\nwhile read -r n; do\n  total=$((total + n)\ndone < "$1"\necho "${label}: $${typo}"\n`;
  const fixed = `${header}total=0\nwhile read -r n; do\n  total=$((total + n))\ndone < "$1"\necho "${label}: $total"\n`;
  const script = pick(['bin/sum.sh', 'tools/total.sh', 'scripts/add.sh']);
  const data = pick(['data/numbers.txt', 'data/values.txt', 'input/amounts.txt']);
  const result = pick(['result.txt', 'output.txt']);
  const runOn = (xs: number[]) =>
    `    with tempfile.NamedTemporaryFile('w', suffix='.txt', delete=False) as f:\n` +
    `        f.write(${py(`${xs.join('\n')}\n`)})\n` +
    `    r = run([path(${py(script)}), f.name])\n` +
    `    assert r.returncode == 0, r.stderr\n` +
    `    assert r.stdout.strip() == ${py(`${label}: ${sum(xs)}`)}`;
  return {
    template: 'fix-script',
    instruction:
      `The script \`${script}\` should print \`${label}: N\`, where N is the sum of the integers (one per ` +
      'line) of the file named by its first argument, but it is broken. Fix it so that it works for any ' +
      `such file when run as \`./${script} FILE\`, then write its output for \`${data}\` to \`${result}\`.`,
    setup: `mkdir -p ${dirname(script)} ${dirname(data)}\n${heredoc(script, broken)}${heredoc(data, `${numbers.join('\n')}\n`)}`,
    solution: `${heredoc(script, fixed)}chmod +x ${script}\n./${script} ${data} > ${result}\n`,
    tests: [
      `def test_executable():\n    assert os.access(path(${py(script)}), os.X_OK)`,
      `def test_sums_the_given_numbers():\n${runOn(numbers)}`,
      `def test_sums_other_numbers():\n${runOn(other)}`,
      `def test_result_file():\n    assert read(${py(result)}).strip() == ${py(`${label}: ${sum(numbers)}`)}`,
    ],
  };
}

function checksums(rand: Rand): Draft {
  const { int, pick, sample, words } = tools(rand);
  const dir = pick(['files', 'assets', 'downloads', 'release']);
  const sums = pick(['checksums.sha256', 'SHA256SUMS', `${dir}.sha256`]);
  const biggest = pick(['largest.txt', 'biggest.txt']);
  const names = sample(WORDS, int(4, 6)).map((w, i) => `${w}.${i % 2 === 0 ? 'dat' : 'txt'}`);
  const sizes = new Set<number>();
  const files = names.map((name) => {
    let text: string;
    do {
      text = `${Array.from({ length: int(1, 8) }, () => words(int(1, 6))).join('\n')}\n`;
    } while (sizes.has(text.length));
    sizes.add(text.length);
    return { path: `${dir}/${name}`, name, text };
  });
  files.sort((a, b) => byteOrder(a.path, b.path));
  const largest = files.reduce((a, b) => (b.text.length > a.text.length ? b : a));
  const digests = Object.fromEntries(files.map((f) => [f.path, sha256(f.text)]));
  const listed = `[l.split('  ', 1)[-1] for l in lines(${py(sums)}) if l]`;
  return {
    template: 'checksum',
    instruction:
      `Write \`${sums}\` in the format \`sha256sum\` prints (the hex digest, two spaces, the path) ` +
      `with one line for every file in \`${dir}/\`, the paths written like \`${dir}/NAME\`, sorted by path. ` +
      `Then write the name of the largest file of \`${dir}/\` (just the name, like \`NAME\`) to \`${biggest}\`.`,
    setup: `mkdir -p ${dir}\n${files.map((f) => heredoc(f.path, f.text)).join('')}`,
    solution: `LC_ALL=C sha256sum ${dir}/* | LC_ALL=C sort -k 2 > ${sums}\nls -S ${dir} | head -n 1 > ${biggest}\n`,
    tests: [
      `def test_every_file_listed():\n    assert sorted(${listed}) == ${py(files.map((f) => f.path))}`,
      `def test_digests():\n    want = ${JSON.stringify(digests)}\n    got = dict(reversed(l.split('  ', 1)) for l in lines(${py(sums)}) if '  ' in l)\n    assert got == want`,
      `def test_sorted_by_path():\n    got = ${listed}\n    assert len(got) == ${files.length} and got == sorted(got)`,
      `def test_largest():\n    assert read(${py(biggest)}).strip() == ${py(largest.name)}`,
    ],
  };
}

function makeTree(rand: Rand): Draft {
  const { pick, sample } = tools(rand);
  const name = `${pick(WORDS)}-${pick(['tool', 'service', 'lib', 'app'])}`;
  const dirs = ['src', ...sample(['tests', 'docs', 'scripts', 'assets', 'config'], 2)].map(
    (d) => `${name}/${d}`,
  );
  const verb = pick(['running', 'starting', 'launching']);
  return {
    template: 'make-tree',
    instruction:
      `Set up the project \`${name}\` in /workspace:\n` +
      `- the directories ${dirs.map((d) => `\`${d}/\``).join(', ')};\n` +
      `- \`${name}/README.md\` whose first line is \`# ${name}\`;\n` +
      `- an empty \`${name}/src/__init__.py\`;\n` +
      `- an executable shell script \`${name}/run.sh\` that prints \`${verb} ${name}\`.`,
    solution:
      `mkdir -p ${dirs.join(' ')}\n` +
      `printf '# %s\\n' '${name}' > ${name}/README.md\n` +
      `: > ${name}/src/__init__.py\n` +
      `printf '#!/bin/sh\\necho "%s"\\n' '${verb} ${name}' > ${name}/run.sh\n` +
      `chmod +x ${name}/run.sh\n`,
    tests: [
      `def test_directories():\n    for d in ${py(dirs)}:\n        assert os.path.isdir(path(d)), d`,
      `def test_readme():\n    assert lines(${py(`${name}/README.md`)})[0] == ${py(`# ${name}`)}`,
      `def test_init_py():\n    assert os.path.isfile(path(${py(`${name}/src/__init__.py`)}))\n    assert os.path.getsize(path(${py(`${name}/src/__init__.py`)})) == 0`,
      `def test_run_script():\n    r = run([path(${py(`${name}/run.sh`)})])\n    assert r.returncode == 0, r.stderr\n    assert r.stdout.strip() == ${py(`${verb} ${name}`)}`,
    ],
  };
}

function csvReport(rand: Rand): Draft {
  const { int, pick, sample } = tools(rand);
  const n = int(14, 24);
  const fullNames = new Set<string>();
  while (fullNames.size < n) fullNames.add(`${pick(FIRST_NAMES)} ${pick(SURNAMES)}`);
  const cities = sample(CITIES, int(3, 5));
  const city = cities[0];
  const people = [...fullNames].map((name, i) => ({
    id: i + 1,
    name,
    // The first three live in the asked city, so its list is never short.
    city: i < 3 ? city : pick(cities),
    age: int(18, 80),
  }));
  const shuffled = sample(people, people.length);
  // printf's %.1f breaks exact ties to even and toFixed does not: keep the mean off a tie.
  while ((people.reduce((s, p) => s + p.age, 0) * 20) % n === 0) people[n - 1].age++;
  const mean = (people.reduce((s, p) => s + p.age, 0) / n).toFixed(1);
  const inCity = people
    .filter((p) => p.city === city)
    .sort((a, b) => a.age - b.age || a.id - b.id)
    .map((p) => p.name);
  const usedCities = new Set(people.map((p) => p.city)).size;
  const out = `report/${city.toLowerCase()}.txt`;
  const csv = `id,name,city,age\n${shuffled.map((p) => `${p.id},${p.name},${p.city},${p.age}`).join('\n')}\n`;
  return {
    template: 'csv-report',
    instruction:
      'The file `data/people.csv` has a header line and the columns id, name, city and age. Write:\n' +
      `- to \`${out}\` the names of the people who live in ${city}, one per line, youngest first ` +
      '(people of the same age by id);\n' +
      '- to `report/average_age.txt` the mean age of everyone, rounded to one decimal (like `41.5`);\n' +
      '- to `report/cities.txt` the number of distinct cities.',
    setup: `mkdir -p data\n${heredoc('data/people.csv', csv)}`,
    solution:
      'mkdir -p report\n' +
      `awk -F, -v c='${city}' 'NR > 1 && $3 == c { print $4 "," $1 "," $2 }' data/people.csv | ` +
      `sort -t, -k1,1n -k2,2n | cut -d, -f3 > ${out}\n` +
      `awk -F, 'NR > 1 { s += $4; n++ } END { printf "%.1f\\n", s / n }' data/people.csv > report/average_age.txt\n` +
      `awk -F, 'NR > 1 { print $3 }' data/people.csv | sort -u | wc -l | tr -d ' ' > report/cities.txt\n`,
    tests: [
      `def test_people_of_${city.toLowerCase()}():\n    assert lines(${py(out)}) == ${py(inCity)}`,
      `def test_average_age():\n    assert read('report/average_age.txt').strip() == ${py(mean)}`,
      `def test_city_count():\n    assert read('report/cities.txt').strip() == ${py(String(usedCities))}`,
    ],
  };
}

function cleanFiles(rand: Rand): Draft {
  const { int, pick, sample, words } = tools(rand);
  const top = pick(['cache', 'build', 'scratch', 'var']);
  const ext = pick(['tmp', 'bak', 'swp', 'old']);
  const list = pick(['removed.txt', 'deleted.txt', 'cleanup.txt']);
  const dirs = [top, ...sample(WORDS, 3).map((w) => `${top}/${w}`)];
  dirs.push(`${dirs[1]}/${pick(WORDS)}`);
  const files = new Map<string, string>();
  const exts = [ext, ext, 'dat', 'log', `${ext}.txt`, 'json'];
  const count = int(9, 14);
  while (files.size < count) files.set(`${pick(dirs)}/${pick(WORDS)}.${pick(exts)}`, `${words(int(1, 5))}\n`);
  // At least one of each kind, so both the deletion and the keeping are tested.
  files.set(`${dirs[2]}/${pick(WORDS)}-old.${ext}`, `${words(3)}\n`);
  files.set(`${dirs[3]}/${pick(WORDS)}-notes.${ext}.txt`, `${words(3)}\n`);
  const all = [...files.keys()].sort(byteOrder);
  const doomed = all.filter((f) => f.endsWith(`.${ext}`));
  const kept = all.filter((f) => !f.endsWith(`.${ext}`));
  return {
    template: 'clean-files',
    instruction:
      `Some files under \`${top}/\` have names ending in \`.${ext}\`. Write their paths (like ` +
      `\`${top}/x/y.${ext}\`), sorted in byte order, one per line, to \`${list}\`; then delete those files ` +
      'and nothing else.',
    setup: `mkdir -p ${dirs.join(' ')}\n${all.map((f) => heredoc(f, files.get(f)!)).join('')}`,
    solution:
      `find ${top} -type f -name '*.${ext}' | LC_ALL=C sort > ${list}\n` +
      `find ${top} -type f -name '*.${ext}' -exec rm -f {} +\n`,
    tests: [
      `def test_list():\n    assert lines(${py(list)}) == ${py(doomed)}`,
      `def test_files_deleted():\n    for f in ${py(doomed)}:\n        assert not os.path.lexists(path(f)), f`,
      `def test_other_files_kept():\n    want = ${JSON.stringify(Object.fromEntries(kept.map((f) => [f, files.get(f)!])))}\n    for f, text in want.items():\n        assert read(f) == text, f`,
    ],
  };
}

const TEMPLATES: ReadonlyArray<(rand: Rand) => Draft> = [
  createFiles,
  countLog,
  sortDedupe,
  editConfig,
  fixScript,
  checksums,
  makeTree,
  csvReport,
  cleanFiles,
];

function toTask(d: Draft): TerminalTask {
  const hash = fnv1a(`${d.instruction}\0${d.setup ?? ''}`);
  const testNames = d.tests.map((t) => {
    const m = /^def (test_\w+)\(/.exec(t);
    if (!m) throw new Error(`built-in terminal task ${d.template}: a test is not a test_ function`);
    return `${BUILTIN_TEST_FILE}::${m[1]}`;
  });
  return {
    id: `${d.template}-${hash}`,
    split: splitOfHash(hash),
    oracle: oracleFor(d.solution),
    instruction: d.instruction,
    ...(d.setup === undefined ? {} : { setup: d.setup }),
    solution: d.solution,
    runTests: BUILTIN_RUN_TESTS,
    testFiles: { [BUILTIN_TEST_FILE]: `${TEST_PRELUDE}\n\n${d.tests.join('\n\n\n')}\n${TEST_MAIN}` },
    testNames,
  };
}

export interface SuiteOptions {
  seed?: number;
  /** Tasks per template (9 templates); default 3. */
  perTemplate?: number;
}

/** The whole suite, both splits, ordered by template, then id. */
export function buildTerminalSuite(options: SuiteOptions = {}): TerminalTask[] {
  const seed = options.seed ?? SUITE_SEED;
  const per = options.perTemplate ?? DEFAULT_PER_TEMPLATE;
  const tasks: TerminalTask[] = [];
  for (const [t, template] of TEMPLATES.entries()) {
    // One stream per template, so adding a template leaves the others' tasks as they were.
    const rand = seededRandom(seed + t * 7919);
    const byInstruction = new Map<string, TerminalTask>();
    for (let attempt = 0; byInstruction.size < per && attempt < per * 20; attempt++) {
      const task = toTask(template(rand));
      if (!byInstruction.has(task.instruction)) byInstruction.set(task.instruction, task);
    }
    tasks.push(...[...byInstruction.values()].sort((a, b) => byteOrder(a.id, b.id)));
  }
  return tasks;
}

/** The built-in tasks of one split. */
export function builtinSplit(split: TerminalTask['split'], options: SuiteOptions = {}): TerminalTask[] {
  return buildTerminalSuite(options).filter((t) => t.split === split);
}
