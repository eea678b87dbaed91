/**
 * The rollout engine's weights: one buffer laid out as the decoder graph's ONNX external data
 * (`model.onnx_data`), the graph bytes that reference it (encoded once, never re-exported),
 * and the layout that says where each Hugging Face tensor lives. A weight update writes only
 * the bytes of the tensors it names, in the storage dtype, and the engine opens a new session
 * on the same graph bytes and this buffer (onnxruntime copies initializers at session
 * creation, so the session still serving is never affected by a write).
 *
 * LoRA updates (delta sync) carry only adapters `<module>.lora_A|B.weight` plus their scale;
 * the merge W = base + scale·B·A happens here, from a copy of the base kept for each adapted
 * tensor the first time an adapter reaches it, so successive (cumulative) adapters never
 * compound. A full update of a tensor replaces its base.
 */

import { closeSync, fstatSync, openSync } from 'node:fs';
import { setImmediate } from 'node:timers/promises';
import { readAt } from '../../common/chunked-io.js';
import { ConfigError } from '../../common/errors.js';
import { parseLoraName } from '../models/lora-merge.js';
import { dims as dimsOf, type ModelConfig } from '../models/model-config.js';
import { checkWeights } from '../models/model-dir.js';
import {
  allocateWeightData,
  buildDecoderGraph,
  entriesBySource,
  readWeight,
  sourceShape,
  writeEntry,
} from '../models/onnx-export.js';
import {
  DECODER_ATTENTIONS,
  type DecoderAttention,
  type DecoderExportOptions,
  type WeightEntry,
  type WeightLayout,
} from '../models/onnx-graph.js';
import { encodeModel, type OnnxModel, type OnnxTensor } from '../models/onnx-proto.js';
import { SafetensorsReader, type SourcedTensor, weightFiles } from '../models/safetensors.js';
import type { WeightMap } from '../models/weight-names.js';
import { sharedMergePool } from './lora-merge-pool.js';

/** Stands in for tensor data while only names and shapes are checked. */
const EMPTY = new Float32Array(0);

/** What a weight update changed. */
export interface AppliedUpdate {
  /** Hugging Face tensors written (merged LoRA targets included). */
  tensors: string[];
  /** Bytes of the storage buffer rewritten. */
  bytesWritten: number;
}

export class DecoderWeights {
  private readonly bySource: Map<string, WeightEntry[]>;
  /** Base values (float32, [out, in]) of tensors a LoRA adapter has been merged into. */
  private readonly loraBase = new Map<string, Float32Array>();
  /** Where LoRA merges run (worker threads, off the engine's event loop). */
  private readonly merger = sharedMergePool();

  constructor(
    /** The graph, every weight external in `model.onnx_data`. */
    readonly graph: Uint8Array,
    /** The external data: what onnxruntime gets as `model.onnx_data`. */
    readonly data: Uint8Array,
    readonly layout: WeightLayout,
  ) {
    this.bySource = entriesBySource(layout);
  }

  /**
   * Builds the graph for `config` and fills the weights one tensor at a time from `read` (so a
   * checkpoint is never held whole as float32 beside the buffer).
   */
  static fromTensors(
    config: ModelConfig,
    read: (name: string) => Float32Array,
    opts: DecoderExportOptions = {},
  ): DecoderWeights {
    const { model, layout } = buildDecoderGraph(config, opts);
    const data = allocateWeightData(layout);
    const weights = new DecoderWeights(encodeModel(model), data, layout);
    for (const [name, entries] of weights.bySource) {
      const values = read(name);
      for (const e of entries) writeEntry(layout.dtype, data, e, values);
    }
    return weights;
  }

  /**
   * Builds the graph for a model directory's config and streams its safetensors (single file
   * or sharded, any dtype) into the buffer tensor by tensor: a bf16 checkpoint is never held
   * whole as float32, and the directory's tensors are checked against the config first (every
   * problem listed, as `loadModelDir` does).
   */
  static fromModelDir(dir: string, config: ModelConfig, opts: DecoderExportOptions = {}): DecoderWeights {
    const { files } = weightFiles(dir);
    const readers = files.map((f) => SafetensorsReader.open(f));
    try {
      const byName = new Map<string, SafetensorsReader>();
      const infos = new Map<string, SourcedTensor>();
      for (const r of readers) {
        for (const name of r.names) {
          byName.set(name, r);
          const info = r.info(name)!;
          infos.set(name, { dtype: info.dtype, shape: [...info.shape], data: EMPTY, file: r.file });
        }
      }
      checkWeights(infos, dimsOf(config), dir);
      return DecoderWeights.fromTensors(config, (name) => byName.get(name)!.read(name).data, opts);
    } finally {
      for (const r of readers) r.close();
    }
  }

