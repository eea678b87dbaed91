/**
 * Builds the personal track's base policy once, reproducibly: a random model of a preset,
 * fine-tuned (clawray's own SFT step, `PolicyTrainer` with the masked cross-entropy the warm
 * start uses) on the chats `baseChats` generates from the simulated user's request templates,
 * so the policy RL starts from already answers in words and follows an OPD hint. Nothing is
 * downloaded; the same options write the same weights on the same machine and backend.
 *
 * The directory it writes is an ordinary model directory (config, safetensors, tokenizer, chat
 * template) plus `personal-base.json`, the recipe and the loss curve: a job points
 * `spec.model.path` at it. It is written under a temporary name and renamed, so a half-built
 * base is never taken for a model.
 */
import { existsSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  type BaseChat,
  type BaseChatsOptions,
  baseChats,
  withHint,
} from '../../actors/envs/personal/base-chats.js';
import { makePreference } from '../../actors/envs/personal/preferences.js';
import { requestPool, requestsOf } from '../../actors/envs/personal/requests.js';
import type { ChatMessage as TemplateMessage } from '../../actors/models/chat-template.js';
import { dims, type PresetName } from '../../actors/models/model-config.js';
import { CONFIG_FILE, loadModelDir } from '../../actors/models/model-dir.js';
import { initRandomModel } from '../../actors/models/model-init.js';
import { SAFETENSORS_FILE, writeSafetensors } from '../../actors/models/safetensors.js';
import { selectBackend } from '../../actors/models/tfjs-backend.js';
import { TfjsDecoder } from '../../actors/models/tfjs-decoder.js';
import { weightSpecs } from '../../actors/models/weight-names.js';
import { RolloutModel } from '../../actors/rollout/rollout-model.js';
import { PolicyTrainer, type TrainSample } from '../../actors/trainer/policy-trainer.js';
import { ConfigError } from '../../common/errors.js';
import { ChatCodec } from './chat-codec.js';
import { shuffled } from './shuffle.js';

/** The recipe file written beside the weights. */
export const PERSONAL_BASE_FILE = 'personal-base.json';

export interface PersonalBaseOptions {
  outDir: string;
  /** Model preset (default tiny). */
  preset?: PresetName;
  /** Seeds the random model, the chats and their order (default 0). */
  seed?: number;
  /** SFT steps (default 600). */
  steps?: number;
  /** Samples per step (default 16). */
  batchSize?: number;
  /** AdamW learning rate (default 3e-3). */
  lr?: number;
  /** The chats (default: `baseChats` with this seed). */
  chats?: Omit<BaseChatsOptions, 'seed'>;
  /** Replace a model already in outDir (default: refuse). */
  overwrite?: boolean;
  /** Progress lines. */
  log?: (line: string) => void;
  /** Log the loss every N steps (default 50). */
  logEvery?: number;
}

export interface PersonalBaseResult {
  dir: string;
  steps: number;
  samples: number;
  /** Mean SFT loss of the first and the last `logEvery` steps. */
  lossStart: number;
  lossEnd: number;
  seconds: number;
  backend: string;
}

function positive(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new ConfigError(`personal base ${name} must be a positive integer, got ${value}`, {
      fields: { param: name },
    });
  }
  return value;
}

/** One SFT sample per chat: the rendered prompt, then the reply up to its end-of-turn token. */
export function baseSamples(codec: ChatCodec, chats: readonly BaseChat[]): TrainSample[] {
  const out: TrainSample[] = [];
  for (const c of chats) {
    const messages = c.messages as TemplateMessage[];
    const prompt = codec.encodeChat(messages);
    const response = codec.encodeReply(messages, undefined, { role: 'assistant', content: c.reply });
    if (prompt.length + response.length <= codec.maxContext) {
      out.push({ tokenIds: [...prompt, ...response], responseStart: prompt.length });
    }
  }
  return out;
}

