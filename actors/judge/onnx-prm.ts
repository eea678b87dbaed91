/**
 * A process reward model that is a Hugging Face sequence classifier exported to ONNX: a
 * directory with `model.onnx` (inputs `input_ids` [+ `attention_mask`, `token_type_ids`,
 * `position_ids`], output `logits` [batch, num_labels]), `tokenizer.json` and `config.json`
 * (`id2label`). The turn's text is classified and the vote is +1 when the probability of the
 * positive class reaches the threshold, else −1.
 *
 * The directory is checked synchronously (`readPrmDir`, so an actor's constructor fails at
 * once on a bad directory, naming the file); the onnxruntime session is created
 * asynchronously (`OnnxPrm.load`). onnxruntime-node is imported only then, so voters of other
 * backends never load the native binding.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as Ort from 'onnxruntime-node';
import { ConfigError } from '../../common/errors.js';
import { cpuCores } from '../models/cpu-cores.js';
import { type ExecutionProvider, providerAttempts } from '../models/execution-provider.js';
import { TOKENIZER_CONFIG_FILE, TOKENIZER_FILE, Tokenizer } from '../models/tokenizer.js';
import { buildClassifierText, type JudgeInput } from './prompts.js';

export const PRM_MODEL_FILE = 'model.onnx';
export const PRM_CONFIG_FILE = 'config.json';

/** Label names (compared lowercased) that mean "the turn was good". */
export const POSITIVE_LABEL_NAMES = [
  '1',
  'positive',
  'pos',
  'label_1',
  'good',
  'correct',
  'yes',
  'true',
  'accept',
  'accepted',
];

const DEFAULT_MAX_LENGTH = 512;
/** tokenizer_config.json writes "no limit" as a huge number (1e30). */
const UNLIMITED_LENGTH = 1_000_000;

export interface OnnxPrmOptions {
  modelDir: string;
  /** Vote +1 when p(positive) ≥ threshold (default 0.5). */
  threshold?: number;
  /** The positive class, by label name or index; default: the label named like 1/positive/LABEL_1/good. */
  positiveLabel?: string | number;
  /** Tokens per input, special tokens included; longer inputs lose their beginning. */
  maxLength?: number;
  /** 'auto' (default) tries CUDA, then WebGPU, when this process holds a GPU; else the CPU. */
  provider?: ExecutionProvider | 'auto';
}

export interface PrmDir {
  dir: string;
  modelFile: string;
  tokenizer: Tokenizer;
  /** Label names by class index (`LABEL_i` where config.json names none). */
  labels: string[];
  positiveIndex: number;
  threshold: number;
  maxLength: number;
}

function readJson(file: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`${file}: cannot read it as JSON (${(err as Error).message})`, {
      cause: err,
      fields: { file },
    });
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw new ConfigError(`${file}: expected a JSON object`, { fields: { file } });
  }
  return value as Record<string, unknown>;
}

function labelsOf(config: Record<string, unknown>, file: string): string[] {
  const id2label = config.id2label;
  const numLabels = config.num_labels;
  if (id2label !== undefined) {
    if (!id2label || typeof id2label !== 'object' || Array.isArray(id2label)) {
      throw new ConfigError(`${file}: id2label must be an object of index → name`, { fields: { file } });
    }
    const entries = Object.entries(id2label as Record<string, unknown>);
    const labels: string[] = new Array(entries.length);
    for (const [key, name] of entries) {
      const i = Number(key);
      if (!Number.isInteger(i) || i < 0 || i >= entries.length || typeof name !== 'string') {
        throw new ConfigError(
          `${file}: id2label must map the indices 0..${entries.length - 1} to names, got ${JSON.stringify(key)}: ${JSON.stringify(name)}`,
          { fields: { file } },
        );
      }
      labels[i] = name;
    }
    if (entries.length === 0) throw new ConfigError(`${file}: id2label is empty`, { fields: { file } });
    if (typeof numLabels === 'number' && numLabels !== labels.length) {
      throw new ConfigError(`${file}: num_labels is ${numLabels} but id2label has ${labels.length} labels`, {
        fields: { file },
      });
    }
    return labels;
  }
  const n = numLabels ?? 2;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) {
    throw new ConfigError(`${file}: num_labels must be a positive integer, got ${JSON.stringify(n)}`, {
      fields: { file },
    });
  }
  return Array.from({ length: n }, (_, i) => `LABEL_${i}`);
}

