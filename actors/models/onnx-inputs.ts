/**
 * Reads the graph inputs and outputs of an ONNX file (ours or one exported elsewhere) and
 * checks that a decoder follows Hugging Face optimum's contract with a key/value cache, the
 * one `onnx-export.ts` writes and the rollout engine feeds:
 *
 *   input_ids, attention_mask, position_ids (int64, [batch, ·]),
 *   past_key_values.{i}.key|value → present.{i}.key|value ([batch, kvHeads, ·, headDim]),
 *   logits ([batch, seq, vocab]).
 */
import { readFileSync } from 'node:fs';
import { ConfigError } from '../../common/errors.js';
import type { Dims } from './model-config.js';
import { dataTypeName, decodeModel, type OnnxValueInfo, valueInfoShape } from './onnx-proto.js';

export interface OnnxIoEntry {
  name: string;
  /** onnxruntime's name of the element type: 'float32', 'int64', 'float16', ... */
  elemType: string;
  /** Per dimension a fixed size, a symbolic name (dim_param) or null; null when the shape is unknown. */
  dims: (number | string | null)[] | null;
}

export interface OnnxIo {
  /** The file (or the name given for bytes); error messages start with it. */
  source: string;
  inputs: OnnxIoEntry[];
  outputs: OnnxIoEntry[];
}

function entry(v: OnnxValueInfo): OnnxIoEntry {
  return {
    name: v.name,
    elemType: dataTypeName(v.type?.tensor_type?.elem_type ?? 0),
    dims: valueInfoShape(v),
  };
}

/**
 * The graph inputs (without initializers, which IR < 4 files also list as inputs) and outputs
 * of an ONNX model given as bytes or as a file path.
 */
export function readOnnxIo(model: Uint8Array | string, source?: string): OnnxIo {
  const name = source ?? (typeof model === 'string' ? model : 'model.onnx');
  let bytes: Uint8Array;
  if (typeof model === 'string') {
    try {
      bytes = readFileSync(model);
    } catch (err) {
      throw new ConfigError(`${name}: cannot read the ONNX model (${(err as Error).message})`, {
        cause: err,
        fields: { file: name },
      });
    }
  } else {
    bytes = model;
  }
  let decoded: ReturnType<typeof decodeModel>;
  try {
    decoded = decodeModel(bytes);
  } catch (err) {
    throw new ConfigError(`${name}: not an ONNX model (${(err as Error).message})`, {
      cause: err,
      fields: { file: name },
    });
  }
  const initializers = new Set(decoded.graph.initializer.map((t) => t.name));
  const inputs = decoded.graph.input.filter((v) => !initializers.has(v.name)).map(entry);
  if (inputs.length === 0 && decoded.graph.output.length === 0) {
    throw new ConfigError(`${name}: not an ONNX model (its graph has no inputs or outputs)`, {
      fields: { file: name },
    });
  }
  return { source: name, inputs, outputs: decoded.graph.output.map(entry) };
}

/** What a decoder check needs to know of the model: its config's sizes. */
export type DecoderIoDims = Pick<Dims, 'layers' | 'kvHeads' | 'headDim' | 'vocab'>;

export interface DecoderIoInfo {
  /** Element type of the key/value cache ('float32' for our export, 'float16' for fp16 exports). */
  kvElemType: string;
  /** Element type of the logits. */
  logitsElemType: string;
}

const FLOAT_TYPES = new Set(['float32', 'float16', 'bfloat16']);
const PAST = /^past_key_values\.(\d+)\.(key|value)$/;
const PRESENT = /^present\.(\d+)\.(key|value)$/;

/**
 * Checks that `io` is a decoder with optimum's names and key/value shapes for a model of
 * `dims`. Throws a ConfigError naming the file and every problem, e.g.
 * `model.onnx: input past_key_values.3.key missing; expected 4 layers`.
 */
