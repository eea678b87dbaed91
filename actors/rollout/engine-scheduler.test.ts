/**
 * The engine's decisions — admission under the memory budget, first come first served, grouped
 * prefills, preemption and swaps, aborts, giving cache memory back, failures — driven through
 * the real GenerationEngine and its EngineScheduler on a fake runner, in milliseconds and
 * without onnxruntime.
 *
 * The fake's logits are a one-hot whose peak is a function of everything its row holds (its
 * prompt and every token fed to it), so a member the engine mixed up with another row draws a
 * token its own history would not give: every greedy result is checked against the sequence the
 * same rule gives alone (`alone`).
 */
import { describe, expect, it } from 'vitest';
import { ContextLengthError } from './engine-errors.js';
import { batchBytes, type MemoryShape, prefillBytes } from './memory-budget.js';
import type { KvLayout } from './onnx-decoder.js';
import { type GenerateRequest, GenerationEngine, type GenerationEngineOptions } from './rollout-engine.js';
import type { Runner } from './runner.js';
import { logSoftmax } from './sampler.js';

const LAYOUT: KvLayout = { layers: 2, kvHeads: 2, headDim: 8, vocab: 64 };
/** The memory shape the engine estimates with (its default: 4 query heads per KV head). */
const SHAPE: MemoryShape = { ...LAYOUT, heads: 4 * LAYOUT.kvHeads };
const CHUNK = 512;

/** The token the fake's rule predicts after `history`; `shift` tells one runner's weights from another's. */
function nextToken(history: readonly number[], shift: number): number {
  return (history[history.length - 1] * 3 + history.length + shift) % LAYOUT.vocab;
}

/** The greedy tokens a request gets alone under the rule. */
function alone(prompt: readonly number[], maxTokens: number, shift = 0): number[] {
  const history = [...prompt];
  const out: number[] = [];
  while (out.length < maxTokens) {
    const t = nextToken(history, shift);
    out.push(t);
    history.push(t);
  }
  return out;
}

type Call =
  | { op: 'admit'; prompts: number[][]; rowsBefore: number }
  | { op: 'decode'; rows: number }
  | { op: 'drop'; rows: number[] }
  | { op: 'clear' | 'fit' | 'release' | 'score' };

