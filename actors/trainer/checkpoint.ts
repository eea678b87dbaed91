/**
 * Trainer checkpoints: `<dir>/step-<N>/` holds
 *
 *   model.safetensors       the weights (F32, so a reload is bit-identical)
 *   optimizer.safetensors   AdamW moments as `exp_avg.<param>` / `exp_avg_sq.<param>` (if given)
 *   trainer_state.json      step, optimizer step, RNG state, data cursor, extra (JSON)
 *
 * A save writes everything into `<dir>/.tmp-step-<N>-<pid>-<rand>/`, fsyncs each file and the
 * temp dir, renames the temp dir to `step-<N>` and fsyncs `<dir>`: a crash at any point leaves
 * either the complete checkpoint or a temp dir that `latest()` ignores (and the next successful
 * save removes). One writer per directory is assumed.
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { join } from 'node:path';
import { fsyncDir } from '../../common/atomic-file.js';
import { writeAll } from '../../common/chunked-io.js';
import { ConfigError, NotFoundError } from '../../common/errors.js';
import {
  planSafetensors,
  readSafetensors,
  type SafetensorsPlan,
  type TensorToWrite,
  writeSafetensorsPlan,
} from '../models/safetensors.js';
import type { WeightMap } from '../models/weight-names.js';
import { assertFiniteWeights } from './finite-weights.js';
import type { AdamWState } from './optimizer.js';

export const MODEL_FILE = 'model.safetensors';
export const OPTIMIZER_FILE = 'optimizer.safetensors';
export const TRAINER_STATE_FILE = 'trainer_state.json';
const STATE_FORMAT = 'clawray-trainer-state';
const STATE_VERSION = 1;
const STEP_DIR = /^step-(\d+)$/;
const TMP_PREFIX = '.tmp-step-';
const M_PREFIX = 'exp_avg.';
const V_PREFIX = 'exp_avg_sq.';

/** JSON-serializable values (the RNG state, data cursor and extra must be these). */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface CheckpointManagerOptions {
  dir: string;
  /** Complete checkpoints kept after a save (the oldest go first). Default 3. */
  keepLast?: number;
}

export interface SaveCheckpointInput {
  step: number;
  weights: WeightMap;
  /** Tensor shapes by name; a weight without one is stored as 1-D. */
  shapes?: ReadonlyMap<string, readonly number[]>;
  optimizerState?: AdamWState;
  rngState?: Json;
  dataCursor?: Json;
  extra?: Json;
}

export interface LoadedCheckpoint {
  step: number;
  /** The checkpoint directory. */
  path: string;
  weights: WeightMap;
  shapes: Map<string, number[]>;
  /** Absent when the checkpoint was saved without one. */
  optimizerState?: AdamWState;
  rngState: Json;
  dataCursor: Json;
  extra: Json;
}

interface TrainerStateFile {
  format: string;
  version: number;
  step: number;
  optimizerStep: number | null;
  /** AdamW's bias-correction t when it differs from optimizerStep (moments reset); absent in older files. */
  optimizerMomentSteps?: number | null;
  rngState: Json;
  dataCursor: Json;
  extra: Json;
  savedAt: string;
}

function ioError(file: string, what: string, err: unknown): never {
  throw new ConfigError(`${file}: ${what} (${(err as Error).message})`, { cause: err, fields: { file } });
}

function writeSynced(file: string, write: (fd: number) => void): void {
  let fd: number | null = null;
  try {
    fd = openSync(file, 'wx', 0o644);
    write(fd);
    fsyncSync(fd);
  } catch (err) {
    ioError(file, 'cannot write', err);
  } finally {
    if (fd !== null) closeSync(fd);
  }
}

function plan(file: string, tensors: ReadonlyMap<string, TensorToWrite>): SafetensorsPlan {
  try {
    return planSafetensors(tensors, { dtype: 'F32', metadata: { format: 'pt' } });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    throw new ConfigError(`${file}: ${err.message}`, { cause: err, fields: { file } });
  }
}

function toJson(file: string, value: unknown): string {
  try {
    return `${JSON.stringify(value, null, 2)}\n`;
  } catch (err) {
    ioError(file, 'the trainer state is not JSON-serializable', err);
  }
}

export class CheckpointManager {
  readonly dir: string;
  readonly keepLast: number;

  constructor({ dir, keepLast = 3 }: CheckpointManagerOptions) {
    if (typeof dir !== 'string' || dir === '')
      throw new ConfigError('CheckpointManager: dir must be a non-empty path');
    if (!Number.isSafeInteger(keepLast) || keepLast < 1) {
      throw new ConfigError(
        `CheckpointManager: keepLast must be a whole number ≥ 1, got ${String(keepLast)}`,
        {
          fields: { option: 'keepLast' },
        },
      );
    }
    this.dir = dir;
    this.keepLast = keepLast;
  }

  /** The directory of the checkpoint at `step` (whether or not it exists). */
  pathFor(step: number): string {
    return join(this.dir, `step-${step}`);
  }