  /**
   * Takes the weights of a model.onnx that clawray exported (weights inline or in external
   * files beside it): the graph is rebuilt from `config` and every initializer is copied by
   * name, so a model written by `clawray model export-onnx` (or an older inline export) takes
   * in-place updates. Returns null when the file's initializers do not map onto the family's
   * graph by name, shape and type (a model exported by another tool).
   */
  static fromOnnx(
    file: OnnxModel,
    config: ModelConfig,
    externalDir: string,
    opts: DecoderExportOptions = {},
  ): DecoderWeights | null {
    const meta = new Map((file.metadata_props ?? []).map((p) => [p.key, p.value]));
    if (meta.get('clawray.kind') !== 'decoder-kv') return null;
    const dtype = (meta.get('clawray.weight_dtype') ?? 'float32') as DecoderExportOptions['dtype'];
    const maxPositions = Number(meta.get('max_positions') ?? config.max_position_embeddings);
    // The file's graph kind unless the caller asks for the other one: the weights carry over by
    // name; the RoPE tables (named per kind) are then computed afresh from the config.
    const named = meta.get('clawray.attention') as DecoderAttention | undefined;
    const fileAttention: DecoderAttention = named && DECODER_ATTENTIONS.includes(named) ? named : 'standard';
    const attention = opts.attention ?? fileAttention;
    const { model, layout } = buildDecoderGraph(config, { ...opts, dtype, maxPositions, attention });
    const have = new Map(file.graph.initializer.map((t) => [t.name ?? '', t]));
    const wanted = [
      ...layout.entries.map((e) => ({ name: e.name, offset: e.offset, bytes: e.bytes })),
      ...(attention === fileAttention
        ? layout.tables.map((t) => ({ name: t.name, offset: t.offset, bytes: t.data.byteLength }))
        : []),
    ];
    const wantedInits = new Map(model.graph.initializer.map((t) => [t.name ?? '', t]));
    for (const w of wanted) {
      const t = have.get(w.name);
      if (!t || t.data_type !== wantedInits.get(w.name)?.data_type) return null;
      if ((t.dims ?? []).join(',') !== (wantedInits.get(w.name)?.dims ?? []).join(',')) return null;
    }
    const data = allocateWeightData(layout);
    const files = new ExternalFiles(externalDir);
    try {
      for (const w of wanted)
        copyInitializer(have.get(w.name)!, data.subarray(w.offset, w.offset + w.bytes), files);
    } finally {
      files.close();
    }
    return new DecoderWeights(encodeModel(model), data, layout);
  }

  /** Hugging Face names of the weights. */
  get names(): string[] {
    return [...this.bySource.keys()];
  }

  /** One weight back as float32 in its Hugging Face layout. */
  read(name: string): Float32Array {
    return readWeight(this.layout, this.data, name, this.bySource);
  }

  /** Every weight as float32 by Hugging Face name (a copy: for tests and benches). */
  readAll(): WeightMap {
    return new Map(this.names.map((n) => [n, this.read(n)]));
  }

