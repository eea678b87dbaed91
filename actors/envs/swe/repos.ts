/**
 * The templates of the built-in suite: small Python repositories (plain python3, no third-party
 * packages), each with one bug of a common kind (off-by-one, wrong operator, missing edge case,
 * wrong default, string formatting) in one module. A template draws its constants from a seeded
 * PRNG and yields the module with the bug, the edits that fix it, the issue text describing the
 * symptom, the tests that already pass (PASS_TO_PASS, in the repository) and the tests that fail
 * until the fix (FAIL_TO_PASS, added by the hidden test patch).
 */

export interface Rng {
  int(lo: number, hi: number): number;
  pick<T>(items: readonly T[]): T;
}

export function makeRng(rand: () => number): Rng {
  return {
    int: (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1)),
    pick: (items) => items[Math.floor(rand() * items.length)],
  };
}

export interface TestCase {
  name: string;
  /** Python statements (plain `assert`s), indented by the caller. */
  body: string;
}

export interface BugSpec {
  /** Module file name without `.py`. */
  module: string;
  /** The module's source, bug included. */
  source: string;
  /** [text with the bug, its fix]: each first text occurs exactly once in `source`. */
  fix: [string, string][];
  /** The issue, as a user would report it. */
  problem: string;
  /** Names the tests import from the module. */
  imports: string[];
  /** Pass before and after the fix (PASS_TO_PASS). */
  passing: TestCase[];
  /** Fail before the fix and pass after it (FAIL_TO_PASS). */
  failing: TestCase[];
}

export interface Template {
  /** Stable name; the split of the template's tasks is derived from it. */
  name: string;
  make(rng: Rng): BugSpec;
}

const raises = (call: string, error = 'ValueError') =>
  `try:\n    ${call}\nexcept ${error}:\n    pass\nelse:\n    raise AssertionError("${call.replace(/"/g, "'")} did not raise ${error}")`;

const py = (value: unknown): string => {
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(py).join(', ')}]`;
  if (value === null) return 'None';
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  return String(value);
};

const paging: Template = {
  name: 'paginate-off-by-one',
  make(r) {
    const per = r.int(3, 7);
    const n = per * r.int(3, 6) + r.int(1, per - 1);
    const pages = Math.ceil(n / per);
    const range = (a: number, b: number) => Array.from({ length: b - a }, (_, i) => a + i);
    return {
      module: 'paging',
      source: `"""Splitting sequences into pages."""


def page_count(total, per_page):
    """Number of pages needed for \`total\` items, \`per_page\` on each page."""
    if per_page <= 0:
        raise ValueError("per_page must be positive")
    return (total + per_page - 1) // per_page


def paginate(items, page, per_page):
    """The items of the 1-based \`page\`."""
    if page < 1:
        raise ValueError("pages start at 1")
    start = page * per_page
    return list(items[start:start + per_page])
`,
      fix: [['    start = page * per_page\n', '    start = (page - 1) * per_page\n']],
      problem: `\`paginate(items, page, per_page)\` is documented to take 1-based page numbers, but \`paginate(list(range(${n})), 1, ${per})\` returns ${py(range(per, 2 * per))} instead of the first ${per} items, and the last page (page ${pages}) comes back empty.`,
      imports: ['page_count', 'paginate'],
      passing: [
        {
          name: 'test_page_count',
          body: `assert page_count(${n}, ${per}) == ${pages}\nassert page_count(0, ${per}) == 0`,
        },
        { name: 'test_page_zero_rejected', body: raises(`paginate([1, 2, 3], 0, ${per})`) },
      ],
      failing: [
        {
          name: 'test_first_page',
          body: `assert paginate(list(range(${n})), 1, ${per}) == ${py(range(0, per))}`,
        },
        {
          name: 'test_last_page',
          body: `assert paginate(list(range(${n})), ${pages}, ${per}) == ${py(range((pages - 1) * per, n))}`,
        },
      ],
    };
  },
};

const ranges: Template = {
  name: 'inclusive-bound',
  make(r) {
    const low = r.int(-20, 10);
    const high = low + r.int(5, 40);
    const mid = low + Math.floor((high - low) / 2);
    return {
      module: 'bounds',
      source: `"""Checks on numeric ranges."""


def clamp(value, low, high):
    """\`value\` moved into [low, high]."""
    return max(low, min(high, value))


def in_range(value, low, high):
    """True when low <= value <= high: both bounds are inclusive."""
    return low <= value < high
`,
      fix: [['    return low <= value < high\n', '    return low <= value <= high\n']],
      problem: `\`in_range\` is documented with both bounds inclusive, yet \`in_range(${high}, ${low}, ${high})\` returns False. The lower bound works.`,
      imports: ['clamp', 'in_range'],
      passing: [
        {
          name: 'test_clamp',
          body: `assert clamp(${high + 3}, ${low}, ${high}) == ${high}\nassert clamp(${low - 3}, ${low}, ${high}) == ${low}\nassert clamp(${mid}, ${low}, ${high}) == ${mid}`,
        },
        {
          name: 'test_lower_bound',
          body: `assert in_range(${low}, ${low}, ${high})\nassert not in_range(${low - 1}, ${low}, ${high})`,
        },
        { name: 'test_inside', body: `assert in_range(${mid}, ${low}, ${high})` },
      ],
      failing: [
        {
          name: 'test_upper_bound',
          body: `assert in_range(${high}, ${low}, ${high})\nassert not in_range(${high + 1}, ${low}, ${high})`,
        },
      ],
    };
  },
};

