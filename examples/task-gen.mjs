/**
 * What every examples/<track>/make-tasks.mjs shares: its command-line options, a seeded PRNG and
 * the task-file split rule, so generated suites are byte-identical on every machine (no
 * dependencies: the scripts run before `npm run build`).
 */

/** `--name value` from the command line, or the fallback. */
export function option(name, fallback) {
  const args = process.argv.slice(2);
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
}

/** `--name N` as a whole number ≥ 0 (the fallback when absent); anything else ends the script. */
export function countOption(name, fallback) {
  const raw = option(name, String(fallback));
  const n = Number(raw);
  if (raw === undefined || raw.trim() === '' || !Number.isSafeInteger(n) || n < 0) {
    console.error(`--${name} must be a whole number ≥ 0, got ${raw === undefined ? 'nothing' : `'${raw}'`}`);
    process.exit(2);
  }
  return n;
}

/** `--name X` as a number from 0 to 1 (the fallback when absent); anything else ends the script. */
export function fractionOption(name, fallback) {
  const raw = option(name, String(fallback));
  const x = Number(raw);
  if (raw === undefined || raw.trim() === '' || !(x >= 0 && x <= 1)) {
    console.error(
      `--${name} must be a number from 0 to 1, got ${raw === undefined ? 'nothing' : `'${raw}'`}`,
    );
    process.exit(2);
  }
  return x;
}

/** mulberry32: uniform floats in [0, 1) from a 32-bit seed. */
export function seededRandom(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** 32-bit FNV-1a of a string, as a number; a task is held out when it is 0 mod 5 (actors/envs/track.ts). */
export function fnv1a(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