  /**
   * Writes an update: Hugging Face tensors replace those weights; `<module>.lora_A|B.weight`
   * pairs (with `loraScale`) set `<module>.weight` = base + scale·B·A. Everything is checked
   * before the first byte is written, so a refused update changes nothing. It yields to the
   * event loop after each tensor, and LoRA merges run on worker threads: a full 0.6B update
   * converts 2.4 GB and a LoRA one merges 440 M weights, seconds during which the engine keeps
   * decoding on its current session.
   */
  async apply(tensors: ReadonlyMap<string, Float32Array>, loraScale?: number): Promise<AppliedUpdate> {
    const full = new Map<string, Float32Array>();
    const adapters = new Map<string, { A?: Float32Array; B?: Float32Array }>();
    for (const [name, values] of tensors) {
      const lora = parseLoraName(name);
      if (lora) {
        const a = adapters.get(lora.target) ?? {};
        a[lora.part] = values;
        adapters.set(lora.target, a);
        continue;
      }
      const entries = this.bySource.get(name);
      if (!entries)
        throw new ConfigError(`updateWeights: unknown tensor ${name}`, { fields: { tensor: name } });
      const shape = sourceShape(entries[0]);
      const size = shape.reduce((x, y) => x * y, 1);
      if (values.length !== size) {
        throw new ConfigError(
          `updateWeights: ${name} has ${values.length} values, expected ${size} ([${shape.join(', ')}])`,
          { fields: { tensor: name } },
        );
      }
      full.set(name, values);
    }
    const merges: {
      target: string;
      A: Float32Array;
      B: Float32Array;
      out: number;
      in: number;
      rank: number;
    }[] = [];
    if (adapters.size > 0) {
      if (loraScale === undefined || !Number.isFinite(loraScale)) {
        throw new ConfigError('updateWeights: LoRA adapters arrived without their scale (alpha / rank)', {
          fields: { option: 'loraScale' },
        });
      }
      for (const [target, { A, B }] of adapters) {
        const entries = this.bySource.get(target);
        if (entries?.[0].dims.length !== 2) {
          throw new ConfigError(
            `updateWeights: LoRA adapter targets ${target}, which is not a Linear weight of this model`,
            {
              fields: { tensor: target },
            },
          );
        }
        if (!A || !B) {
          throw new ConfigError(
            `updateWeights: LoRA adapter of ${target} lacks its lora_${A ? 'B' : 'A'} tensor`,
            {
              fields: { tensor: target },
            },
          );
        }
        if (full.has(target))
          throw new ConfigError(`updateWeights: ${target} arrived both whole and as a LoRA adapter`);
        const [out, inF] = sourceShape(entries[0]);
        const rank = A.length / inF;
        if (!Number.isInteger(rank) || rank < 1 || B.length !== out * rank) {
          throw new ConfigError(
            `updateWeights: LoRA adapter of ${target} [${out}, ${inF}] has A of ${A.length} and B of ${B.length} values; expected A [rank, ${inF}] and B [${out}, rank]`,
            { fields: { tensor: target } },
          );
        }
        merges.push({ target, A, B, out, in: inF, rank });
      }
    }
    let bytesWritten = 0;
    const write = (name: string, values: Float32Array) => {
      for (const e of this.bySource.get(name)!) {
        writeEntry(this.layout.dtype, this.data, e, values);
        bytesWritten += e.bytes;
      }
    };
    for (const [name, values] of full) {
      write(name, values);
      this.loraBase.delete(name);
      await setImmediate();
    }
    // Merged on worker threads, as many at a time as there are threads (so only that many
    // tensors are in flight); each result is written as it arrives. Every merge is awaited before
    // a failure is reported, so none writes after apply() has returned.
    const pending = [...merges];
    const lane = async () => {
      for (let m = pending.shift(); m; m = pending.shift()) {
        let base = this.loraBase.get(m.target);
        if (!base) {
          base = this.read(m.target);
          this.loraBase.set(m.target, base);
        }
        write(m.target, await this.merger.merge(base, m.A, m.B, loraScale!, m));
      }
    };
    const merged = await Promise.allSettled(Array.from({ length: this.merger.size }, lane));
    const failed = merged.find((r) => r.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    return { tensors: [...full.keys(), ...merges.map((m) => m.target)], bytesWritten };
  }

  /** Bytes held: the buffer plus LoRA base copies. */
  get bytes(): number {
    let base = 0;
    for (const b of this.loraBase.values()) base += b.byteLength;
    return this.data.byteLength + base;
  }
}

/** Dimensions the engine derives from a config (shared by loaders). */
export function kvLayoutOf(config: ModelConfig) {
  const d = dimsOf(config);
  return { layers: d.layers, kvHeads: d.kvHeads, headDim: d.headDim, vocab: d.vocab };
}

/** Open external data files of a model being read, by location. */
class ExternalFiles {
  private readonly fds = new Map<string, { fd: number; size: number }>();
  constructor(private readonly dir: string) {}

  read(location: string, offset: number, into: Uint8Array): void {
    if (location.includes('/') || location.includes('\\') || location.startsWith('.')) {
      throw new ConfigError(`external data location '${location}' is outside the model directory`);
    }
    let f = this.fds.get(location);
    if (!f) {
      const fd = openSync(`${this.dir}/${location}`, 'r');
      f = { fd, size: fstatSync(fd).size };
      this.fds.set(location, f);
    }
    if (offset + into.byteLength > f.size) {
      throw new ConfigError(
        `${this.dir}/${location}: external data ends before byte ${offset + into.byteLength}`,
      );
    }
    if (readAt(f.fd, into, offset) < into.byteLength)
      throw new ConfigError(`${this.dir}/${location}: truncated external data`);
  }

  close(): void {
    for (const f of this.fds.values()) closeSync(f.fd);
    this.fds.clear();
  }
}

function copyInitializer(t: OnnxTensor, into: Uint8Array, files: ExternalFiles): void {
  if (t.data_location === 1) {
    const ext = new Map((t.external_data ?? []).map((e) => [e.key, e.value]));
    const length = Number(ext.get('length') ?? into.byteLength);
    if (length !== into.byteLength)
      throw new ConfigError(
        `initializer ${t.name}: ${length} bytes of external data, expected ${into.byteLength}`,
      );
    files.read(ext.get('location') ?? '', Number(ext.get('offset') ?? 0), into);
    return;
  }
  if (!t.raw_data || t.raw_data.byteLength !== into.byteLength)
    throw new ConfigError(
      `initializer ${t.name}: ${t.raw_data?.byteLength ?? 0} bytes inline, expected ${into.byteLength}`,
    );
  into.set(t.raw_data);
}