const average: Template = {
  name: 'average-empty',
  make(r) {
    const values = [r.int(1, 50), r.int(1, 50), r.int(1, 50), r.int(1, 50)];
    const sum = values.reduce((a, b) => a + b, 0);
    return {
      module: 'stats',
      source: `"""Summary statistics."""


def total(values):
    """Sum of \`values\`."""
    return sum(values)


def average(values):
    """Arithmetic mean of \`values\`, or None when there are none."""
    values = list(values)
    return sum(values) / len(values)
`,
      fix: [
        [
          '    values = list(values)\n    return sum(values) / len(values)\n',
          '    values = list(values)\n    if not values:\n        return None\n    return sum(values) / len(values)\n',
        ],
      ],
      problem:
        '`average([])` raises ZeroDivisionError. The docstring says it returns None when there are no values; an empty report should not crash.',
      imports: ['average', 'total'],
      passing: [
        { name: 'test_average', body: `assert average(${py(values)}) == ${sum} / 4` },
        { name: 'test_total', body: `assert total(${py(values)}) == ${sum}\nassert total([]) == 0` },
      ],
      failing: [
        { name: 'test_average_empty', body: 'assert average([]) is None' },
        { name: 'test_average_empty_generator', body: 'assert average(x for x in []) is None' },
      ],
    };
  },
};

const median: Template = {
  name: 'median-even',
  make(r) {
    const set = new Set<number>();
    while (set.size < 6) set.add(r.int(1, 99));
    const even = [...set].slice(0, 4);
    const odd = [...set].slice(0, 5);
    const se = [...even].sort((a, b) => a - b);
    const so = [...odd].sort((a, b) => a - b);
    return {
      module: 'stats',
      source: `"""Order statistics."""


def median(values):
    """The middle value of \`values\`; the mean of the two middle values when their number is even."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("median of an empty sequence")
    mid = len(ordered) // 2
    return ordered[mid]
`,
      fix: [
        [
          '    return ordered[mid]\n',
          '    if len(ordered) % 2 == 0:\n        return (ordered[mid - 1] + ordered[mid]) / 2\n    return ordered[mid]\n',
        ],
      ],
      problem: `\`median(${py(even)})\` returns ${se[2]}, but for an even number of values the median is the mean of the two middle ones (${(se[1] + se[2]) / 2}).`,
      imports: ['median'],
      passing: [
        { name: 'test_median_odd', body: `assert median(${py(odd)}) == ${so[2]}` },
        { name: 'test_median_empty', body: raises('median([])') },
      ],
      failing: [
        { name: 'test_median_even', body: `assert median(${py(even)}) == ${(se[1] + se[2]) / 2}` },
        { name: 'test_median_pair', body: `assert median([${se[0]}, ${se[3]}]) == ${(se[0] + se[3]) / 2}` },
      ],
    };
  },
};

const WORDS = ['red', 'green', 'blue', 'amber', 'silver', 'quick', 'river', 'stone', 'cloud', 'north'];

const slug: Template = {
  name: 'slugify-separators',
  make(r) {
    const [a, b, c] = [r.pick(WORDS), r.pick(WORDS), r.pick(WORDS)];
    const cap = (w: string) => w[0].toUpperCase() + w.slice(1);
    return {
      module: 'text',
      source: `"""Text helpers for URLs."""
import re


def slugify(text, sep="-"):
    """The lowercase words of \`text\` joined by \`sep\`: "Hello, World!" -> "hello-world"."""
    words = re.split(r"[^a-z0-9]", text.lower())
    return sep.join(words)
`,
      fix: [
        [
          '    words = re.split(r"[^a-z0-9]", text.lower())\n',
          '    words = [word for word in re.split(r"[^a-z0-9]+", text.lower()) if word]\n',
        ],
      ],
      problem: `\`slugify("${cap(a)}, ${cap(b)}!")\` gives "${a}--${b}-" instead of "${a}-${b}": runs of punctuation and spaces should become a single separator, with none at either end.`,
      imports: ['slugify'],
      passing: [
        { name: 'test_single_word', body: `assert slugify("${cap(a)}") == "${a}"` },
        { name: 'test_two_words', body: `assert slugify("${a} ${b}") == "${a}-${b}"` },
      ],
      failing: [
        { name: 'test_punctuation', body: `assert slugify("${cap(a)}, ${cap(b)}!") == "${a}-${b}"` },
        {
          name: 'test_custom_separator',
          body: `assert slugify("  ${a}  ${b} ${c} ", "_") == "${a}_${b}_${c}"`,
        },
      ],
    };
  },
};