function positiveIndexOf(labels: string[], wanted: string | number | undefined, file: string): number {
  const listed = labels.map((l, i) => `${i}:${l}`).join(', ');
  if (typeof wanted === 'number') {
    if (!Number.isInteger(wanted) || wanted < 0 || wanted >= labels.length) {
      throw new ConfigError(`positiveLabel ${wanted} is not a class index of ${file} (labels ${listed})`, {
        fields: { field: 'positiveLabel', file },
      });
    }
    return wanted;
  }
  if (typeof wanted === 'string') {
    let i = labels.indexOf(wanted);
    if (i < 0) i = labels.findIndex((l) => l.toLowerCase() === wanted.toLowerCase());
    if (i < 0) {
      throw new ConfigError(`positiveLabel '${wanted}' is not a label of ${file} (labels ${listed})`, {
        fields: { field: 'positiveLabel', file },
      });
    }
    return i;
  }
  // A single-logit head is a binary classifier read through a sigmoid: its one class is positive.
  if (labels.length === 1) return 0;
  const matches = labels.flatMap((l, i) =>
    POSITIVE_LABEL_NAMES.includes(l.trim().toLowerCase()) ? [i] : [],
  );
  if (matches.length !== 1) {
    throw new ConfigError(
      `${file}: cannot tell which label is the positive class (labels ${listed}); set positiveLabel`,
      { fields: { field: 'positiveLabel', file } },
    );
  }
  return matches[0];
}

function maxLengthOf(dir: string, config: Record<string, unknown>): number {
  const tokenizerConfigFile = join(dir, TOKENIZER_CONFIG_FILE);
  if (existsSync(tokenizerConfigFile)) {
    const limit = readJson(tokenizerConfigFile).model_max_length;
    if (typeof limit === 'number' && limit > 0 && limit < UNLIMITED_LENGTH) return Math.floor(limit);
  }
  const positions = config.max_position_embeddings;
  return typeof positions === 'number' && positions > 0 ? positions : DEFAULT_MAX_LENGTH;
}

/** Reads and checks a classifier directory (no session yet); errors name the file at fault. */
export function readPrmDir(options: OnnxPrmOptions): PrmDir {
  const dir = options.modelDir;
  if (!existsSync(dir)) throw new ConfigError(`${dir}: no such model directory`, { fields: { file: dir } });
  const modelFile = join(dir, PRM_MODEL_FILE);
  const configFile = join(dir, PRM_CONFIG_FILE);
  for (const [file, what] of [
    [modelFile, 'the ONNX export of the classifier'],
    [configFile, 'the labels (id2label)'],
    [join(dir, TOKENIZER_FILE), 'the tokenizer'],
  ] as const) {
    if (!existsSync(file)) {
      throw new ConfigError(`${file}: missing: an ONNX PRM directory needs it for ${what}`, {
        fields: { file },
      });
    }
  }
  const config = readJson(configFile);
  const labels = labelsOf(config, configFile);
  const threshold = options.threshold ?? 0.5;
  if (!(threshold >= 0 && threshold <= 1)) {
    throw new ConfigError(`threshold must be in [0, 1], got ${threshold}`, {
      fields: { field: 'threshold' },
    });
  }
  const maxLength = options.maxLength ?? maxLengthOf(dir, config);
  if (!Number.isInteger(maxLength) || maxLength < 1) {
    throw new ConfigError(`maxLength must be a positive integer, got ${maxLength}`, {
      fields: { field: 'maxLength' },
    });
  }
  return {
    dir,
    modelFile,
    tokenizer: Tokenizer.load(dir),
    labels,
    positiveIndex: positiveIndexOf(labels, options.positiveLabel, configFile),
    threshold,
    maxLength,
  };
}

/** p(class `index`) from one row of logits: softmax, or a sigmoid for a single-logit head. */
export function positiveProbability(logits: ArrayLike<number>, index: number): number {
  if (logits.length === 1) return 1 / (1 + Math.exp(-logits[0]));
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < logits.length; i++) max = Math.max(max, logits[i]);
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp(logits[i] - max);
  return Math.exp(logits[index] - max) / sum;
}

type IdArray = BigInt64Array | Int32Array;

export interface PrmScore {
  probability: number;
  score: 1 | -1;
}

export class OnnxPrm {
  private constructor(
    readonly spec: PrmDir,
    private readonly ort: typeof Ort,
    private readonly session: Ort.InferenceSession,
    readonly provider: ExecutionProvider,
    private readonly int32: boolean,
    private readonly output: string,
  ) {}

