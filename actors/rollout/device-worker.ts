/**
 * The thread a DeviceRunner's decoder lives on (device-runner.ts): onnxruntime-node runs a
 * session synchronously, so a step on the engine's own thread would stall its HTTP server,
 * metrics and heartbeats for the step's whole duration. Here the DeviceDecoder (its session and
 * the KV cache in device memory) answers one request at a time, in the order they come.
 */
import { parentPort } from 'node:worker_threads';
import { ConfigError, toErrorInfo } from '../../common/errors.js';
import { DeviceDecoder } from './device-decoder.js';
import type { DeviceEnvelope, DeviceReply, DeviceRequest, DeviceResult } from './device-protocol.js';

const port = parentPort;
if (!port) throw new Error('device-worker runs as a worker thread');

let decoder: DeviceDecoder | undefined;
let chain: Promise<void> = Promise.resolve();

function loaded(): DeviceDecoder {
  if (!decoder) throw new ConfigError('the device decoder is not loaded');
  return decoder;
}

async function handle(request: DeviceRequest): Promise<DeviceResult> {
  const started = performance.now();
  const timing = (runMs: number) => ({ runMs, workerMs: performance.now() - started });
  switch (request.op) {
    case 'load': {
      decoder = await DeviceDecoder.load(request);
      return { op: 'load', provider: decoder.provider };
    }
    case 'admit': {
      const out = await loaded().admit(request.prompts);
      return { op: 'admit', logits: out.logits, timing: timing(out.runMs) };
    }
    case 'decode': {
      const out = await loaded().decode(request.tokens);
      return { op: 'decode', logits: out.logits, timing: timing(out.runMs) };
    }
    case 'drop':
      return { op: 'drop', order: await loaded().drop(request.rows) };
    case 'clear':
      await loaded().clear();
      return { op: 'clear' };
    case 'scoreStart':
      loaded().scoreStart(request.tokenIds, request.from);
      return { op: 'score', first: 0, logits: new Float32Array(0), done: false };
    case 'scoreNext':
      return { op: 'score', ...(await loaded().scoreNext()) };
    case 'release':
      await decoder?.release();
      decoder = undefined;
      return { op: 'release' };
  }
}

port.on('message', ({ id, request }: DeviceEnvelope) => {
  chain = chain.then(async () => {
    let reply: DeviceReply;
    try {
      reply = { id, result: await handle(request) };
    } catch (err) {
      port.postMessage({ id, error: toErrorInfo(err) } satisfies DeviceReply);
      return;
    }
    const logits = 'logits' in reply.result ? reply.result.logits : undefined;
    // Logits are moved, not copied (a batch of 16 on a 152k vocabulary is 9.7 MB a step).
    port.postMessage(reply, logits && logits.byteLength > 0 ? [logits.buffer as ArrayBuffer] : []);
  });
});