export function checkDecoderIo(io: OnnxIo, dims: DecoderIoDims): DecoderIoInfo {
  const problems: string[] = [];
  let layerProblem = false;
  const inputs = new Map(io.inputs.map((e) => [e.name, e]));
  const outputs = new Map(io.outputs.map((e) => [e.name, e]));

  const checkTokens = (name: string) => {
    const e = inputs.get(name);
    if (e === undefined) return problems.push(`input ${name} missing`);
    if (e.elemType !== 'int64') problems.push(`input ${name} is ${e.elemType}, expected int64`);
    if (e.dims !== null && e.dims.length !== 2)
      problems.push(`input ${name} has rank ${e.dims.length}, expected 2`);
  };
  checkTokens('input_ids');
  checkTokens('attention_mask');
  checkTokens('position_ids');

  const kvTypes = new Set<string>();
  const checkKv = (kind: 'input' | 'output', e: OnnxIoEntry | undefined, name: string) => {
    if (e === undefined) {
      layerProblem = true;
      return problems.push(`${kind} ${name} missing`);
    }
    kvTypes.add(e.elemType);
    if (!FLOAT_TYPES.has(e.elemType))
      problems.push(`${kind} ${name} is ${e.elemType}, expected a float type`);
    if (e.dims === null) return;
    if (e.dims.length !== 4) return problems.push(`${kind} ${name} has rank ${e.dims.length}, expected 4`);
    const [, heads, , headDim] = e.dims;
    if (typeof heads === 'number' && heads !== dims.kvHeads) {
      problems.push(`${kind} ${name} has ${heads} key/value heads (dim 1), expected ${dims.kvHeads}`);
    }
    if (typeof headDim === 'number' && headDim !== dims.headDim) {
      problems.push(`${kind} ${name} has head dim ${headDim} (dim 3), expected ${dims.headDim}`);
    }
  };
  for (let i = 0; i < dims.layers; i++) {
    for (const part of ['key', 'value']) {
      checkKv('input', inputs.get(`past_key_values.${i}.${part}`), `past_key_values.${i}.${part}`);
    }
  }
  for (let i = 0; i < dims.layers; i++) {
    for (const part of ['key', 'value']) {
      checkKv('output', outputs.get(`present.${i}.${part}`), `present.${i}.${part}`);
    }
  }

  const known = new Set(['input_ids', 'attention_mask', 'position_ids']);
  for (const e of io.inputs) {
    if (known.has(e.name)) continue;
    const past = PAST.exec(e.name);
    if (past && Number(past[1]) < dims.layers) continue;
    if (past) layerProblem = true;
    problems.push(`input ${e.name} unexpected`);
  }
  for (const e of io.outputs) {
    const present = PRESENT.exec(e.name);
    if (present && Number(present[1]) >= dims.layers) {
      layerProblem = true;
      problems.push(`output ${e.name} unexpected`);
    }
  }

  const logits = outputs.get('logits');
  if (logits === undefined) {
    problems.push('output logits missing');
  } else {
    if (!FLOAT_TYPES.has(logits.elemType))
      problems.push(`output logits is ${logits.elemType}, expected a float type`);
    if (logits.dims !== null && logits.dims.length !== 3) {
      problems.push(`output logits has rank ${logits.dims.length}, expected 3`);
    } else if (logits.dims !== null && typeof logits.dims[2] === 'number' && logits.dims[2] !== dims.vocab) {
      problems.push(`output logits has vocabulary ${logits.dims[2]} (dim 2), expected ${dims.vocab}`);
    }
  }
  if (kvTypes.size > 1)
    problems.push(`key/value tensors mix element types (${[...kvTypes].sort().join(', ')})`);

  if (problems.length > 0) {
    if (layerProblem) problems.push(`expected ${dims.layers} layers`);
    throw new ConfigError(`${io.source}: ${problems.join('; ')}`, { fields: { file: io.source } });
  }
  return { kvElemType: [...kvTypes][0] ?? 'float32', logitsElemType: logits!.elemType };
}
