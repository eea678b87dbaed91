/**
 * Cancellation reaching the rollout engine, and engine errors keeping their meaning at the
 * OpenAI edge when the engine is a remote actor: a cancelled generate stops decoding and frees
 * its slot; an HTTP client that disconnects stops its generation on a local engine and on a
 * remote one; EngineBusyError from a remote engine is a 429, a prompt too long for its context
 * a 400.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initRandomModel } from '../actors/models/model-init.js';
import { createOpenAiServer } from '../actors/rollout/openai-server.js';
import { ContextLengthError, EngineBusyError } from '../actors/rollout/rollout-engine.js';
import type { RolloutEngine } from '../actors/rollout/rollout-engine-actor.js';
import { RolloutModel } from '../actors/rollout/rollout-model.js';
import { ActorError, CallCancelledError, errorOfClass, isRetryable } from '../common/errors.js';
import { ChatCodec } from '../jobs/rl/chat-codec.js';
import { EnginePool } from '../jobs/rl/engine-pool.js';
import { RemoteChatModel } from '../jobs/rl/remote-chat-model.js';
import type { ActorHandle, Cluster } from '../runtime/index.js';
import { eventually, TestCluster } from './helpers/processes.js';

/**
 * The personal track's model: the RL job's own RemoteChatModel over an engine pool of one
 * remote engine, with templating here; the request's signal becomes the call's signal.
 */
function remoteModel(modelDir: string, engine: ActorHandle<RolloutEngine>): RemoteChatModel {
  const pool = new EnginePool([engine], {
    publish: async () => {
      throw new Error('these tests publish no weights');
    },
  });
  return new RemoteChatModel('tiny', new ChatCodec(modelDir), pool);
}

