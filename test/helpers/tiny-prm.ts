/**
 * Writes a real, tiny Hugging Face-style sequence classifier directory for tests and demos:
 * a BERT-like WordPiece `tokenizer.json` over a few words, `config.json` with `id2label`, and a
 * `model.onnx` written with our protobufjs ONNX writer:
 *
 *   Gather(embedding, input_ids) → masked mean over tokens → MatMul(W) + Add(b) → logits
 *
 * (plain ReduceMean when the model takes no attention_mask). Weights are chosen by the caller,
 * so a test can make particular words push towards a class and compute the expected
 * probability by hand.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PRM_CONFIG_FILE, PRM_MODEL_FILE } from '../../actors/judge/onnx-prm.js';
import { ONNX_IR_VERSION, ONNX_OPSET } from '../../actors/models/onnx-graph.js';
import {
  attr,
  DataType,
  encodeModel,
  floatTensor,
  int64Tensor,
  makeNode,
  type OnnxNode,
  valueInfo,
} from '../../actors/models/onnx-proto.js';
import { TOKENIZER_CONFIG_FILE, TOKENIZER_FILE } from '../../actors/models/tokenizer.js';

export const TINY_PRM_SPECIAL_TOKENS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]'] as const;

export interface TinyPrmSpec {
  /** Vocabulary words after the special tokens (lowercase: the tokenizer lowercases). */
  words: string[];
  /** Embedding rows by token ([UNK], [CLS], a word…); tokens not listed embed to zeros. */
  embeddings: Record<string, number[]>;
  /** Classifier weight [hidden][labels]. */
  weight: number[][];
  /** Classifier bias [labels]. */
  bias: number[];
  /** id2label names; their count must match the columns of `weight`. */
  labels: string[];
  /** Give the graph an attention_mask input (default true). */
  attentionMask?: boolean;
  /** model_max_length written to tokenizer_config.json (default 64). */
  maxLength?: number;
}

export interface TinyPrm {
  dir: string;
  /** Token id of every vocabulary entry, special tokens included. */
  vocab: Map<string, number>;
  hidden: number;
  /** Embedding row of a token id (zeros for unlisted tokens). */
  embedding(id: number): number[];
}

/** A default: "thanks"/"great" push towards `good`, "redo"/"wrong" towards `bad`. */
export const DEFAULT_TINY_PRM: TinyPrmSpec = {
  words: ['thanks', 'great', 'perfect', 'redo', 'wrong', 'again', 'the', 'user', 'assistant'],
  // Large enough that a few such words still decide a whole turn of mostly [UNK] (zero) tokens.
  embeddings: {
    thanks: [8, 0],
    great: [6, 1],
    perfect: [5, 0],
    redo: [0, 8],
    wrong: [2, 6],
    again: [0, 4],
    '[CLS]': [0.5, 0.5],
  },
  weight: [
    [-1, 1.5],
    [1.25, -1],
  ],
  bias: [0.1, -0.1],
  labels: ['bad', 'good'],
};