/** A macrotask turn: lets timers, aborts and other requests in between runner calls. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

class FakeRunner implements Runner {
  readonly layout = LAYOUT;
  readonly provider = 'cpu' as const;
  readonly kind = 'fake';
  readonly cacheLocation = 'host';
  readonly calls: Call[] = [];
  /** Bytes the fake says it holds; tests set it to stand for memory an earlier batch left. */
  held = 0;
  /** A decode call (1-based) that throws, once. */
  failDecodeAt?: number;
  /** Every row's history: its prompt and the tokens fed to it. */
  private histories: number[][] = [];
  private decodes = 0;

  constructor(
    private readonly options: {
      shift?: number;
      /** 'last': a dropped row is replaced by the last one (as KvSlots does); 'ordered': order kept. */
      dropOrder?: 'last' | 'ordered';
      batchedPrefill?: boolean;
      /** The peak's height: 10 makes sampling all but greedy, 1 leaves it free. */
      peak?: number;
    } = {},
  ) {}

  get batchedPrefill(): boolean {
    return this.options.batchedPrefill ?? true;
  }

  get rows(): number {
    return this.histories.length;
  }

  get cacheBytes(): number {
    return this.held;
  }

  get admitted(): number[][] {
    return this.calls.flatMap((c) => (c.op === 'admit' ? c.prompts : []));
  }

  count(op: Call['op']): number {
    return this.calls.filter((c) => c.op === op).length;
  }

  /** The logits of a row holding `history`. */
  logitsOf(history: readonly number[]): Float32Array {
    return this.logits([history]);
  }

  private logits(histories: readonly (readonly number[])[]): Float32Array {
    const out = new Float32Array(histories.length * LAYOUT.vocab);
    histories.forEach((h, b) => {
      out[b * LAYOUT.vocab + nextToken(h, this.options.shift ?? 0)] = this.options.peak ?? 10;
    });
    return out;
  }

  async admit(prompts: readonly (readonly number[])[], _reserveSlots: number): Promise<Float32Array> {
    this.calls.push({ op: 'admit', prompts: prompts.map((p) => [...p]), rowsBefore: this.rows });
    await turn();
    const fresh = prompts.map((p) => [...p]);
    this.histories.push(...fresh);
    return this.logits(fresh);
  }

  async decode(tokens: readonly number[]): Promise<Float32Array> {
    this.calls.push({ op: 'decode', rows: tokens.length });
    if (tokens.length !== this.rows) throw new Error(`decode: ${tokens.length} tokens for ${this.rows} rows`);
    await turn();
    if (this.histories.length !== tokens.length) throw new Error('the rows changed during the step');
    if (++this.decodes === this.failDecodeAt) throw new Error('the device was lost');
    tokens.forEach((t, b) => {
      this.histories[b].push(t);
    });
    return this.logits(this.histories);
  }

  async drop(rows: readonly number[]): Promise<number[]> {
    this.calls.push({ op: 'drop', rows: [...rows] });
    const order = this.histories.map((_, i) => i);
    if (this.options.dropOrder === 'ordered') {
      const kept = order.filter((i) => !rows.includes(i));
      this.histories = kept.map((i) => this.histories[i]);
      return kept;
    }
    for (const i of [...rows].sort((a, b) => b - a)) {
      const last = this.histories.length - 1;
      this.histories[i] = this.histories[last];
      order[i] = order[last];
      this.histories.pop();
      order.pop();
    }
    return order;
  }

  async clear(): Promise<void> {
    this.calls.push({ op: 'clear' });
    this.histories = [];
  }

  async fit(): Promise<void> {
    this.calls.push({ op: 'fit' });
    if (this.rows === 0) this.held = 0;
  }

  async score(
    tokenIds: readonly number[],
    from: number,
    visit: (position: number, logits: Float32Array) => void,
  ): Promise<void> {
    this.calls.push({ op: 'score' });
    for (let p = from; p < tokenIds.length; p++) visit(p, this.logits([tokenIds.slice(0, p + 1)]));
  }

  async release(): Promise<void> {
    this.calls.push({ op: 'release' });
    this.histories = [];
  }
}

const engineOn = (runner: Runner, options: Partial<GenerationEngineOptions> = {}) =>
  new GenerationEngine(runner, { eosTokenIds: [], maxContext: 4096, prefillChunkTokens: CHUNK, ...options });

const prompt = (n: number, salt: number) => Array.from({ length: n }, (_, j) => (salt * 7 + j * 5 + 1) % 64);

const greedy = (promptTokenIds: number[], maxTokens: number, extra: Partial<GenerateRequest> = {}) => ({
  promptTokenIds,
  maxTokens,
  temperature: 0,
  ...extra,
});

describe.each(['last', 'ordered'] as const)(
  'the engine on a runner whose drops order rows %s',
  (dropOrder) => {
    it('keeps every member on its own row while requests join and leave', async () => {
      const runner = new FakeRunner({ dropOrder });
      const engine = engineOn(runner, { maxBatchSize: 4 });
      const requests = [3, 9, 1, 6, 4, 12, 2, 5].map((len, i) => greedy(prompt(len, i), 2 + ((i * 5) % 9)));
      const results = await Promise.all(requests.map((r) => engine.generate(r)));
      results.forEach((r, i) => {
        expect(r.tokenIds).toEqual(alone(requests[i].promptTokenIds, requests[i].maxTokens));
        expect(r.finishReason).toBe('length');
      });
      // Members left mid-batch (uneven lengths) and were replaced while others ran.
      expect(runner.count('drop')).toBeGreaterThan(2);
      expect(engine.batchSize).toBe(0);
      expect(runner.rows).toBe(0);
      await engine.close();
    });
  },
);