async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  return `127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

/** A chat request the engine turns into a long greedy generation. */
const LONG_CHAT = {
  messages: [{ role: 'user', content: 'count forever' }],
  temperature: 0,
  max_tokens: 1000,
};

/** Sends a chat request with node:http so the test can drop the connection mid-request. */
function openRequest(address: string, body: object): http.ClientRequest {
  const [host, port] = address.split(':');
  const req = http.request({
    host,
    port: Number(port),
    path: '/v1/chat/completions',
    method: 'POST',
    headers: { 'content-type': 'application/json' },
  });
  req.on('error', () => {}); // destroyed on purpose
  req.end(JSON.stringify(body));
  return req;
}

describe('cancellation and error types of rollout engines', () => {
  const tc = new TestCluster();
  const root = mkdtempSync(join(tmpdir(), 'clawray-engine-cancel-'));
  const modelDir = join(root, 'tiny');
  let cluster: Cluster;
  let local: RolloutModel;
  let engine: ActorHandle<RolloutEngine>;
  let busy: ActorHandle<RolloutEngine>;
  const servers: FastifyInstance[] = [];
  let localAddress: string;
  let remoteAddress: string;
  let busyAddress: string;
  let longPrompt: number[];

  beforeAll(async () => {
    initRandomModel({ preset: 'tiny', outDir: modelDir, seed: 11 });
    await tc.startHead();
    await tc.startWorker({ cpus: 4, poolSize: 2 });
    cluster = await tc.connect();
    [local, engine, busy] = await Promise.all([
      RolloutModel.load({ modelDir, maxBatchSize: 4 }),
      cluster.createActor<RolloutEngine>({
        module: 'clawray/rollout',
        className: 'RolloutEngine',
        args: [{ modelDir, maxBatchSize: 4 }],
      }),
      // A queue of 0: every request is turned away with EngineBusyError.
      cluster.createActor<RolloutEngine>({
        module: 'clawray/rollout',
        className: 'RolloutEngine',
        args: [{ modelDir, maxQueue: 0 }],
      }),
    ]);
    await Promise.all([engine.remote.ready(), busy.remote.ready()]);
    longPrompt = local.encodeChat([{ role: 'user', content: 'count forever' }]);
    for (const model of [local, remoteModel(modelDir, engine), remoteModel(modelDir, busy)]) {
      servers.push(createOpenAiServer({ model }));
    }
    [localAddress, remoteAddress, busyAddress] = await Promise.all(servers.map(listen));
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
    await local?.close();
    await tc.teardown();
    rmSync(root, { recursive: true, force: true });
  });

  /** Waits until the remote engine decodes something (its batch holds a sequence). */
  const untilRemoteDecodes = () =>
    eventually(async () => (await engine.remote.stats()).batchSize > 0, 20_000, 5);
  const remoteIdle = () =>
    eventually(async () => {
      const s = await engine.remote.stats();
      return s.batchSize === 0 && s.queueDepth === 0 ? s : undefined;
    }, 20_000);

  it('runs the long greedy generation to its full length when nobody cancels it', async () => {
    // What makes the cancellation tests below meaningful: uncancelled, this request uses
    // every token it may.
    const result = await engine.remote.generate({
      promptTokenIds: longPrompt,
      maxTokens: 1000,
      temperature: 0,
    });
    expect(result.finishReason).toBe('length');
    expect(result.tokenIds).toHaveLength(1000);
  });

  it('stops a remote generation whose call is cancelled, and frees its slot', async () => {
    const before = await engine.remote.stats();
    const controller = new AbortController();
    const pending = engine
      .options({ signal: controller.signal })
      .remote.generate({ promptTokenIds: longPrompt, maxTokens: 1000, temperature: 0 })
      .catch((e: unknown) => e);
    await untilRemoteDecodes();
    controller.abort();
    expect(await pending).toBeInstanceOf(CallCancelledError);
    const after = await remoteIdle();
    expect(after.abortedRequests).toBe(before.abortedRequests + 1);
    expect(after.tokensGenerated - before.tokensGenerated).toBeLessThan(1000);
    // The engine serves the next request as before.
    const next = await engine.remote.generate({ promptTokenIds: [1, 2, 3], maxTokens: 4 });
    expect(next.tokenIds).toHaveLength(4);
  });

  it.each([false, true])(
    'stops the remote generation when the HTTP client disconnects (stream %s)',
    async (stream) => {
      const before = await engine.remote.stats();
      const req = openRequest(remoteAddress, { model: 'tiny', ...LONG_CHAT, stream });
      await untilRemoteDecodes();
      req.destroy();
      const after = await remoteIdle();
      expect(after.abortedRequests).toBe(before.abortedRequests + 1);
      expect(after.tokensGenerated - before.tokensGenerated).toBeLessThan(LONG_CHAT.max_tokens);
    },
  );

  it.each([false, true])(
    'stops the local generation when the HTTP client disconnects (stream %s)',
    async (stream) => {
      const aborted = local.engine.abortedRequests;
      const tokens = local.engine.tokensGenerated;
      const req = openRequest(localAddress, { model: 'tiny', ...LONG_CHAT, stream });
      await eventually(() => local.engine.batchSize > 0, 20_000, 2);
      req.destroy();
      await eventually(() => local.engine.batchSize === 0 && local.engine.queueDepth === 0, 20_000, 5);
      expect(local.engine.abortedRequests).toBe(aborted + 1);
      expect(local.engine.tokensGenerated - tokens).toBeLessThan(LONG_CHAT.max_tokens);
    },
  );

  it('answers 429 with retry-after for EngineBusyError from a remote engine', async () => {
    const err = await busy.remote.generate({ promptTokenIds: [1, 2], maxTokens: 2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ActorError);
    expect(errorOfClass(err, EngineBusyError)).toBeInstanceOf(EngineBusyError);
    expect(isRetryable(err)).toBe(true);
    const res = await fetch(`http://${busyAddress}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('1');
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('rate_limit_exceeded');
    expect(body.error.message).toMatch(/queue is full/);
  });

  it('answers 400 context_length_exceeded for a prompt too long for a remote engine', async () => {
    const res = await fetch(`http://${remoteAddress}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'x '.repeat(1500) }] }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; type: string } };
    expect(body.error).toMatchObject({ code: 'context_length_exceeded', type: 'invalid_request_error' });
  });

  it('brings back ContextLengthError from a remote chat with its fields', async () => {
    const err = await engine.remote
      .chat({ messages: [{ role: 'user', content: 'x '.repeat(1500) }], maxTokens: 8 })
      .catch((e: unknown) => e);
    const cause = errorOfClass(err, ContextLengthError);
    expect(cause).toBeInstanceOf(ContextLengthError);
    expect(cause?.fields).toMatchObject({ maxContext: 1024 });
    expect(isRetryable(err)).toBe(false);
  });
});