const duration: Template = {
  name: 'duration-padding',
  make(r) {
    const fmt = (h: number, m: number, s: number) =>
      `${h}:${String(m).padStart(2, '0')}:${String(s).padStart(2, '0')}`;
    const [h1, m1, s1] = [r.int(1, 9), r.int(10, 59), r.int(10, 59)];
    const [h2, m2, s2] = [r.int(1, 9), r.int(1, 9), r.int(0, 9)];
    const secs = (h: number, m: number, s: number) => h * 3600 + m * 60 + s;
    return {
      module: 'clock',
      source: `"""Formatting of time spans."""


def format_duration(seconds):
    """\`seconds\` as H:MM:SS, hours unpadded: 3725 -> "1:02:05"."""
    if seconds < 0:
        raise ValueError("negative duration")
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes}:{secs}"
`,
      fix: [['    return f"{hours}:{minutes}:{secs}"\n', '    return f"{hours}:{minutes:02d}:{secs:02d}"\n']],
      problem: `\`format_duration(${secs(h2, m2, s2)})\` returns "${h2}:${m2}:${s2}" instead of "${fmt(h2, m2, s2)}": minutes and seconds must always have two digits.`,
      imports: ['format_duration'],
      passing: [
        {
          name: 'test_two_digit_fields',
          body: `assert format_duration(${secs(h1, m1, s1)}) == "${fmt(h1, m1, s1)}"`,
        },
        { name: 'test_negative', body: raises('format_duration(-1)') },
      ],
      failing: [
        { name: 'test_padding', body: `assert format_duration(${secs(h2, m2, s2)}) == "${fmt(h2, m2, s2)}"` },
        { name: 'test_zero', body: 'assert format_duration(0) == "0:00:00"' },
      ],
    };
  },
};

const leap: Template = {
  name: 'leap-century',
  make(r) {
    const century = r.pick([1700, 1800, 1900, 2100, 2200, 2300]);
    let leapYear = r.int(1901, 2099);
    leapYear -= leapYear % 4;
    if (leapYear % 100 === 0) leapYear += 4;
    const common = leapYear + r.int(1, 3);
    return {
      module: 'calendar_utils',
      source: `"""Gregorian calendar helpers."""


def is_leap_year(year):
    """Leap years are divisible by 4, except centuries, which must be divisible by 400."""
    return year % 4 == 0


def days_in_year(year):
    """366 in leap years, else 365."""
    return 366 if is_leap_year(year) else 365
`,
      fix: [
        ['    return year % 4 == 0\n', '    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)\n'],
      ],
      problem: `\`is_leap_year(${century})\` returns True, so \`days_in_year(${century})\` is 366. Century years are leap years only when divisible by 400.`,
      imports: ['days_in_year', 'is_leap_year'],
      passing: [
        {
          name: 'test_ordinary_leap_year',
          body: `assert is_leap_year(${leapYear})\nassert days_in_year(${leapYear}) == 366`,
        },
        {
          name: 'test_common_year',
          body: `assert not is_leap_year(${common})\nassert days_in_year(${common}) == 365`,
        },
        { name: 'test_year_2000', body: 'assert is_leap_year(2000)' },
      ],
      failing: [
        { name: 'test_century', body: `assert not is_leap_year(${century})` },
        { name: 'test_century_days', body: `assert days_in_year(${century}) == 365` },
      ],
    };
  },
};

const temperature: Template = {
  name: 'fahrenheit-sign',
  make(r) {
    const c = r.int(-6, 12) * 5;
    return {
      module: 'units',
      source: `"""Temperature conversions."""


def celsius_to_fahrenheit(celsius):
    """Degrees Celsius in degrees Fahrenheit."""
    return celsius * 9 / 5 - 32


def fahrenheit_to_celsius(fahrenheit):
    """Degrees Fahrenheit in degrees Celsius."""
    return (fahrenheit - 32) * 5 / 9
`,
      fix: [['    return celsius * 9 / 5 - 32\n', '    return celsius * 9 / 5 + 32\n']],
      problem: `\`celsius_to_fahrenheit(100)\` returns 148.0; water boils at 212 °F. The reverse conversion is right.`,
      imports: ['celsius_to_fahrenheit', 'fahrenheit_to_celsius'],
      passing: [
        {
          name: 'test_to_celsius',
          body: `assert fahrenheit_to_celsius(212) == 100\nassert fahrenheit_to_celsius(${(c * 9) / 5 + 32}) == ${c}`,
        },
      ],
      failing: [
        { name: 'test_boiling', body: 'assert celsius_to_fahrenheit(100) == 212' },
        { name: 'test_round_trip', body: `assert celsius_to_fahrenheit(${c}) == ${(c * 9) / 5 + 32}` },
      ],
    };
  },
};