describe('admission', () => {
  // Room for one sequence of 60 (prompt 40 + 20) but not for two beside each other.
  const aloneBytes = Math.max(prefillBytes(SHAPE, 40, CHUNK), batchBytes(SHAPE, [60]));
  const besideBytes = batchBytes(SHAPE, [60, 60]) + prefillBytes(SHAPE, 40, CHUNK);
  const budget = Math.round((aloneBytes + besideBytes) / 2);

  it('lets a request that fits alone but not beside the batch wait, holding those behind it, then join', async () => {
    const runner = new FakeRunner();
    const engine = engineOn(runner, { memoryBudgetBytes: budget });
    const first = engine.generate(greedy(prompt(40, 1), 20));
    const big = engine.generate(greedy(prompt(40, 2), 20));
    // Small enough to fit beside the first: it still waits behind the big one (first come, first served).
    const small = greedy(prompt(2, 3), 2);
    expect(batchBytes(SHAPE, [60, 4]) + prefillBytes(SHAPE, 2, CHUNK)).toBeLessThan(budget);
    const smallDone = engine.generate(small);
    const results = await Promise.all([first, big, smallDone]);
    expect(results[0].tokenIds).toEqual(alone(prompt(40, 1), 20));
    expect(results[1].tokenIds).toEqual(alone(prompt(40, 2), 20));
    expect(results[2].tokenIds).toEqual(alone(small.promptTokenIds, 2));
    const admits = runner.calls.filter((c) => c.op === 'admit');
    // The first alone; the big one and the small one behind it once the first had left.
    expect(admits).toEqual([
      { op: 'admit', prompts: [prompt(40, 1)], rowsBefore: 0 },
      { op: 'admit', prompts: [prompt(40, 2), small.promptTokenIds], rowsBefore: 0 },
    ]);
    const firstDrop = runner.calls.findIndex((c) => c.op === 'drop');
    expect(runner.calls.indexOf(admits[1])).toBeGreaterThan(firstDrop);
    await engine.close();
  });

  it('refuses a request that cannot fit alone, naming the counts, before the runner sees it', async () => {
    const runner = new FakeRunner();
    const engine = engineOn(runner, { memoryBudgetBytes: budget });
    const err = await engine.generate(greedy(prompt(200, 1), 20)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ContextLengthError);
    const refusal = err as ContextLengthError;
    expect(refusal.message).toMatch(/200 prompt tokens \+ 20 to generate/);
    expect(refusal.message).toMatch(/memory budget is/);
    const fields = refusal.fields as { maxPromptTokens: number; memoryBudgetBytes: number };
    expect(fields).toMatchObject({ promptTokens: 200, maxTokens: 20, memoryBudgetBytes: budget });
    expect(fields.maxPromptTokens).toBeGreaterThan(0);
    expect(fields.maxPromptTokens).toBeLessThan(200);
    expect(runner.calls).toEqual([]);
    // The longest prompt it names does fit; one more token does not.
    const fits = prompt(fields.maxPromptTokens, 2);
    expect((await engine.generate(greedy(fits, 20))).tokenIds).toEqual(alone(fits, 20));
    await expect(engine.generate(greedy(prompt(fields.maxPromptTokens + 1, 2), 20))).rejects.toThrow(
      ContextLengthError,
    );
    await expect(engine.computeLogprobs(prompt(300, 1), 1)).rejects.toThrow(ContextLengthError);
    await engine.close();
  });

  it('groups short prompts into one admit call within the batch size', async () => {
    const runner = new FakeRunner();
    const engine = engineOn(runner, { maxBatchSize: 4 });
    const requests = [0, 1, 2, 3, 4, 5].map((i) => greedy(prompt(3 + i, i), 3));
    const results = await Promise.all(requests.map((r) => engine.generate(r)));
    results.forEach((r, i) => {
      expect(r.tokenIds).toEqual(alone(requests[i].promptTokenIds, 3));
    });
    const admits = runner.calls.flatMap((c) => (c.op === 'admit' ? [c.prompts.length] : []));
    // The first starts alone (the loop starts on it); three more fill the batch of four; the
    // last two wait for rows and then share one step.
    expect(admits).toEqual([1, 3, 2]);
    const rows = runner.calls.flatMap((c) => (c.op === 'decode' ? [c.rows] : []));
    expect(Math.max(...rows)).toBe(4);
    await engine.close();
  });

  it('admits one prompt a call on a runner without batched prefill', async () => {
    const runner = new FakeRunner({ batchedPrefill: false });
    const engine = engineOn(runner, { maxBatchSize: 4 });
    const requests = [0, 1, 2, 3].map((i) => greedy(prompt(3 + i, i), 3));
    await Promise.all(requests.map((r) => engine.generate(r)));
    const admits = runner.calls.flatMap((c) => (c.op === 'admit' ? [c.prompts.length] : []));
    expect(admits).toEqual([1, 1, 1, 1]);
    await engine.close();
  });

  it('asks the runner to give back kept memory when it and a prefill would pass the budget', async () => {
    const request = greedy(prompt(100, 1), 1);
    const prefill = prefillBytes(SHAPE, 100, CHUNK);
    const kept = 4 * batchBytes(SHAPE, [101]);
    const tightRunner = new FakeRunner();
    tightRunner.held = kept;
    const tight = engineOn(tightRunner, { memoryBudgetBytes: prefill + Math.floor(kept / 2) });
    expect((await tight.generate(request)).tokenIds).toEqual(alone(request.promptTokenIds, 1));
    expect(tightRunner.calls.map((c) => c.op).slice(0, 2)).toEqual(['fit', 'admit']);
    expect(tight.kvCacheBytes).toBe(0);
    // With room for both, the kept memory stays for the next batch.
    const roomy = new FakeRunner();
    roomy.held = kept;
    const engine = engineOn(roomy, { memoryBudgetBytes: prefill + 2 * kept });
    await engine.generate(request);
    expect(roomy.count('fit')).toBe(0);
    expect(engine.kvCacheBytes).toBe(kept);
    await tight.close();
    await engine.close();
  });
});

