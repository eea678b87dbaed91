/**
 * Which runner a rollout model gets (runner.ts): the providers are tried in order — the one
 * named, or for 'auto' CUDA, then WebGPU, then the CPU where this process holds a GPU
 * (execution-provider.ts) — and the first whose session starts serves. On WebGPU the fast path
 * is the device runner (device-runner.ts: the GQA graph with its KV cache in device memory,
 * stepped on a thread of its own); it is taken whenever the model allows the GQA graph and the
 * weights are clawray's (a model.onnx exported elsewhere is served as it is, on a host cache),
 * unless a host graph ('slots', 'standard') was asked for by name. Every provider passed over is
 * kept with onnxruntime's reason, so the log can say what was chosen and why.
 */
import { ConfigError } from '../../common/errors.js';
import { type ExecutionProvider, providerAttempts } from '../models/execution-provider.js';
import type { DecoderAttention } from '../models/onnx-graph.js';
import { DeviceRunner } from './device-runner.js';
import {
  type DecoderLoadOptions,
  type GraphWithData,
  type KvLayout,
  OnnxDecoder,
  ortReason,
} from './onnx-decoder.js';
import type { Runner } from './runner.js';
import { runnerFor } from './runners.js';

/** Where a choice keeps the batch's KV cache. */
export type CacheLocation = 'host' | 'device';

export interface RunnerChoiceOptions {
  provider: ExecutionProvider | 'auto';
  layout: KvLayout;
  /** The graph asked for by name, if any. */
  attention?: DecoderAttention;
  /** The graph when none is asked for and the cache stays on the host. */
  defaultAttention: DecoderAttention;
  /** Why the model cannot take the GQA graph (undefined: it can). */
  gqaUnsupported?: string;
  /** clawray's export of the weights for a graph kind; undefined: a foreign model.onnx (`file`). */
  graphFor?: (attention: DecoderAttention) => GraphWithData;
  file?: string;
  load: Omit<DecoderLoadOptions, 'provider'>;
  prefillChunkTokens: number;
  maxBatchSize: number;
}

export interface RunnerChoice {
  runner: Runner;
  provider: ExecutionProvider;
  cache: CacheLocation;
  /** The graph that serves ('foreign' for a model.onnx served as it is). */
  attention: DecoderAttention | 'foreign';
  /** Providers tried before it, with the reason each could not serve. */
  passedOver: { provider: ExecutionProvider; reason: string }[];
}

/** The plan for one provider: the graph and where its cache lives. */
function planFor(
  ep: ExecutionProvider,
  o: RunnerChoiceOptions,
): { attention: DecoderAttention | 'foreign'; cache: CacheLocation } {
  if (!o.graphFor) return { attention: 'foreign', cache: 'host' };
  const device = ep === 'webgpu' && o.gqaUnsupported === undefined && (o.attention ?? 'gqa') === 'gqa';
  if (device) return { attention: 'gqa', cache: 'device' };
  return { attention: o.attention ?? o.defaultAttention, cache: 'host' };
}

/** Opens the runner of one plan on one provider. */
export async function openPlanned(
  ep: ExecutionProvider,
  plan: { attention: DecoderAttention | 'foreign'; cache: CacheLocation },
  o: RunnerChoiceOptions,
): Promise<Runner> {
  if (plan.cache === 'device') {
    const g = o.graphFor!('gqa');
    return DeviceRunner.load({
      ...g,
      layout: o.layout,
      provider: ep,
      prefillChunkTokens: o.prefillChunkTokens,
    });
  }
  const model = plan.attention === 'foreign' ? o.file! : o.graphFor!(plan.attention);
  const decoder = await OnnxDecoder.load(model, o.layout, { ...o.load, provider: ep });
  return runnerFor(decoder, { prefillChunkTokens: o.prefillChunkTokens, maxBatchSize: o.maxBatchSize });
}

export async function chooseRunner(o: RunnerChoiceOptions): Promise<RunnerChoice> {
  const passedOver: RunnerChoice['passedOver'] = [];
  let last: unknown;
  for (const ep of providerAttempts(o.provider)) {
    const plan = planFor(ep, o);
    try {
      const runner = await openPlanned(ep, plan, o);
      return { runner, provider: ep, ...plan, passedOver };
    } catch (err) {
      last = err;
      // A provider asked for by name wraps onnxruntime's reason: keep the reason alone.
      passedOver.push({ provider: ep, reason: ortReason((err as Error).cause ?? err) });
    }
  }
  if (o.provider !== 'auto' && o.provider !== 'cpu') {
    // Asked for by name: say which provider could not start and why (no adapter, no library).
    throw new ConfigError(
      `execution provider '${o.provider}' could not start a session here: ${ortReason(last)}`,
      { cause: last, fields: { provider: o.provider } },
    );
  }
  throw last;
}

/** One line for the log and `model inspect`: what serves, and why the others did not. */
export function describeChoice(
  c: Pick<RunnerChoice, 'provider' | 'cache' | 'attention' | 'passedOver'>,
): string {
  const where = c.cache === 'device' ? 'KV cache in device memory' : 'KV cache in host memory';
  const passed = c.passedOver.map((p) => `${p.provider} did not start (${p.reason})`).join('; ');
  return `${c.provider} (${c.attention} graph, ${where})${passed ? `; ${passed}` : ''}`;
}