const chunks: Template = {
  name: 'chunked-tail',
  make(r) {
    const size = r.int(2, 5);
    const text = 'abcdefghijklmnopqrstuvwxyz'.slice(0, size * r.int(2, 4) + r.int(1, size - 1));
    const whole = 'abcdefghijklmnopqrstuvwxyz'.slice(0, size * 3);
    const split = (s: string) =>
      Array.from({ length: Math.ceil(s.length / size) }, (_, i) => s.slice(i * size, i * size + size));
    return {
      module: 'seqs',
      source: `"""Sequence helpers."""


def chunked(seq, size):
    """Consecutive slices of \`seq\` of length \`size\`; the last one may be shorter."""
    if size <= 0:
        raise ValueError("size must be positive")
    return [seq[i:i + size] for i in range(0, len(seq) - size + 1, size)]
`,
      fix: [
        [
          '    return [seq[i:i + size] for i in range(0, len(seq) - size + 1, size)]\n',
          '    return [seq[i:i + size] for i in range(0, len(seq), size)]\n',
        ],
      ],
      problem: `\`chunked("${text}", ${size})\` drops the final, shorter chunk "${split(text).at(-1)}". The docstring says the last slice may be shorter, not that it is lost.`,
      imports: ['chunked'],
      passing: [
        { name: 'test_exact_multiple', body: `assert chunked("${whole}", ${size}) == ${py(split(whole))}` },
        { name: 'test_empty', body: `assert chunked([], ${size}) == []` },
        { name: 'test_bad_size', body: raises('chunked([1], 0)') },
      ],
      failing: [
        { name: 'test_partial_tail', body: `assert chunked("${text}", ${size}) == ${py(split(text))}` },
        { name: 'test_shorter_than_size', body: `assert chunked([1], ${size}) == [[1]]` },
      ],
    };
  },
};

const words: Template = {
  name: 'word-count-whitespace',
  make(r) {
    const [a, b, c] = [r.pick(WORDS), r.pick(WORDS), r.pick(WORDS)];
    return {
      module: 'words',
      source: `"""Counting words."""


def word_count(text):
    """The number of whitespace-separated words in \`text\`."""
    return len(text.split(" "))


def longest_word(text):
    """The longest word of \`text\` (the first of equals), or "" when there is none."""
    return max(text.split(), key=len, default="")
`,
      fix: [['    return len(text.split(" "))\n', '    return len(text.split())\n']],
      problem: `\`word_count("")\` returns 1 and \`word_count("${a}  ${b}\\n")\` returns 3: repeated spaces, tabs and newlines should not count as words.`,
      imports: ['longest_word', 'word_count'],
      passing: [
        { name: 'test_simple', body: `assert word_count("${a} ${b} ${c}") == 3` },
        {
          name: 'test_longest',
          body: 'assert longest_word("a bbb cc") == "bbb"\nassert longest_word("") == ""',
        },
      ],
      failing: [
        { name: 'test_empty', body: 'assert word_count("") == 0' },
        { name: 'test_whitespace_runs', body: `assert word_count("  ${a}   ${b}\\t${c}\\n") == 3` },
      ],
    };
  },
};

const truncate: Template = {
  name: 'truncate-width',
  make(r) {
    const width = r.int(6, 12);
    const long = 'abcdefghijklmnopqrstuvwxyz'.slice(0, width + r.int(3, 10));
    return {
      module: 'textwrap_utils',
      source: `"""Shortening text for display."""


def truncate(text, width, ellipsis="..."):
    """\`text\` cut to at most \`width\` characters, ending in \`ellipsis\` when it was cut."""
    if len(text) <= width:
        return text
    return text[:width] + ellipsis
`,
      fix: [['    return text[:width] + ellipsis\n', '    return text[:width - len(ellipsis)] + ellipsis\n']],
      problem: `\`truncate("${long}", ${width})\` returns ${width + 3} characters; the result must never be longer than \`width\`, ellipsis included.`,
      imports: ['truncate'],
      passing: [
        {
          name: 'test_short_text',
          body: `assert truncate("abc", ${width}) == "abc"\nassert truncate("", ${width}) == ""`,
        },
      ],
      failing: [
        { name: 'test_width_respected', body: `assert len(truncate("${long}", ${width})) == ${width}` },
        {
          name: 'test_cut_text',
          body: `assert truncate("${long}", ${width}) == "${long.slice(0, width - 3)}..."\nassert truncate("${long}", ${width}, "~") == "${long.slice(0, width - 1)}~"`,
        },
      ],
    };
  },
};