describe('weight swaps', () => {
  it("'requeue': members restart from scratch on the new runner, drawing as a fresh start does", async () => {
    const old = new FakeRunner({ peak: 1 });
    const next = new FakeRunner({ shift: 5, peak: 1 });
    const engine = engineOn(old, { swapMode: 'requeue', weightVersion: 1, reload: async () => next });
    const streamed: number[] = [];
    let swap: Promise<void> | undefined;
    const sampled = { promptTokenIds: prompt(5, 1), maxTokens: 12, temperature: 1, seed: 42 };
    const result = await engine.generate({
      ...sampled,
      onToken: (t) => {
        streamed.push(t.tokenId);
        if (streamed.length === 2) swap = engine.updateWeights(2, new Map());
      },
    });
    await swap;
    expect(result.weightVersion).toBe(2);
    expect(result.tokenIds).toHaveLength(12);
    // What an engine that only ever knew the new weights samples from the same seed.
    const fresh = engineOn(new FakeRunner({ shift: 5, peak: 1 }));
    expect(result.tokenIds).toEqual((await fresh.generate(sampled)).tokenIds);
    expect(result.logprobs).toHaveLength(12);
    // The two tokens of the first attempt were streamed, then the restart's twelve.
    expect(streamed.slice(2)).toEqual(result.tokenIds);
    expect(old.count('clear')).toBe(1);
    expect(old.count('release')).toBe(1);
    expect(next.admitted).toEqual([sampled.promptTokenIds]);
    expect(engine.weightVersion).toBe(2);
    await engine.close();
    await fresh.close();
  });

  it("'requeue' greedy: the restart generates the new weights' tokens", async () => {
    const old = new FakeRunner();
    const next = new FakeRunner({ shift: 5 });
    const engine = engineOn(old, { swapMode: 'requeue', reload: async () => next });
    let swap: Promise<void> | undefined;
    const request = greedy(prompt(4, 2), 8, {
      onToken: () => {
        swap ??= engine.updateWeights(1, new Map());
      },
    });
    const others = [3, 4].map((i) => engine.generate(greedy(prompt(i, i), 8)));
    const result = await engine.generate(request);
    await swap;
    expect(result.tokenIds).toEqual(alone(request.promptTokenIds, 8, 5));
    expect(result.weightVersion).toBe(1);
    for (const [i, other] of (await Promise.all(others)).entries()) {
      expect(other.tokenIds).toEqual(alone(prompt(3 + i, 3 + i), 8, other.weightVersion === 1 ? 5 : 0));
    }
    expect(old.count('release')).toBe(1);
    await engine.close();
  });

  it("'finish': members finish on the old runner, the queue waits, the old runner is released once", async () => {
    const old = new FakeRunner();
    const next = new FakeRunner({ shift: 5 });
    const engine = engineOn(old, { weightVersion: 1, reload: async () => next });
    let swap: Promise<void> | undefined;
    let during: Promise<{ tokenIds: number[]; weightVersion: number }> | undefined;
    const inFlight = engine.generate(
      greedy(prompt(6, 1), 10, {
        onToken: () => {
          if (swap) return;
          swap = engine.updateWeights(2, new Map());
          // Arrives while the swap waits for the batch: the batch has room, but it waits too.
          during = engine.generate(greedy(prompt(3, 2), 4));
        },
      }),
    );
    const result = await inFlight;
    await swap;
    const late = await during!;
    expect(result.weightVersion).toBe(1);
    expect(result.tokenIds).toEqual(alone(prompt(6, 1), 10));
    expect(late.weightVersion).toBe(2);
    expect(late.tokenIds).toEqual(alone(prompt(3, 2), 4, 5));
    expect(old.admitted).toEqual([prompt(6, 1)]);
    expect(next.admitted).toEqual([prompt(3, 2)]);
    expect(old.count('release')).toBe(1);
    expect(next.count('release')).toBe(0);
    expect(engine.weightVersion).toBe(2);
    await engine.close();
    expect(next.count('release')).toBe(1);
    expect(old.count('release')).toBe(1);
  });

  it('a failed load fails the swap and leaves the old runner serving', async () => {
    const old = new FakeRunner();
    const engine = engineOn(old, {
      weightVersion: 3,
      reload: async () => {
        throw new Error('no such tensor');
      },
    });
    await expect(engine.updateWeights(4, new Map())).rejects.toThrow('no such tensor');
    const after = await engine.generate(greedy(prompt(3, 1), 3));
    expect(after.weightVersion).toBe(3);
    expect(old.count('release')).toBe(0);
    await engine.close();
  });
});

