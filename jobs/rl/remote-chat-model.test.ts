import { describe, expect, it } from 'vitest';
import type { GenerateRequest, GenerateResult } from '../../actors/rollout/rollout-engine.js';
import type { RolloutEngine } from '../../actors/rollout/rollout-engine-actor.js';
import type { Sampled } from '../../actors/rollout/sampler.js';
import { ActorDiedError } from '../../common/errors.js';
import type { ActorHandle, CallOptions } from '../../runtime/index.js';
import type { ChatCodec } from './chat-codec.js';
import { EnginePool } from './engine-pool.js';
import { RemoteChatModel } from './remote-chat-model.js';

const tick = (ms = 0) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * A rollout engine actor as RemoteChatModel reaches it: `options({ signal })` then a plain
 * `generate` call or a `generateStream` stream of token batches. It streams `tokens` one batch
 * each, can wait at a gate before a batch, and can die before or after a number of batches.
 */
class FakeEngine {
  readonly calls: { method: string; signal?: AbortSignal }[] = [];
  dieAfter?: number;
  gateAt?: number;
  private openGate?: () => void;
  version = 0;

  constructor(
    readonly name: string,
    private readonly tokens: number[] = [5, 6, 7],
  ) {}

  options(options: CallOptions) {
    return {
      call: async (method: string, request: Omit<GenerateRequest, 'onToken' | 'signal'>) => {
        this.calls.push({ method, ...(options.signal ? { signal: options.signal } : {}) });
        if (this.dieAfter !== undefined) {
          this.dead = true;
          throw new ActorDiedError(`${this.name} is dead`);
        }
        return this.result(request);
      },
      stream: (method: string, request: Omit<GenerateRequest, 'onToken' | 'signal'>) => {
        this.calls.push({ method, ...(options.signal ? { signal: options.signal } : {}) });
        return this.batches(request);
      },
    };
  }

  /** Set once it died: it stays out of the pool (its healer's `ready` fails). */
  dead = false;

  async call(method: string): Promise<unknown> {
    if (method === 'ready' && this.dead) throw new ActorDiedError(`${this.name} is dead`);
    if (method === 'ready') return { weightVersion: this.version };
    throw new Error(`unexpected call ${method}`);
  }

  open(): void {
    this.openGate?.();
  }

  private async *batches(
    request: Omit<GenerateRequest, 'onToken' | 'signal'>,
  ): AsyncGenerator<Sampled[], GenerateResult, undefined> {
    for (const [i, tokenId] of this.tokens.entries()) {
      if (this.dieAfter === i) {
        this.dead = true;
        throw new ActorDiedError(`${this.name} died after ${i} tokens`);
      }
      if (this.gateAt === i) await new Promise<void>((resolve) => (this.openGate = resolve));
      await tick();
      yield [{ tokenId, logprob: -0.5 }];
    }
    return this.result(request);
  }

  private result(request: Omit<GenerateRequest, 'onToken' | 'signal'>): GenerateResult {
    return {
      promptTokenIds: request.promptTokenIds,
      sampling: {
        temperature: request.temperature ?? 1,
        topP: request.topP ?? 1,
        topK: request.topK ?? 0,
        seed: request.seed ?? 0,
      },
      tokenIds: this.tokens,
      logprobs: this.tokens.map(() => -0.5),
      finishReason: 'stop',
      weightVersion: this.version,
    };
  }
}

function model(engines: FakeEngine[]) {
  const lines: string[] = [];
  const pool = new EnginePool(engines, {
    publish: async () => {},
    healIntervalMs: 5,
    log: (l) => lines.push(l),
  });
  const remote = new RemoteChatModel(
    'm',
    {} as ChatCodec,
    pool as unknown as EnginePool<ActorHandle<RolloutEngine>>,
  );
  return { remote, pool, lines };
}

describe('RemoteChatModel', () => {
  it('streams tokens to onToken as the engine yields them, with the request signal on the call', async () => {
    const engine = new FakeEngine('a');
    engine.gateAt = 1;
    const { remote } = model([engine]);
    const seen: number[] = [];
    const controller = new AbortController();
    const pending = remote.generate({
      promptTokenIds: [1, 2],
      signal: controller.signal,
      onToken: (t) => seen.push(t.tokenId),
    });
    // The generation waits at its gate after one token: that token is out already.
    while (seen.length === 0) await tick(1);
    expect(seen).toEqual([5]);
    engine.open();
    const result = await pending;
    expect(seen).toEqual([5, 6, 7]);
    expect(result.tokenIds).toEqual([5, 6, 7]);
    expect(engine.calls).toEqual([{ method: 'generateStream', signal: controller.signal }]);
  });

  it('makes a plain call when nobody takes tokens as they come', async () => {
    const engine = new FakeEngine('a');
    const { remote } = model([engine]);
    expect((await remote.generate({ promptTokenIds: [1] })).tokenIds).toEqual([5, 6, 7]);
    expect(engine.calls.map((c) => c.method)).toEqual(['generate']);
  });

  it('starts over on another engine when the first dies before any token was handed on', async () => {
    const [a, b] = [new FakeEngine('a', [1, 2]), new FakeEngine('b', [3, 4])];
    a.dieAfter = 0;
    const { remote, pool, lines } = model([a, b]);
    const seen: number[] = [];
    const result = await remote.generate({ promptTokenIds: [9], onToken: (t) => seen.push(t.tokenId) });
    expect(seen).toEqual([3, 4]);
    expect(result.tokenIds).toEqual([3, 4]);
    expect(pool.healthyCount).toBe(1);
    expect(lines.join('\n')).toMatch(/rollout engine 0 left the pool/);
  });

  it('fails the request (no second engine) when its engine dies after tokens went out, and takes the engine out', async () => {
    const [a, b] = [new FakeEngine('a', [1, 2, 3]), new FakeEngine('b')];
    a.dieAfter = 2;
    const { remote, pool } = model([a, b]);
    const seen: number[] = [];
    await expect(
      remote.generate({ promptTokenIds: [9], onToken: (t) => seen.push(t.tokenId) }),
    ).rejects.toBeInstanceOf(ActorDiedError);
    expect(seen).toEqual([1, 2]);
    expect(b.calls).toEqual([]);
    expect(pool.healthyCount).toBe(1);
    // The next request goes to the engine still in the pool.
    expect((await remote.generate({ promptTokenIds: [9], onToken: () => {} })).tokenIds).toEqual([5, 6, 7]);
  });

  it('notes the weight version a streamed reply came from', async () => {
    const engine = new FakeEngine('a');
    engine.version = 4;
    const { remote } = model([engine]);
    await remote.generate({ promptTokenIds: [1], onToken: () => {} });
    expect(remote.weightVersion).toBe(4);
  });
});
