/**
 * Two small ONNX graphs that move a device-resident KV cache without it leaving the device: the
 * cache lives in the execution provider's memory (GPU buffers the decoder session returned), and
 * JavaScript cannot touch it, so joining and leaving rows is done by a second session on the same
 * provider, whose inputs are those buffers and whose outputs stay on the device too.
 *
 *   join   a.{t}, b.{t}, slots → out.{t} = Concat(PadTo(a.{t}, slots), PadTo(b.{t}, slots), axis 0)
 *   keep   kv.{t}, rows, slots → out.{t} = Slice(Gather(kv.{t}, rows, axis 0), 0, slots, axis 2)
 *
 * for every cache tensor t (per layer, key then value), each [rows, kvHeads, slots, headDim] with
 * rows RIGHT-padded (a row's live slots come first, as GroupQueryAttention keeps them): `join`
 * appends new rows after the batch's (each padded on the right to the common slot count),
 * `keep` selects surviving rows in a given order and trims the slots to the longest survivor.
 * One session run moves every layer's tensors at once. Only default-domain operators of opset
 * 17; the slot arithmetic (Shape, Gather, Sub, Concat on int64) runs where onnxruntime puts
 * shape computations, on the host.
 */
import { ONNX_IR_VERSION, ONNX_OPSET } from '../models/onnx-graph.js';
import {
  attr,
  DataType,
  encodeModel,
  int64Tensor,
  makeNode,
  type OnnxNode,
  valueInfo,
} from '../models/onnx-proto.js';

export type KvOp = 'join' | 'keep';

/** The cache tensor names of `tensors` tensors (layers × 2), as the ops' graphs name them. */
function tensorShape(rows: string, slots: string, kvHeads: number, headDim: number) {
  return [rows, kvHeads, slots, headDim];
}

/**
 * The graph of `op` over `tensors` cache tensors of kvHeads × headDim. Inputs: `join`: a.{t},
 * b.{t}, slots (int64 [1]); `keep`: kv.{t}, rows (int64 [n]), slots (int64 [1]). Outputs:
 * out.{t}.
 */
export function kvOpsGraph(op: KvOp, tensors: number, kvHeads: number, headDim: number): Uint8Array {
  const nodes: OnnxNode[] = [];
  const inputs = [];
  const outputs = [];
  const initializer = [
    int64Tensor('zeros6', [6], [0, 0, 0, 0, 0, 0]),
    int64Tensor('zero1', [1], [0]),
    int64Tensor('slot_axis', [1], [2]),
  ];
  const padTo = (x: string, t: number, tag: string): string => {
    // pads = [0,0,0,0, 0,0,slots − dim2(x),0]: nothing before anything, room after the slots.
    nodes.push(makeNode('Shape', [x], [`${tag}.shape.${t}`], `${tag}.shape.${t}`));
    nodes.push(
      makeNode('Gather', [`${tag}.shape.${t}`, 'slot_axis'], [`${tag}.len.${t}`], `${tag}.len.${t}`, [
        attr.int('axis', 0),
      ]),
    );
    nodes.push(makeNode('Sub', ['slots', `${tag}.len.${t}`], [`${tag}.grow.${t}`], `${tag}.grow.${t}`));
    nodes.push(
      makeNode('Concat', ['zeros6', `${tag}.grow.${t}`, 'zero1'], [`${tag}.pads.${t}`], `${tag}.pads.${t}`, [
        attr.int('axis', 0),
      ]),
    );
    nodes.push(makeNode('Pad', [x, `${tag}.pads.${t}`], [`${tag}.padded.${t}`], `${tag}.pad.${t}`));
    return `${tag}.padded.${t}`;
  };
  const shape = (rows: string, slots: string) => tensorShape(rows, slots, kvHeads, headDim);
  if (op === 'join') {
    for (let t = 0; t < tensors; t++) {
      inputs.push(valueInfo(`a.${t}`, DataType.FLOAT, shape('rows_a', 'slots_a')));
      inputs.push(valueInfo(`b.${t}`, DataType.FLOAT, shape('rows_b', 'slots_b')));
      const a = padTo(`a.${t}`, t, 'a');
      const b = padTo(`b.${t}`, t, 'b');
      nodes.push(makeNode('Concat', [a, b], [`out.${t}`], `join.${t}`, [attr.int('axis', 0)]));
      outputs.push(valueInfo(`out.${t}`, DataType.FLOAT, shape('rows', 'slots')));
    }
  } else {
    initializer.push(int64Tensor('slot_start', [1], [0]));
    inputs.push(valueInfo('rows', DataType.INT64, ['kept']));
    for (let t = 0; t < tensors; t++) {
      inputs.push(valueInfo(`kv.${t}`, DataType.FLOAT, shape('rows_in', 'slots_in')));
      nodes.push(
        makeNode('Gather', [`kv.${t}`, 'rows'], [`kept.${t}`], `gather.${t}`, [attr.int('axis', 0)]),
      );
      nodes.push(
        makeNode('Slice', [`kept.${t}`, 'slot_start', 'slots', 'slot_axis'], [`out.${t}`], `trim.${t}`),
      );
      outputs.push(valueInfo(`out.${t}`, DataType.FLOAT, shape('kept', 'slots')));
    }
  }
  inputs.push(valueInfo('slots', DataType.INT64, [1]));
  return encodeModel({
    ir_version: ONNX_IR_VERSION,
    opset_import: [{ domain: '', version: ONNX_OPSET }],
    producer_name: 'clawray',
    graph: { name: `kv-${op}`, node: nodes, initializer, input: inputs, output: outputs },
  });
}
