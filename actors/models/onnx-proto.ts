/**
 * ONNX protobuf messages, written and read with protobufjs from the schema subset in
 * `proto/onnx/onnx.proto` (loaded at run time, field names kept as in onnx.proto). The plain
 * object types below mirror the messages; helpers build the few shapes of them an exporter
 * needs (nodes, attributes, tensors, value infos).
 */
import { endianness } from 'node:os';
import { join } from 'node:path';
import protobuf from 'protobufjs';
import { packageRoot } from '../../common/package-root.js';

/** TensorProto.DataType values clawray uses or reports. */
export const DataType = {
  UNDEFINED: 0,
  FLOAT: 1,
  UINT8: 2,
  INT8: 3,
  UINT16: 4,
  INT16: 5,
  INT32: 6,
  INT64: 7,
  STRING: 8,
  BOOL: 9,
  FLOAT16: 10,
  DOUBLE: 11,
  UINT32: 12,
  UINT64: 13,
  BFLOAT16: 16,
} as const;

/** Element type names as onnxruntime's `Tensor.type` spells them. */
const DATA_TYPE_NAMES: Record<number, string> = {
  0: 'undefined',
  1: 'float32',
  2: 'uint8',
  3: 'int8',
  4: 'uint16',
  5: 'int16',
  6: 'int32',
  7: 'int64',
  8: 'string',
  9: 'bool',
  10: 'float16',
  11: 'float64',
  12: 'uint32',
  13: 'uint64',
  14: 'complex64',
  15: 'complex128',
  16: 'bfloat16',
};

export function dataTypeName(t: number): string {
  return DATA_TYPE_NAMES[t] ?? `type${t}`;
}

/** AttributeProto.AttributeType values. */
export const AttributeType = { FLOAT: 1, INT: 2, STRING: 3, TENSOR: 4, FLOATS: 6, INTS: 7 } as const;

export interface OnnxStringEntry {
  key: string;
  value: string;
}

export interface OnnxTensor {
  name?: string;
  dims?: number[];
  data_type?: number;
  float_data?: number[];
  int32_data?: number[];
  int64_data?: number[];
  raw_data?: Uint8Array;
  external_data?: OnnxStringEntry[];
  /** 0 = DEFAULT (in the message), 1 = EXTERNAL. */
  data_location?: number;
  doc_string?: string;
}

export interface OnnxAttribute {
  name: string;
  type: number;
  f?: number;
  i?: number;
  s?: Uint8Array;
  t?: OnnxTensor;
  floats?: number[];
  ints?: number[];
}

export interface OnnxNode {
  name?: string;
  op_type: string;
  domain?: string;
  input: string[];
  output: string[];
  attribute?: OnnxAttribute[];
  doc_string?: string;
}

/** One dimension: a fixed size, a symbolic name, or neither (unknown). */
export interface OnnxDimension {
  dim_value?: number;
  dim_param?: string;
}

export interface OnnxTypeProto {
  tensor_type?: { elem_type?: number; shape?: { dim?: OnnxDimension[] } };
}

export interface OnnxValueInfo {
  name: string;
  type?: OnnxTypeProto;
  doc_string?: string;
}

export interface OnnxGraph {
  name?: string;
  node: OnnxNode[];
  initializer: OnnxTensor[];
  input: OnnxValueInfo[];
  output: OnnxValueInfo[];
  value_info?: OnnxValueInfo[];
  doc_string?: string;
}

export interface OnnxOpsetId {
  domain?: string;
  version: number;
}

export interface OnnxModel {
  ir_version: number;
  opset_import: OnnxOpsetId[];
  producer_name?: string;
  producer_version?: string;
  domain?: string;
  model_version?: number;
  doc_string?: string;
  graph: OnnxGraph;
  metadata_props?: OnnxStringEntry[];
}

let modelType: protobuf.Type | undefined;

/** The protobufjs type of `onnx.ModelProto`, loaded once from proto/onnx/onnx.proto. */
export function modelProtoType(): protobuf.Type {
  if (!modelType) {
    const root = new protobuf.Root();
    root.loadSync(join(packageRoot(), 'proto', 'onnx', 'onnx.proto'), { keepCase: true });
    modelType = root.lookupType('onnx.ModelProto');
  }
  return modelType;
}