describe('aborts', () => {
  it('a queued request leaves the queue without reaching the runner', async () => {
    const runner = new FakeRunner();
    const engine = engineOn(runner, { maxBatchSize: 1 });
    const running = engine.generate(greedy(prompt(3, 1), 5));
    const controller = new AbortController();
    const queued = engine.generate({ ...greedy(prompt(4, 2), 5), signal: controller.signal });
    expect(engine.queueDepth).toBe(1);
    controller.abort();
    await expect(queued).rejects.toThrow(/aborted/);
    expect(engine.queueDepth).toBe(0);
    expect((await running).tokenIds).toEqual(alone(prompt(3, 1), 5));
    expect(runner.admitted).toEqual([prompt(3, 1)]);
    expect(engine.abortedRequests).toBe(1);
    await engine.close();
  });

  it('a decoding request has its row dropped; the others go on unharmed', async () => {
    const runner = new FakeRunner();
    const engine = engineOn(runner);
    const controller = new AbortController();
    let n = 0;
    const doomed = engine.generate({
      ...greedy(prompt(5, 1), 50),
      signal: controller.signal,
      onToken: () => {
        if (++n === 3) controller.abort();
      },
    });
    const others = [2, 3, 4].map((i) => engine.generate(greedy(prompt(i, i), 12)));
    await expect(doomed).rejects.toThrow(/aborted/);
    for (const [i, other] of (await Promise.all(others)).entries())
      expect(other.tokenIds).toEqual(alone(prompt(2 + i, 2 + i), 12));
    // Its row (the first: it was admitted first) left at the step after its third token.
    const drops = runner.calls.filter((c) => c.op === 'drop');
    expect(drops[0]).toEqual({ op: 'drop', rows: [0] });
    expect(n).toBe(3);
    expect(engine.abortedRequests).toBe(1);
    await engine.close();
  });
});

