/**
 * The messages between a DeviceRunner (the engine's thread) and its worker thread
 * (device-worker.ts), which owns the onnxruntime session and the KV cache in device memory.
 * One request at a time per id; every request gets exactly one reply. Arrays of logits travel
 * transferred (moved, not copied).
 */
import type { ErrorInfoShape } from '../../common/errors.js';
import type { ExecutionProvider } from '../models/execution-provider.js';
import type { KvLayout } from './onnx-decoder.js';

export type DeviceRequest =
  | {
      op: 'load';
      /** The GQA decoder graph and its external weights (model.onnx_data). */
      graph: Uint8Array;
      data: Uint8Array;
      layout: KvLayout;
      provider: ExecutionProvider;
      /** Tokens per prefill and scoring step. */
      chunkTokens: number;
    }
  | { op: 'admit'; prompts: number[][] }
  | { op: 'decode'; tokens: number[] }
  | { op: 'drop'; rows: number[] }
  | { op: 'clear' }
  | { op: 'scoreStart'; tokenIds: number[]; from: number }
  | { op: 'scoreNext' }
  | { op: 'release' };

export interface DeviceEnvelope {
  id: number;
  request: DeviceRequest;
}

/** Where a step's time went: inside onnxruntime's runs, and the whole request in the worker. */
export interface DeviceTiming {
  runMs: number;
  workerMs: number;
}

export type DeviceResult =
  | { op: 'load'; provider: ExecutionProvider }
  | { op: 'admit'; logits: Float32Array; timing: DeviceTiming }
  | { op: 'decode'; logits: Float32Array; timing: DeviceTiming }
  | { op: 'drop'; order: number[] }
  | { op: 'clear' }
  | { op: 'score'; first: number; logits: Float32Array; done: boolean }
  | { op: 'release' };

export type DeviceReply = { id: number; result: DeviceResult } | { id: number; error: ErrorInfoShape };
