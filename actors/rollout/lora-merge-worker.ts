/**
 * The thread a LoRA merge runs on (lora-merge-pool.ts): W + scale·B·A for one tensor, the result
 * transferred back without a copy. The same `mergeLora` as the trainer's, so the bits match.
 */
import { parentPort } from 'node:worker_threads';
import { mergeLora } from '../models/lora-merge.js';
import type { MergeReply, MergeTask } from './lora-merge-pool.js';

const port = parentPort;
if (!port) throw new Error('lora-merge-worker runs as a worker thread');
port.on('message', (task: MergeTask) => {
  let reply: MergeReply;
  try {
    const merged = mergeLora(task.base, task.A, task.B, task.scale, task.dims);
    reply = { id: task.id, merged };
    port.postMessage(reply, [merged.buffer as ArrayBuffer]);
    return;
  } catch (err) {
    reply = { id: task.id, error: { name: (err as Error).name, message: (err as Error).message } };
  }
  port.postMessage(reply);
});