  /** Steps of the complete checkpoints, ascending. Temp dirs and strays are ignored. */
  list(): number[] {
    let entries: string[];
    try {
      entries = readdirSync(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      ioError(this.dir, 'cannot list checkpoints', err);
    }
    const steps: number[] = [];
    for (const name of entries) {
      const m = STEP_DIR.exec(name);
      if (!m) continue;
      const step = Number(m[1]);
      if (!Number.isSafeInteger(step) || `step-${step}` !== name) continue;
      if (
        existsSync(join(this.dir, name, TRAINER_STATE_FILE)) &&
        existsSync(join(this.dir, name, MODEL_FILE))
      ) {
        steps.push(step);
      }
    }
    return steps.sort((a, b) => a - b);
  }

  /** The highest complete checkpoint's step, or null when there is none. */
  latest(): number | null {
    const steps = this.list();
    return steps.length > 0 ? steps[steps.length - 1] : null;
  }

  /** Writes the checkpoint atomically, prunes beyond keepLast, and returns its directory. */
  save(input: SaveCheckpointInput): string {
    const { step, weights, shapes, optimizerState } = input;
    if (!Number.isSafeInteger(step) || step < 0) {
      throw new ConfigError(`checkpoint step must be a whole number ≥ 0, got ${String(step)}`);
    }
    const finalDir = this.pathFor(step);
    try {
      mkdirSync(this.dir, { recursive: true });
    } catch (err) {
      ioError(this.dir, 'cannot create the checkpoint directory', err);
    }
    const tmpDir = join(this.dir, `${TMP_PREFIX}${step}-${process.pid}-${randomBytes(4).toString('hex')}`);

    // Check everything before touching the disk: bad input fails without leaving anything. The
    // tensors are then written one at a time (a 0.6B model's optimizer state is 4.8 GB).
    const modelFile = join(finalDir, MODEL_FILE);
    const modelTensors = new Map<string, TensorToWrite>();
    for (const [name, data] of weights) {
      if (!(data instanceof Float32Array)) {
        throw new ConfigError(`${modelFile}: weight '${name}' must be a Float32Array`, {
          fields: { param: name },
        });
      }
      modelTensors.set(name, { shape: [...(shapes?.get(name) ?? [data.length])], data });
    }
    assertFiniteWeights(weights, modelFile);
    if (optimizerState) {
      assertFiniteWeights(optimizerState.m, join(finalDir, OPTIMIZER_FILE));
      assertFiniteWeights(optimizerState.v, join(finalDir, OPTIMIZER_FILE));
    }
    const modelPlan = plan(modelFile, modelTensors);
    let optimizerPlan: SafetensorsPlan | null = null;
    if (optimizerState) {
      const optFile = join(finalDir, OPTIMIZER_FILE);
      const t = new Map<string, TensorToWrite>();
      for (const [name, m] of optimizerState.m) {
        const v = optimizerState.v.get(name);
        if (!v) throw new ConfigError(`${optFile}: parameter '${name}' has exp_avg but no exp_avg_sq`);
        t.set(M_PREFIX + name, { shape: [m.length], data: m });
        t.set(V_PREFIX + name, { shape: [v.length], data: v });
      }
      optimizerPlan = plan(optFile, t);
    }
    const state: TrainerStateFile = {
      format: STATE_FORMAT,
      version: STATE_VERSION,
      step,
      optimizerStep: optimizerState ? optimizerState.step : null,
      optimizerMomentSteps: optimizerState ? (optimizerState.momentSteps ?? optimizerState.step) : null,
      rngState: input.rngState ?? null,
      dataCursor: input.dataCursor ?? null,
      extra: input.extra ?? null,
      savedAt: new Date().toISOString(),
    };
    const stateText = toJson(join(finalDir, TRAINER_STATE_FILE), state);

    try {
      try {
        mkdirSync(tmpDir);
      } catch (err) {
        ioError(tmpDir, 'cannot create the temporary checkpoint directory', err);
      }
      writeSynced(join(tmpDir, MODEL_FILE), (fd) => writeSafetensorsPlan(fd, modelPlan));
      if (optimizerPlan) {
        const p = optimizerPlan;
        writeSynced(join(tmpDir, OPTIMIZER_FILE), (fd) => writeSafetensorsPlan(fd, p));
      }
      writeSynced(join(tmpDir, TRAINER_STATE_FILE), (fd) => writeAll(fd, Buffer.from(stateText, 'utf8')));
      fsyncDir(tmpDir);
      let trash: string | null = null;
      if (existsSync(finalDir)) {
        // Re-saving a step replaces it; the old one moves aside first (rename cannot replace a dir).
        trash = join(this.dir, `${TMP_PREFIX}${step}-old-${process.pid}-${randomBytes(4).toString('hex')}`);
        try {
          renameSync(finalDir, trash);
        } catch (err) {
          ioError(finalDir, 'cannot move the previous checkpoint of this step aside', err);
        }
      }
      try {
        renameSync(tmpDir, finalDir);
      } catch (err) {
        ioError(finalDir, `cannot rename ${tmpDir} into place`, err);
      }
      fsyncDir(this.dir);
      if (trash) rmSync(trash, { recursive: true, force: true });
    } catch (err) {
      rmSync(tmpDir, { recursive: true, force: true });
      throw err;
    }
    this.prune();
    return finalDir;
  }

  /** Deletes complete checkpoints beyond keepLast and temp dirs left by crashed saves. */
  prune(): void {
    const steps = this.list();
    for (const step of steps.slice(0, Math.max(0, steps.length - this.keepLast))) {
      rmSync(this.pathFor(step), { recursive: true, force: true });
    }
    let entries: string[] = [];
    try {
      entries = readdirSync(this.dir);
    } catch {
      return;
    }
    for (const name of entries) {
      if (name.startsWith(TMP_PREFIX)) rmSync(join(this.dir, name), { recursive: true, force: true });
    }
  }

  /** Loads the checkpoint at `step` (default: the latest complete one) exactly as saved. */
  load(step?: number): LoadedCheckpoint {
    const target = step ?? this.latest();
    if (target === null) {
      throw new NotFoundError(
        `${this.dir}: no complete checkpoint (step-<N>/${TRAINER_STATE_FILE}) to load`,
        {
          fields: { file: this.dir },
        },
      );
    }
    const path = this.pathFor(target);
    const stateFile = join(path, TRAINER_STATE_FILE);
    if (!existsSync(stateFile)) {
      throw new NotFoundError(`${stateFile}: missing: step ${target} has no complete checkpoint`, {
        fields: { file: stateFile },
      });
    }
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(stateFile, 'utf8'));
    } catch (err) {
      ioError(stateFile, 'cannot read or parse', err);
    }
    const state = raw as Partial<TrainerStateFile>;
    const bad = (what: string): never => {
      throw new ConfigError(`${stateFile}: ${what}`, { fields: { file: stateFile } });
    };
    if (!state || typeof state !== 'object' || state.format !== STATE_FORMAT)
      bad(`not a ${STATE_FORMAT} file`);
    if (state.version !== STATE_VERSION)
      bad(`unsupported version ${String(state.version)} (expected ${STATE_VERSION})`);
    if (state.step !== target) bad(`records step ${String(state.step)} but lives in step-${target}`);
    const optimizerStep = state.optimizerStep ?? null;
    if (optimizerStep !== null && (!Number.isSafeInteger(optimizerStep) || optimizerStep < 0)) {
      bad(`optimizerStep must be a whole number ≥ 0 or null, got ${String(optimizerStep)}`);
    }

