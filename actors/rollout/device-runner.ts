/**
 * The rollout engine's runner for a GPU provider (runner.ts): the decoder and the batch's KV
 * cache live on the device, in a worker thread of their own (device-worker.ts,
 * device-decoder.ts); this side mirrors the rows' lengths, so the engine's questions (rows,
 * cache bytes) are answered without a round trip, and only tokens go out and only the logits
 * sampling needs come back. `session.run` never holds the engine's event loop.
 *
 * Step timing is kept apart: the milliseconds inside onnxruntime's runs (`deviceMs`: kernels,
 * and onnxruntime's dispatch of them) and the rest of each call as the engine saw it
 * (`hostMs`: the thread hop, feeds, reading the logits back).
 */
import { Worker } from 'node:worker_threads';
import { ClawrayError, fromErrorInfo, registerErrorClass } from '../../common/errors.js';
import { distEntry } from '../../common/package-root.js';
import type { ExecutionProvider } from '../models/execution-provider.js';
import type { DeviceEnvelope, DeviceReply, DeviceRequest, DeviceResult } from './device-protocol.js';
import { kvBytesPerToken } from './memory-budget.js';
import type { KvLayout } from './onnx-decoder.js';
import type { Runner, StepTimes } from './runner.js';

/** The device runner's thread died, or could not start its session. */
export class DeviceRunnerError extends ClawrayError {}
registerErrorClass(DeviceRunnerError);

export interface DeviceRunnerOptions {
  /** The GQA decoder graph and its external weights. */
  graph: Uint8Array;
  data: Uint8Array;
  layout: KvLayout;
  provider: ExecutionProvider;
  /** Tokens per prefill and scoring step. */
  prefillChunkTokens: number;
}

type ResultOf<Op extends DeviceResult['op']> = Extract<DeviceResult, { op: Op }>;

export class DeviceRunner implements Runner {
  readonly kind = 'gqa/device';
  readonly cacheLocation = 'device';
  readonly batchedPrefill = true;
  readonly stepTimes: StepTimes = { steps: 0, deviceMs: 0, hostMs: 0 };
  private readonly pending = new Map<number, { resolve(r: DeviceResult): void; reject(e: Error): void }>();
  private nextId = 1;
  private lens: number[] = [];
  /** Why the thread is gone, once it is. */
  private dead?: Error;

  private constructor(
    private readonly worker: Worker,
    readonly layout: KvLayout,
    readonly provider: ExecutionProvider,
  ) {
    worker.on('message', (reply: DeviceReply) => {
      const p = this.pending.get(reply.id);
      if (!p) return;
      this.pending.delete(reply.id);
      if ('error' in reply) p.reject(fromErrorInfo(reply.error));
      else p.resolve(reply.result);
    });
    const fail = (err: Error) => {
      this.dead ??= new DeviceRunnerError(`the device runner's thread ended: ${err.message}`, { cause: err });
      for (const p of this.pending.values()) p.reject(this.dead);
      this.pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`exit code ${code}`)));
  }

  /** Starts the thread and opens the session on it; rejects with onnxruntime's reason. */
  static async load(o: DeviceRunnerOptions): Promise<DeviceRunner> {
    const worker = new Worker(distEntry('actors/rollout/device-worker'));
    const runner = new DeviceRunner(worker, o.layout, o.provider);
    try {
      await runner.request({
        op: 'load',
        graph: o.graph,
        data: o.data,
        layout: o.layout,
        provider: o.provider,
        chunkTokens: o.prefillChunkTokens,
      });
    } catch (err) {
      await worker.terminate();
      throw err;
    }
    return runner;
  }

  get rows(): number {
    return this.lens.length;
  }

  /** The cache on the device: every row padded to the longest. */
  get cacheBytes(): number {
    if (this.lens.length === 0) return 0;
    return this.lens.length * Math.max(...this.lens) * kvBytesPerToken({ ...this.layout, heads: 0 });
  }

  /** `_reserveSlots` is not needed here: the device cache grows with its longest row. */
  async admit(prompts: readonly (readonly number[])[], _reserveSlots?: number): Promise<Float32Array> {
    const started = performance.now();
    const r = await this.request({ op: 'admit', prompts: prompts.map((p) => [...p]) });
    this.lens.push(...prompts.map((p) => p.length));
    this.account(started, r.timing.runMs);
    return r.logits;
  }

  async decode(tokens: readonly number[]): Promise<Float32Array> {
    const started = performance.now();
    const r = await this.request({ op: 'decode', tokens: [...tokens] });
    for (let b = 0; b < this.lens.length; b++) this.lens[b] += 1;
    this.account(started, r.timing.runMs);
    return r.logits;
  }

  async drop(rows: readonly number[]): Promise<number[]> {
    const { order } = await this.request({ op: 'drop', rows: [...rows] });
    this.lens = order.map((i) => this.lens[i]);
    return order;
  }

  async clear(): Promise<void> {
    await this.request({ op: 'clear' });
    this.lens = [];
  }

  /** The cache is cut to the longest row whenever rows leave: nothing more to give back. */
  async fit(): Promise<void> {}

  async score(
    tokenIds: readonly number[],
    from: number,
    visit: (position: number, logits: Float32Array) => void,
  ): Promise<void> {
    const { vocab } = this.layout;
    await this.request({ op: 'scoreStart', tokenIds: [...tokenIds], from });
    for (let done = false; !done; ) {
      const part = await this.request({ op: 'scoreNext' });
      const count = part.logits.length / vocab;
      for (let i = 0; i < count; i++) {
        const p = part.first + i;
        if (p >= from) visit(p, part.logits.subarray(i * vocab, (i + 1) * vocab));
      }
      done = part.done;
    }
  }

  async release(): Promise<void> {
    if (!this.dead) await this.request({ op: 'release' }).catch(() => {});
    this.lens = [];
    await this.worker.terminate();
  }

  private account(started: number, runMs: number): void {
    const total = performance.now() - started;
    this.stepTimes.steps++;
    this.stepTimes.deviceMs += runMs;
    this.stepTimes.hostMs += Math.max(0, total - runMs);
  }

  private request<R extends DeviceRequest>(request: R): Promise<ResultOf<ResultOpOf<R['op']>>> {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (r: DeviceResult) => void, reject });
      this.worker.postMessage({ id, request } satisfies DeviceEnvelope);
    });
  }
}

/** The result a request's op gets (scoring's two ops answer with a `score` part). */
type ResultOpOf<Op extends DeviceRequest['op']> = Op extends 'scoreStart' | 'scoreNext'
  ? 'score'
  : Extract<Op, DeviceResult['op']>;