function tokenizerJson(vocab: Map<string, number>): Record<string, unknown> {
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: TINY_PRM_SPECIAL_TOKENS.map((content, id) => ({
      id,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: {
      type: 'BertNormalizer',
      clean_text: true,
      handle_chinese_chars: true,
      strip_accents: null,
      lowercase: true,
    },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: { type: 'BertProcessing', sep: ['[SEP]', 3], cls: ['[CLS]', 2] },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: {
      type: 'WordPiece',
      unk_token: '[UNK]',
      continuing_subword_prefix: '##',
      max_input_chars_per_word: 100,
      vocab: Object.fromEntries(vocab),
    },
  };
}

export function writeTinyPrm(dir: string, spec: TinyPrmSpec = DEFAULT_TINY_PRM): TinyPrm {
  const vocab = new Map<string, number>();
  for (const t of [...TINY_PRM_SPECIAL_TOKENS, ...spec.words]) vocab.set(t, vocab.size);
  const hidden = spec.weight.length;
  const labels = spec.labels.length;
  if (spec.bias.length !== labels || spec.weight.some((row) => row.length !== labels)) {
    throw new RangeError(`weight must be [${hidden}][${labels}] and bias [${labels}]`);
  }
  const table = new Float32Array(vocab.size * hidden);
  for (const [token, row] of Object.entries(spec.embeddings)) {
    const id = vocab.get(token);
    if (id === undefined || row.length !== hidden) throw new RangeError(`bad embedding for ${token}`);
    table.set(row, id * hidden);
  }
  const withMask = spec.attentionMask ?? true;
  const nodes: OnnxNode[] = [
    makeNode('Gather', ['embedding', 'input_ids'], ['embedded'], 'embed', [attr.int('axis', 0)]),
  ];
  if (withMask) {
    nodes.push(
      makeNode('Cast', ['attention_mask'], ['mask_f'], 'mask_cast', [attr.int('to', DataType.FLOAT)]),
      makeNode('Unsqueeze', ['mask_f', 'axis_last'], ['mask_3d'], 'mask_unsqueeze'),
      makeNode('Mul', ['embedded', 'mask_3d'], ['masked'], 'mask_mul'),
      makeNode('ReduceSum', ['masked', 'axis_seq'], ['summed'], 'pool_sum', [attr.int('keepdims', 0)]),
      makeNode('ReduceSum', ['mask_3d', 'axis_seq'], ['count'], 'pool_count', [attr.int('keepdims', 0)]),
      makeNode('Div', ['summed', 'count'], ['pooled'], 'pool_div'),
    );
  } else {
    nodes.push(
      makeNode('ReduceMean', ['embedded'], ['pooled'], 'pool_mean', [
        attr.ints('axes', [1]),
        attr.int('keepdims', 0),
      ]),
    );
  }
  nodes.push(
    makeNode('MatMul', ['pooled', 'classifier.weight'], ['projected'], 'classifier_matmul'),
    makeNode('Add', ['projected', 'classifier.bias'], ['logits'], 'classifier_add'),
  );
  const ids = valueInfo('input_ids', DataType.INT64, ['batch_size', 'sequence_length']);
  const model = encodeModel({
    ir_version: ONNX_IR_VERSION,
    opset_import: [{ domain: '', version: ONNX_OPSET }],
    producer_name: 'clawray-test-prm',
    graph: {
      name: 'tiny_sequence_classifier',
      node: nodes,
      initializer: [
        floatTensor('embedding', [vocab.size, hidden], table),
        floatTensor('classifier.weight', [hidden, labels], Float32Array.from(spec.weight.flat())),
        floatTensor('classifier.bias', [labels], Float32Array.from(spec.bias)),
        ...(withMask ? [int64Tensor('axis_last', [1], [2]), int64Tensor('axis_seq', [1], [1])] : []),
      ],
      input: withMask
        ? [ids, valueInfo('attention_mask', DataType.INT64, ['batch_size', 'sequence_length'])]
        : [ids],
      output: [valueInfo('logits', DataType.FLOAT, ['batch_size', labels])],
    },
  });
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, PRM_MODEL_FILE), model);
  writeFileSync(join(dir, TOKENIZER_FILE), JSON.stringify(tokenizerJson(vocab)));
  writeFileSync(
    join(dir, TOKENIZER_CONFIG_FILE),
    JSON.stringify({ model_max_length: spec.maxLength ?? 64, pad_token: '[PAD]', unk_token: '[UNK]' }),
  );
  writeFileSync(
    join(dir, PRM_CONFIG_FILE),
    JSON.stringify({
      architectures: ['TinyForSequenceClassification'],
      id2label: Object.fromEntries(spec.labels.map((l, i) => [String(i), l])),
      label2id: Object.fromEntries(spec.labels.map((l, i) => [l, i])),
      hidden_size: hidden,
      vocab_size: vocab.size,
    }),
  );
  return {
    dir,
    vocab,
    hidden,
    embedding: (id) => Array.from(table.subarray(id * hidden, (id + 1) * hidden)),
  };
}