describe('failures and teacher scoring', () => {
  it('a runner that throws fails every member and queued request; the engine serves on', async () => {
    const runner = new FakeRunner();
    runner.failDecodeAt = 2;
    const engine = engineOn(runner, { maxBatchSize: 2 });
    const pending = [1, 2, 3, 4].map((i) =>
      engine.generate(greedy(prompt(3, i), 6)).catch((e: unknown) => e),
    );
    const errors = await Promise.all(pending);
    for (const err of errors) expect((err as Error).message).toBe('the device was lost');
    expect(engine.queueDepth).toBe(0);
    expect(engine.batchSize).toBe(0);
    expect(runner.count('clear')).toBe(1);
    expect(runner.count('fit')).toBe(1);
    expect(runner.rows).toBe(0);
    const after = await engine.generate(greedy(prompt(4, 9), 5));
    expect(after.tokenIds).toEqual(alone(prompt(4, 9), 5));
    await engine.close();
  });

  it('scores through the runner: the logprobs sampling recorded', async () => {
    const runner = new FakeRunner({ peak: 1 });
    const engine = engineOn(runner);
    const out = await engine.generate({
      promptTokenIds: prompt(4, 1),
      maxTokens: 6,
      temperature: 0.7,
      seed: 1,
    });
    const ids = [...out.promptTokenIds, ...out.tokenIds];
    const scored = await engine.computeLogprobs(ids, 4, 0.7);
    expect(scored).toHaveLength(6);
    scored.forEach((s, k) => {
      expect(s).toBeCloseTo(out.logprobs[k], 9);
    });
    // A peak of 1 over 64 tokens: far from certain (the draws were free).
    expect(Math.max(...scored)).toBeLessThan(Math.log(0.1));
    const top = await engine.computeTopLogprobs(ids, 4, 1, 2);
    const reference = logSoftmax(runner.logitsOf(ids.slice(0, 4)), 1);
    expect(top.top.ids[0]).toBe(nextToken(ids.slice(0, 4), 0));
    expect(top.top.logprobs[0]).toBeCloseTo(reference[top.top.ids[0]], 9);
    await engine.close();
  });

  it('a closed engine releases its runner and refuses new work', async () => {
    const runner = new FakeRunner();
    const engine = engineOn(runner, { maxBatchSize: 1 });
    const running = engine.generate(greedy(prompt(3, 1), 500)).catch((e: unknown) => e);
    const queued = engine.generate(greedy(prompt(3, 2), 5)).catch((e: unknown) => e);
    await turn();
    await engine.close();
    expect(await running).toBeInstanceOf(Error);
    expect(((await queued) as Error).message).toMatch(/closed/);
    expect(runner.count('release')).toBe(1);
    await expect(engine.generate(greedy(prompt(3, 3), 5))).rejects.toThrow(/closed/);
  });
});