/** Serializes a model to the ONNX wire format. */
export function encodeModel(model: OnnxModel): Uint8Array {
  return modelProtoType()
    .encode(model as unknown as Record<string, unknown>)
    .finish();
}

/**
 * Parses an ONNX file's bytes (a model written by any exporter). int64 fields come back as
 * numbers, enums as numbers, bytes fields (raw_data) as views into `bytes`; fields outside the
 * schema subset are dropped.
 */
export function decodeModel(bytes: Uint8Array): OnnxModel {
  const type = modelProtoType();
  const message = type.decode(bytes);
  const model = type.toObject(message, { longs: Number, enums: Number, arrays: true }) as OnnxModel;
  model.graph ??= { node: [], initializer: [], input: [], output: [] };
  return model;
}

// ---- builders ---------------------------------------------------------------------------

export const attr = {
  int: (name: string, i: number): OnnxAttribute => ({ name, type: AttributeType.INT, i }),
  float: (name: string, f: number): OnnxAttribute => ({ name, type: AttributeType.FLOAT, f }),
  ints: (name: string, ints: number[]): OnnxAttribute => ({ name, type: AttributeType.INTS, ints }),
  floats: (name: string, floats: number[]): OnnxAttribute => ({ name, type: AttributeType.FLOATS, floats }),
  string: (name: string, s: string): OnnxAttribute => ({
    name,
    type: AttributeType.STRING,
    s: new TextEncoder().encode(s),
  }),
  tensor: (name: string, t: OnnxTensor): OnnxAttribute => ({ name, type: AttributeType.TENSOR, t }),
};

export function makeNode(
  opType: string,
  inputs: string[],
  outputs: string[],
  name: string,
  attributes: OnnxAttribute[] = [],
): OnnxNode {
  const node: OnnxNode = { name, op_type: opType, input: inputs, output: outputs };
  if (attributes.length > 0) node.attribute = attributes;
  return node;
}

function littleEndianBytes(view: ArrayBufferView): Uint8Array {
  if (endianness() !== 'LE') throw new Error('ONNX raw_data needs a little-endian host');
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}

function checkSize(name: string, dims: number[], length: number): void {
  const expected = dims.reduce((a, b) => a * b, 1);
  if (expected !== length) {
    throw new Error(`tensor ${name}: ${length} values do not fill shape [${dims.join(', ')}]`);
  }
}

/** A float32 tensor stored as raw little-endian bytes (a view of `data`, not a copy). */
export function floatTensor(name: string, dims: number[], data: Float32Array): OnnxTensor {
  checkSize(name, dims, data.length);
  return { name, dims, data_type: DataType.FLOAT, raw_data: littleEndianBytes(data) };
}

/** An int64 tensor (small constants: shapes, axes, indices). */
export function int64Tensor(name: string, dims: number[], values: number[]): OnnxTensor {
  checkSize(name, dims, values.length);
  return { name, dims, data_type: DataType.INT64, int64_data: values };
}

/**
 * A graph input or output. `shape` entries are a fixed size, a symbolic dimension name
 * (`dim_param`) or null (unknown).
 */
export function valueInfo(name: string, elemType: number, shape: (number | string | null)[]): OnnxValueInfo {
  const dim = shape.map((d): OnnxDimension => {
    if (typeof d === 'number') return { dim_value: d };
    if (typeof d === 'string') return { dim_param: d };
    return {};
  });
  return { name, type: { tensor_type: { elem_type: elemType, shape: { dim } } } };
}

/** Shape of a value info as [size | dim_param | null], or null when it has no shape. */
export function valueInfoShape(v: OnnxValueInfo): (number | string | null)[] | null {
  const shape = v.type?.tensor_type?.shape;
  if (!shape) return null;
  return (shape.dim ?? []).map((d) => {
    if (d.dim_value !== undefined && d.dim_value !== null) return Number(d.dim_value);
    if (d.dim_param) return d.dim_param;
    return null;
  });
}