/** Fine-tunes a random preset on the base chats and writes the model directory (see the header). */
export async function buildPersonalBase(o: PersonalBaseOptions): Promise<PersonalBaseResult> {
  const started = performance.now();
  const dir = resolve(o.outDir);
  const preset = o.preset ?? 'tiny';
  const seed = o.seed ?? 0;
  const steps = positive(o.steps ?? 600, 'steps');
  const batchSize = positive(o.batchSize ?? 16, 'batchSize');
  const lr = o.lr ?? 3e-3;
  if (!(lr > 0))
    throw new ConfigError(`personal base lr must be > 0, got ${lr}`, { fields: { param: 'lr' } });
  const logEvery = positive(o.logEvery ?? 50, 'logEvery');
  const log = o.log ?? (() => {});
  if (existsSync(join(dir, CONFIG_FILE)) && !o.overwrite) {
    throw new ConfigError(`${dir} already holds a model; pass overwrite (--force) to rebuild it`, {
      fields: { file: dir },
    });
  }
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  initRandomModel({ preset, outDir: tmp, seed });
  const codec = new ChatCodec(tmp);
  const chats = baseChats({ ...o.chats, seed });
  const samples = shuffled(baseSamples(codec, chats), seed);
  if (samples.length === 0) throw new ConfigError('no base chat fits the model context');
  const backend = await selectBackend();
  const model = loadModelDir(tmp);
  // wasm has no gradient for gather: embed with a one-hot product there (as the trainer shard does).
  const decoder = new TfjsDecoder(model.config, model.weights, {
    embedding: backend === 'wasm' ? 'onehot' : 'gather',
  });
  const trainer = new PolicyTrainer(decoder, { method: 'sft', optimizer: { lr }, seed });
  log(
    `personal base: ${preset} (seed ${seed}) on ${samples.length} chats (${chats.filter((c) => c.hint).length} hinted), ${steps} steps of ${batchSize}, lr ${lr}, ${backend}`,
  );
  const losses: number[] = [];
  const size = Math.min(batchSize, samples.length);
  for (let s = 0; s < steps; s++) {
    const batch = Array.from({ length: size }, (_, k) => samples[(s * size + k) % samples.length]);
    const m = await trainer.step(batch);
    losses.push(m.loss);
    if ((s + 1) % logEvery === 0 || s + 1 === steps) {
      const recent = losses.slice(-logEvery);
      log(
        `personal base step ${s + 1}/${steps}: sft loss ${(recent.reduce((a, b) => a + b, 0) / recent.length).toFixed(4)}`,
      );
    }
  }
  const weights = decoder.readWeights();
  decoder.dispose();
  writeSafetensors(
    join(tmp, SAFETENSORS_FILE),
    new Map(
      [...weightSpecs(dims(model.config))].map((w) => [
        w.name,
        { shape: w.shape, data: weights.get(w.name)! },
      ]),
    ),
    { dtype: 'F32', metadata: { format: 'pt' } },
  );
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const result: PersonalBaseResult = {
    dir,
    steps,
    samples: samples.length,
    lossStart: mean(losses.slice(0, logEvery)),
    lossEnd: mean(losses.slice(-logEvery)),
    seconds: (performance.now() - started) / 1000,
    backend,
  };
  writeFileSync(
    join(tmp, PERSONAL_BASE_FILE),
    `${JSON.stringify({ preset, seed, steps, batchSize, lr, chats: o.chats ?? {}, samples: result.samples, lossStart: result.lossStart, lossEnd: result.lossEnd, seconds: result.seconds, backend }, null, 2)}\n`,
  );
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return result;
}

export interface BaseReply {
  request: string;
  hint: string | null;
  reply: string;
}

/**
 * Greedy replies of a model directory on the first `count` held-out requests, asked plainly and
 * with a name hint (`hintName`): what the base says, through the rollout engine that serves it.
 */
export async function sampleBaseReplies(
  modelDir: string,
  o: { count?: number; hintName?: string; maxTokens?: number } = {},
): Promise<BaseReply[]> {
  const engine = await RolloutModel.load({ modelDir });
  try {
    const hint = makePreference({ kind: 'name', name: o.hintName ?? 'Sam' }).hint;
    const out: BaseReply[] = [];
    for (const r of requestsOf('heldout', requestPool()).slice(0, o.count ?? 4)) {
      for (const h of [null, hint]) {
        const messages = [{ role: 'user' as const, content: r.text }];
        const prompt = engine.encodeChat(h ? (withHint(messages, h) as TemplateMessage[]) : messages);
        const g = await engine.generate({
          promptTokenIds: prompt,
          maxTokens: o.maxTokens ?? 64,
          temperature: 0,
        });
        out.push({ request: r.text, hint: h, reply: g.text ?? engine.decode(g.tokenIds) });
      }
    }
    return out;
  } finally {
    await engine.close();
  }
}
