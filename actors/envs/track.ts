/**
 * A track: one kind of agentic task (toolcall, terminal, swe, gui) with its built-in suite, a
 * loader for its real on-disk format, and a factory for its environment. `clawray env check`,
 * `EnvPool` actors and the job driver reach every track through this one shape.
 */
import type { Action, Environment } from './environment.js';

export const TRACK_NAMES = ['toolcall', 'terminal', 'swe', 'gui'] as const;
export type TrackName = (typeof TRACK_NAMES)[number];
export type Split = 'train' | 'heldout';

/** What every track's task has in common. */
export interface TrackTask {
  /** Unique within a suite, stable across runs (derived from the task's content or name). */
  id: string;
  split: Split;
  /**
   * Scripted agent turns that solve the task: played through a fresh environment after
   * `reset(id)` they must end the episode with reward +1. Empty when a loaded task has none.
   */
  oracle: Action[];
}

export interface TrackEnvOptions {
  /** The split reset() without an id draws from (default 'all'); reset(id) reaches any task. */
  split?: Split | 'all';
  /** Seed of the order in which reset() without an id walks the tasks. */
  seed?: number;
  /** Track-specific settings (limits, paths), validated by the track. */
  settings?: Record<string, unknown>;
}

export interface Track<T extends TrackTask = TrackTask> {
  readonly name: TrackName;
  /** One line for `clawray env check` and errors. */
  readonly description: string;
  /** The built-in suite: generated locally and deterministically, with train and held-out splits. */
  builtinTasks(): Promise<T[]>;
  /** Tasks in the track's real format from a file or directory; errors name the file and field. */
  loadTasks(path: string): Promise<T[]>;
  /** `Info` is the track's own episode record (any object; it crosses the wire as is). */
  createEnvironment(tasks: T[], options?: TrackEnvOptions): Environment<object>;
}

/** One task in HELDOUT_EVERY is held out. */
export const HELDOUT_EVERY = 5;

/** 32-bit FNV-1a, as 8 hex digits. */
export function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, '0');
}

/**
 * Every track's split rule: held out when the FNV-1a hash of the task's key (its question,
 * instruction or id) is 0 mod 5, so a task's split depends only on itself, never on the seed or
 * on which other tasks exist, and train and held-out never overlap.
 */
export function splitOfHash(hash: string): Split {
  return Number.parseInt(hash, 16) % HELDOUT_EVERY === 0 ? 'heldout' : 'train';
}

/** The split of a task keyed by `key` (see splitOfHash). */
export function splitOf(key: string): Split {
  return splitOfHash(fnv1a(key));
}

/** The do-nothing agent: answers at once without acting. No task may reward it with +1. */
export const DO_NOTHING_ACTION: Action = { content: 'I am done.' };