const search: Template = {
  name: 'binary-search-bounds',
  make(r) {
    const n = r.int(6, 11);
    const items: number[] = [];
    let x = r.int(-10, 10);
    for (let i = 0; i < n; i++) {
      x += r.int(1, 6);
      items.push(x);
    }
    const middle = items[Math.floor((n - 1) / 2)];
    return {
      module: 'search',
      source: `"""Searching sorted lists."""


def find_index(sorted_items, target):
    """The index of \`target\` in the ascending list \`sorted_items\`, or -1 when it is absent."""
    lo, hi = 0, len(sorted_items) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if sorted_items[mid] == target:
            return mid
        if sorted_items[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1
`,
      fix: [['    while lo < hi:\n', '    while lo <= hi:\n']],
      problem: `\`find_index(${py(items)}, ${items[n - 1]})\` returns -1 although ${items[n - 1]} is the last element; \`find_index([${items[0]}], ${items[0]})\` is -1 too.`,
      imports: ['find_index'],
      passing: [
        {
          name: 'test_middle',
          body: `assert find_index(${py(items)}, ${middle}) == ${Math.floor((n - 1) / 2)}`,
        },
        {
          name: 'test_absent',
          body: `assert find_index(${py(items)}, ${items[n - 1] + 1}) == -1\nassert find_index([], 1) == -1`,
        },
      ],
      failing: [
        { name: 'test_last', body: `assert find_index(${py(items)}, ${items[n - 1]}) == ${n - 1}` },
        { name: 'test_single', body: `assert find_index([${items[0]}], ${items[0]}) == 0` },
      ],
    };
  },
};

const booleans: Template = {
  name: 'parse-bool-default',
  make(r) {
    const yes = r.pick(['Yes', 'TRUE', 'on', '1']);
    const no = r.pick(['No', 'false', 'OFF', '0']);
    return {
      module: 'settings',
      source: `"""Reading settings from strings."""

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off"}


def parse_bool(value, default=True):
    """A yes/no setting; \`default\` (False unless given) when the value is missing or blank."""
    if value is None or value.strip() == "":
        return default
    word = value.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError(f"not a boolean: {value!r}")
`,
      fix: [['def parse_bool(value, default=True):\n', 'def parse_bool(value, default=False):\n']],
      problem:
        '`parse_bool(None)` returns True, so a setting that was never set turns the feature on. As documented, a missing or blank value should read as False unless a default is passed.',
      imports: ['parse_bool'],
      passing: [
        {
          name: 'test_words',
          body: `assert parse_bool("${yes}") is True\nassert parse_bool(" ${no} ") is False`,
        },
        { name: 'test_explicit_default', body: 'assert parse_bool(None, default=True) is True' },
        { name: 'test_garbage', body: raises('parse_bool("maybe")') },
      ],
      failing: [
        { name: 'test_missing', body: 'assert parse_bool(None) is False' },
        { name: 'test_blank', body: 'assert parse_bool("   ") is False' },
      ],
    };
  },
};

const inventory: Template = {
  name: 'inventory-negative',
  make(r) {
    const item = r.pick(['bolts', 'nuts', 'gears', 'springs', 'washers']);
    const stock = r.int(3, 20);
    const take = r.int(1, stock - 1);
    return {
      module: 'inventory',
      source: `"""Stock keeping."""


class Inventory:
    """Quantities of items in stock."""

    def __init__(self):
        self._stock = {}

    def add(self, item, qty):
        if qty <= 0:
            raise ValueError("quantity must be positive")
        self._stock[item] = self._stock.get(item, 0) + qty

    def remove(self, item, qty):
        """Take \`qty\` of \`item\` out of stock; there must be enough."""
        if qty <= 0:
            raise ValueError("quantity must be positive")
        self._stock[item] = self._stock.get(item, 0) - qty

    def count(self, item):
        return self._stock.get(item, 0)
`,
      fix: [
        [
          '            raise ValueError("quantity must be positive")\n        self._stock[item] = self._stock.get(item, 0) - qty\n',
          '            raise ValueError("quantity must be positive")\n        if self._stock.get(item, 0) < qty:\n            raise ValueError(f"only {self._stock.get(item, 0)} {item} in stock")\n        self._stock[item] = self._stock.get(item, 0) - qty\n',
        ],
      ],
      problem: `With ${stock} ${item} in stock, \`inventory.remove("${item}", ${stock + 5})\` succeeds and the count becomes ${-5}. Removing more than is in stock should raise ValueError and leave the stock unchanged.`,
      imports: ['Inventory'],
      passing: [
        {
          name: 'test_add',
          body: `inv = Inventory()\ninv.add("${item}", ${stock})\ninv.add("${item}", 1)\nassert inv.count("${item}") == ${stock + 1}`,
        },
        {
          name: 'test_remove',
          body: `inv = Inventory()\ninv.add("${item}", ${stock})\ninv.remove("${item}", ${take})\nassert inv.count("${item}") == ${stock - take}`,
        },
        { name: 'test_bad_quantity', body: raises('Inventory().add("x", 0)') },
      ],
      failing: [
        {
          name: 'test_remove_too_many',
          body: `inv = Inventory()\ninv.add("${item}", ${stock})\n${raises(`inv.remove("${item}", ${stock + 5})`)}\nassert inv.count("${item}") == ${stock}`,
        },
        { name: 'test_remove_missing_item', body: raises('Inventory().remove("nothing", 1)') },
      ],
    };
  },
};