  /** Loads a directory (or one already read by `readPrmDir`) into an onnxruntime session. */
  static async load(options: OnnxPrmOptions, spec: PrmDir = readPrmDir(options)): Promise<OnnxPrm> {
    const ort = await import('onnxruntime-node');
    const provider = options.provider ?? 'auto';
    const attempts = providerAttempts(provider);
    let session: Ort.InferenceSession | undefined;
    let used: ExecutionProvider = 'cpu';
    let lastError: unknown;
    for (const ep of attempts) {
      try {
        session = await ort.InferenceSession.create(spec.modelFile, {
          executionProviders: [ep],
          graphOptimizationLevel: 'all',
          // The decoder's default (cpu-cores.ts): onnxruntime's own may fall back to one thread.
          intraOpNumThreads: cpuCores(),
        });
        used = ep;
        break;
      } catch (err) {
        lastError = err;
      }
    }
    if (!session) {
      throw new ConfigError(
        `${spec.modelFile}: onnxruntime cannot load it (${(lastError as Error)?.message})`,
        {
          cause: lastError,
          fields: { file: spec.modelFile },
        },
      );
    }
    const fail = (why: string) => {
      void session.release().catch(() => {});
      return new ConfigError(`${spec.modelFile}: ${why}`, { fields: { file: spec.modelFile } });
    };
    if (!session.inputNames.includes('input_ids')) {
      throw fail(
        `not a sequence classifier: it has no input_ids input (inputs: ${session.inputNames.join(', ')})`,
      );
    }
    const known = new Set(['input_ids', 'attention_mask', 'token_type_ids', 'position_ids']);
    const unknown = session.inputNames.filter((n) => !known.has(n));
    if (unknown.length > 0) throw fail(`has inputs a classifier cannot be fed: ${unknown.join(', ')}`);
    const output = session.outputNames.includes('logits')
      ? 'logits'
      : session.outputNames.length === 1
        ? session.outputNames[0]
        : undefined;
    if (!output) throw fail(`has no logits output (outputs: ${session.outputNames.join(', ')})`);
    const ids = session.inputMetadata.find((m) => m.name === 'input_ids');
    const int32 = ids?.isTensor === true && ids.type === 'int32';
    return new OnnxPrm(spec, ort, session, used, int32, output);
  }

  get labels(): string[] {
    return this.spec.labels;
  }

  get positiveLabel(): string {
    return this.spec.labels[this.spec.positiveIndex];
  }

  /**
   * Token ids of one text, the tokenizer's special tokens included (a classifier is trained with
   * them). Too long a text loses its beginning, keeping a leading special token (e.g. [CLS]):
   * the evidence, the next state, is at the end.
   */
  encode(text: string): number[] {
    const { tokenizer, maxLength } = this.spec;
    const ids = tokenizer.encode(text, { addSpecialTokens: true });
    if (ids.length <= maxLength) return ids;
    if (maxLength > 1 && tokenizer.isSpecial(ids[0]))
      return [ids[0], ...ids.slice(ids.length - maxLength + 1)];
    return ids.slice(ids.length - maxLength);
  }

  /** p(positive class) of each text, run as one right-padded batch. */
  async probabilities(texts: readonly string[]): Promise<number[]> {
    if (texts.length === 0) return [];
    const rows = texts.map((t) => this.encode(t));
    const batch = rows.length;
    const seq = Math.max(1, ...rows.map((r) => r.length));
    const pad = this.spec.tokenizer.padTokenId ?? 0;
    const make = (n: number): IdArray => (this.int32 ? new Int32Array(n) : new BigInt64Array(n));
    const set = (a: IdArray, i: number, v: number) => {
      if (a instanceof Int32Array) a[i] = v;
      else a[i] = BigInt(v);
    };
    const inputIds = make(batch * seq);
    const mask = make(batch * seq);
    const positions = make(batch * seq);
    rows.forEach((row, b) => {
      for (let t = 0; t < seq; t++) {
        const real = t < row.length;
        set(inputIds, b * seq + t, real ? row[t] : pad);
        set(mask, b * seq + t, real ? 1 : 0);
        set(positions, b * seq + t, real ? t : 0);
      }
    });
    const type = this.int32 ? 'int32' : 'int64';
    const dims = [batch, seq];
    const byName: Record<string, IdArray> = {
      input_ids: inputIds,
      attention_mask: mask,
      token_type_ids: make(batch * seq),
      position_ids: positions,
    };
    const feeds: Record<string, Ort.Tensor> = {};
    for (const name of this.session.inputNames) feeds[name] = new this.ort.Tensor(type, byName[name], dims);
    const out = await this.session.run(feeds);
    const logits = out[this.output].data as Float32Array;
    const numLabels = this.spec.labels.length;
    if (logits.length !== batch * numLabels) {
      throw new ConfigError(
        `${this.spec.modelFile}: gives ${logits.length / batch} logits per input but config.json has ${numLabels} labels`,
        { fields: { file: this.spec.modelFile } },
      );
    }
    return rows.map((_, b) =>
      positiveProbability(logits.subarray(b * numLabels, (b + 1) * numLabels), this.spec.positiveIndex),
    );
  }

  async probability(text: string): Promise<number> {
    return (await this.probabilities([text]))[0];
  }

  /** The vote on one turn: +1 when p(positive) ≥ threshold, else −1. */
  async scoreTurn(input: JudgeInput): Promise<PrmScore> {
    const probability = await this.probability(buildClassifierText(input));
    return { probability, score: probability >= this.spec.threshold ? 1 : -1 };
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}