    const model = readSafetensors(join(path, MODEL_FILE));
    const weights: WeightMap = new Map();
    const shapes = new Map<string, number[]>();
    for (const [name, t] of model.tensors) {
      weights.set(name, t.data);
      shapes.set(name, t.shape);
    }

    let optimizerState: AdamWState | undefined;
    const optFile = join(path, OPTIMIZER_FILE);
    if (optimizerStep !== null) {
      if (!existsSync(optFile)) {
        throw new ConfigError(
          `${optFile}: missing, but ${TRAINER_STATE_FILE} records optimizer step ${optimizerStep}`,
          {
            fields: { file: optFile },
          },
        );
      }
      const opt = readSafetensors(optFile);
      const m = new Map<string, Float32Array>();
      const v = new Map<string, Float32Array>();
      for (const [name, t] of opt.tensors) {
        if (name.startsWith(V_PREFIX)) v.set(name.slice(V_PREFIX.length), t.data);
        else if (name.startsWith(M_PREFIX)) m.set(name.slice(M_PREFIX.length), t.data);
        else {
          throw new ConfigError(`${optFile}: tensor '${name}' is neither ${M_PREFIX}* nor ${V_PREFIX}*`, {
            fields: { file: optFile, tensor: name },
          });
        }
      }
      for (const name of new Set([...m.keys(), ...v.keys()])) {
        if (!m.has(name) || !v.has(name) || m.get(name)!.length !== v.get(name)!.length) {
          throw new ConfigError(
            `${optFile}: parameter '${name}' needs both exp_avg and exp_avg_sq of one length`,
            {
              fields: { file: optFile, tensor: name },
            },
          );
        }
      }
      // AdamW.loadState checks it against the step.
      optimizerState = {
        step: optimizerStep,
        momentSteps: state.optimizerMomentSteps ?? optimizerStep,
        m,
        v,
      };
    }

    return {
      step: target,
      path,
      weights,
      shapes,
      optimizerState,
      rngState: state.rngState ?? null,
      dataCursor: state.dataCursor ?? null,
      extra: state.extra ?? null,
    };
  }
}

/** Size in bytes of a checkpoint directory's files (for logs and metrics). */
export function checkpointBytes(path: string): number {
  let total = 0;
  for (const name of readdirSync(path)) total += statSync(join(path, name)).size;
  return total;
}