function toRoman(n: number): string {
  const table: [number, string][] = [
    [1000, 'M'],
    [900, 'CM'],
    [500, 'D'],
    [400, 'CD'],
    [100, 'C'],
    [90, 'XC'],
    [50, 'L'],
    [40, 'XL'],
    [10, 'X'],
    [9, 'IX'],
    [5, 'V'],
    [4, 'IV'],
    [1, 'I'],
  ];
  let out = '';
  for (const [value, numeral] of table) {
    while (n >= value) {
      out += numeral;
      n -= value;
    }
  }
  return out;
}

const roman: Template = {
  name: 'roman-subtractive',
  make(r) {
    const digit = () => r.pick([0, 1, 2, 3, 5, 6, 7, 8]);
    const plain = r.int(1, 3) * 1000 + digit() * 100 + digit() * 10 + Math.max(1, digit());
    const year = r.int(1900, 1999);
    const nines = 1000 + 900 + 90 + r.pick([4, 9]);
    return {
      module: 'numerals',
      source: `"""Roman numerals."""

NUMERALS = [
    (1000, "M"),
    (500, "D"),
    (100, "C"),
    (50, "L"),
    (10, "X"),
    (5, "V"),
    (1, "I"),
]


def to_roman(number):
    """\`number\` (1 to 3999) in Roman numerals, with subtractive forms: 4 -> "IV", 1990 -> "MCMXC"."""
    if not 0 < number < 4000:
        raise ValueError("Roman numerals cover 1 to 3999")
    out = []
    for value, numeral in NUMERALS:
        while number >= value:
            out.append(numeral)
            number -= value
    return "".join(out)
`,
      fix: [
        [
          '    (1000, "M"),\n    (500, "D"),\n    (100, "C"),\n    (50, "L"),\n    (10, "X"),\n    (5, "V"),\n    (1, "I"),\n',
          '    (1000, "M"),\n    (900, "CM"),\n    (500, "D"),\n    (400, "CD"),\n    (100, "C"),\n    (90, "XC"),\n    (50, "L"),\n    (40, "XL"),\n    (10, "X"),\n    (9, "IX"),\n    (5, "V"),\n    (4, "IV"),\n    (1, "I"),\n',
        ],
      ],
      problem: `\`to_roman(4)\` returns "IIII" and \`to_roman(${nines})\` returns "${toRoman(nines).replace('CM', 'DCCCC').replace('XC', 'LXXXX').replace('IX', 'VIIII').replace('IV', 'IIII')}"; the subtractive forms (IV, IX, XL, XC, CD, CM) are never used.`,
      imports: ['to_roman'],
      passing: [
        {
          name: 'test_additive',
          body: `assert to_roman(${plain}) == "${toRoman(plain)}"\nassert to_roman(3) == "III"`,
        },
        { name: 'test_out_of_range', body: raises('to_roman(0)') },
      ],
      failing: [
        { name: 'test_four', body: 'assert to_roman(4) == "IV"' },
        {
          name: 'test_year',
          body: `assert to_roman(${year}) == "${toRoman(year)}"\nassert to_roman(${nines}) == "${toRoman(nines)}"`,
        },
      ],
    };
  },
};

const money: Template = {
  name: 'price-decimals',
  make(r) {
    const currency = r.pick(['EUR', 'USD', 'CHF', 'GBP']);
    const thousands = r.int(1, 99);
    const rest = r.int(100, 999);
    // Two decimals, the last one not 0, so the buggy formatting already shows them right.
    const c = r.int(1, 9) * 10 + r.int(1, 9);
    const whole = r.int(1, 9) * 1000;
    return {
      module: 'prices',
      source: `"""Formatting money."""


def format_price(amount, currency="${currency}"):
    """\`amount\` with thousands separators and exactly two decimals: 1234.5 -> "1,234.50 ${currency}"."""
    return f"{amount:,} {currency}"
`,
      fix: [['    return f"{amount:,} {currency}"\n', '    return f"{amount:,.2f} {currency}"\n']],
      problem: `\`format_price(1234.5)\` gives "1,234.5 ${currency}" and \`format_price(${whole})\` gives "${whole.toLocaleString('en-US')} ${currency}"; prices must always show two decimals ("1,234.50 ${currency}", "${whole.toLocaleString('en-US')}.00 ${currency}").`,
      imports: ['format_price'],
      passing: [
        {
          name: 'test_cents',
          body: `assert format_price(${thousands}${rest}.${c}) == "${thousands},${rest}.${c} ${currency}"`,
        },
        { name: 'test_currency', body: 'assert format_price(12.34, "JPY") == "12.34 JPY"' },
      ],
      failing: [
        { name: 'test_one_decimal', body: `assert format_price(1234.5) == "1,234.50 ${currency}"` },
        {
          name: 'test_whole_amount',
          body: `assert format_price(${whole}) == "${whole.toLocaleString('en-US')}.00 ${currency}"`,
        },
      ],
    };
  },
};

const initials: Template = {
  name: 'initials-case',
  make(r) {
    const first = r.pick(['ada', 'grace', 'alan', 'edsger', 'barbara', 'donald']);
    const last = r.pick(['lovelace', 'hopper', 'turing', 'dijkstra', 'liskov', 'knuth']);
    const up = (w: string) => w[0].toUpperCase() + w.slice(1);
    return {
      module: 'names',
      source: `"""Personal names."""


def initials(full_name):
    """The capital initials of each part of \`full_name\`, each followed by a dot: "ada lovelace" -> "A.L."."""
    return "".join(part[0] + "." for part in full_name.split())
`,
      fix: [
        [
          '    return "".join(part[0] + "." for part in full_name.split())\n',
          '    return "".join(part[0].upper() + "." for part in full_name.split())\n',
        ],
      ],
      problem: `\`initials("${first} ${last}")\` returns "${first[0]}.${last[0]}." but initials are always capitals: "${first[0].toUpperCase()}.${last[0].toUpperCase()}.".`,
      imports: ['initials'],
      passing: [
        {
          name: 'test_capitalised',
          body: `assert initials("${up(first)} ${up(last)}") == "${first[0].toUpperCase()}.${last[0].toUpperCase()}."`,
        },
        { name: 'test_empty', body: 'assert initials("") == ""' },
      ],
      failing: [
        {
          name: 'test_lowercase',
          body: `assert initials("${first} ${last}") == "${first[0].toUpperCase()}.${last[0].toUpperCase()}."`,
        },
        {
          name: 'test_mixed',
          body: `assert initials("  ${first}   ${up(last)} ") == "${first[0].toUpperCase()}.${last[0].toUpperCase()}."`,
        },
      ],
    };
  },
};

const retry: Template = {
  name: 'retry-default',
  make(r) {
    const value = r.pick(['done', 'ok', 'ready', 'fine']);
    return {
      module: 'retrying',
      source: `"""Retrying flaky calls."""


def retry(func, attempts=1, exceptions=(Exception,)):
    """Call \`func\` until it succeeds, at most \`attempts\` times (3 by default); re-raise the last error."""
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    for attempt in range(attempts):
        try:
            return func()
        except exceptions:
            if attempt == attempts - 1:
                raise
`,
      fix: [
        [
          'def retry(func, attempts=1, exceptions=(Exception,)):\n',
          'def retry(func, attempts=3, exceptions=(Exception,)):\n',
        ],
      ],
      problem:
        '`retry(func)` gives up after the first failure. The docstring promises 3 attempts by default; a call that fails twice and then succeeds should return its result.',
      imports: ['retry'],
      passing: [
        {
          name: 'test_explicit_attempts',
          body: `calls = []\n\ndef flaky():\n    calls.append(1)\n    if len(calls) < 2:\n        raise RuntimeError("boom")\n    return "${value}"\n\nassert retry(flaky, attempts=2) == "${value}"\nassert len(calls) == 2`,
        },
        { name: 'test_bad_attempts', body: raises('retry(lambda: 1, attempts=0)') },
      ],
      failing: [
        {
          name: 'test_default_attempts',
          body: `calls = []\n\ndef flaky():\n    calls.append(1)\n    if len(calls) < 3:\n        raise RuntimeError("boom")\n    return "${value}"\n\nassert retry(flaky) == "${value}"\nassert len(calls) == 3`,
        },
        {
          name: 'test_gives_up_after_three',
          body: `calls = []\n\ndef broken():\n    calls.append(1)\n    raise RuntimeError("boom")\n\n${raises('retry(broken)', 'RuntimeError')}\nassert len(calls) == 3`,
        },
      ],
    };
  },
};

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

const months: Template = {
  name: 'month-index',
  make(r) {
    const m = r.int(2, 11);
    return {
      module: 'months',
      source: `"""Month names."""

MONTHS = [
${MONTHS.map((name) => `    "${name}",`).join('\n')}
]


def month_name(number):
    """The English name of month \`number\` (1 = January)."""
    if not 1 <= number <= 12:
        raise ValueError("months are numbered 1 to 12")
    return MONTHS[number]


def month_number(name):
    """The number of the month called \`name\` (any case)."""
    return MONTHS.index(name.capitalize()) + 1
`,
      fix: [['    return MONTHS[number]\n', '    return MONTHS[number - 1]\n']],
      problem: `\`month_name(1)\` returns "February", \`month_name(${m})\` returns "${MONTHS[m]}" and \`month_name(12)\` raises IndexError. Months are numbered from 1.`,
      imports: ['month_name', 'month_number'],
      passing: [
        { name: 'test_month_number', body: `assert month_number("${MONTHS[m - 1].toLowerCase()}") == ${m}` },
        { name: 'test_out_of_range', body: raises('month_name(13)') },
      ],
      failing: [
        {
          name: 'test_first_and_last',
          body: 'assert month_name(1) == "January"\nassert month_name(12) == "December"',
        },
        { name: 'test_round_trip', body: `assert month_name(${m}) == "${MONTHS[m - 1]}"` },
      ],
    };
  },
};

const percent: Template = {
  name: 'percentage-division',
  make(r) {
    const whole = r.pick([3, 6, 7, 9, 11, 12]);
    let part = r.int(1, whole - 1);
    if ((part * 100) % whole === 0) part = 1;
    const expected = Math.round(((part * 100) / whole) * 10) / 10;
    return {
      module: 'ratios',
      source: `"""Ratios for reports."""


def percentage(part, whole):
    """\`part\` as a percentage of \`whole\`, rounded to one decimal: percentage(1, 3) -> 33.3."""
    if whole == 0:
        raise ValueError("whole must not be zero")
    return part * 100 // whole
`,
      fix: [['    return part * 100 // whole\n', '    return round(part * 100 / whole, 1)\n']],
      problem: `\`percentage(${part}, ${whole})\` returns ${Math.floor((part * 100) / whole)} instead of ${expected}: the result is cut to a whole number instead of rounded to one decimal.`,
      imports: ['percentage'],
      passing: [
        { name: 'test_exact', body: 'assert percentage(50, 200) == 25\nassert percentage(3, 3) == 100' },
        { name: 'test_zero_whole', body: raises('percentage(1, 0)') },
      ],
      failing: [
        { name: 'test_rounding', body: `assert percentage(${part}, ${whole}) == ${expected}` },
        { name: 'test_third', body: 'assert percentage(1, 3) == 33.3\nassert percentage(2, 3) == 66.7' },
      ],
    };
  },
};

const interest: Template = {
  name: 'compound-interest',
  make(r) {
    const balance = r.int(10, 90) * 100;
    const rate = r.int(2, 9);
    const years = r.int(3, 8);
    const compound = Math.round(balance * (1 + rate / 100) ** years * 100) / 100;
    return {
      module: 'interest',
      source: `"""Savings arithmetic."""


def grow(balance, rate_percent, years):
    """\`balance\` after \`years\` of interest at \`rate_percent\` compounded yearly, rounded to cents."""
    return round(balance * (1 + rate_percent / 100) * years, 2)
`,
      fix: [
        [
          '    return round(balance * (1 + rate_percent / 100) * years, 2)\n',
          '    return round(balance * (1 + rate_percent / 100) ** years, 2)\n',
        ],
      ],
      problem: `\`grow(${balance}, ${rate}, ${years})\` returns ${Math.round(balance * (1 + rate / 100) * years * 100) / 100}, as if the balance were multiplied by the number of years; compounded yearly it should be ${compound}.`,
      imports: ['grow'],
      passing: [{ name: 'test_one_year', body: `assert grow(1000, ${rate}, 1) == ${1000 + rate * 10}` }],
      failing: [
        {
          name: 'test_compound',
          body: `assert abs(grow(${balance}, ${rate}, ${years}) - ${compound}) < 0.011`,
        },
        { name: 'test_zero_years', body: 'assert grow(500, 5, 0) == 500' },
      ],
    };
  },
};

/** Every template, in suite order. */
export const TEMPLATES: readonly Template[] = [
  paging,
  ranges,
  average,
  median,
  slug,
  duration,
  leap,
  temperature,
  chunks,
  words,
  truncate,
  search,
  booleans,
  inventory,
  roman,
  money,
  initials,
  retry,
  months,
  percent,
  interest,
];
