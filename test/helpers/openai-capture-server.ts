/**
 * An OpenAI-compatible endpoint that records every request it gets (method, path, headers,
 * parsed body, size) and answers each chat completion with a valid one, streamed (SSE chunks,
 * usage last when `stream_options.include_usage`) or not. It stands where a model server would,
 * so a test can see exactly what a real client such as the OpenClaw gateway sends. A real HTTP
 * server (node:http) on 127.0.0.1, port 0.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface CapturedRequest {
  /** Arrival order, from 1. */
  seq: number;
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  bytes: number;
  /** The parsed JSON body; undefined for an empty or non-JSON one. */
  body: Record<string, unknown> | undefined;
}

export interface CaptureServer {
  /** `http://127.0.0.1:PORT/v1` */
  baseURL: string;
  requests: CapturedRequest[];
  /** The chat completion requests only. */
  chats(): CapturedRequest[];
  close(): Promise<void>;
}

export interface CaptureServerOptions {
  /** The assistant's reply to a request (default: `reply N`). */
  reply?: (request: CapturedRequest) => string;
}

export async function startCaptureServer(options: CaptureServerOptions = {}): Promise<CaptureServer> {
  const requests: CapturedRequest[] = [];
  const replyOf = options.reply ?? ((r: CapturedRequest) => `reply ${r.seq}`);
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: Record<string, unknown> | undefined;
      try {
        body = raw ? (JSON.parse(raw) as Record<string, unknown>) : undefined;
      } catch {
        body = undefined;
      }
      const captured: CapturedRequest = {
        seq: requests.length + 1,
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        bytes: Buffer.byteLength(raw),
        body,
      };
      requests.push(captured);
      const path = captured.url.split('?')[0];
      if (req.method === 'GET' && path.endsWith('/models')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({ object: 'list', data: [{ id: 'tiny', object: 'model', owned_by: 'test' }] }),
        );
        return;
      }
      if (req.method !== 'POST' || !path.endsWith('/chat/completions') || !body) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `no route ${req.method} ${path}`, type: 'not_found' } }));
        return;
      }
      const text = replyOf(captured);
      const id = `chatcmpl-capture-${captured.seq}`;
      const usage = { prompt_tokens: Math.ceil(captured.bytes / 4), completion_tokens: 2, total_tokens: 0 };
      usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
      const model = typeof body.model === 'string' ? body.model : 'tiny';
      if (body.stream === true) {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        const base = { id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model };
        const send = (chunk: unknown) => res.write(`data: ${JSON.stringify(chunk)}\n\n`);
        send({
          ...base,
          choices: [{ index: 0, delta: { role: 'assistant', content: text }, finish_reason: null }],
        });
        send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
        const wantsUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage;
        if (wantsUsage) send({ ...base, choices: [], usage });
        res.end('data: [DONE]\n\n');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model,
          choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
          usage,
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    chats: () =>
      requests.filter((r) => r.method === 'POST' && r.url.split('?')[0].endsWith('/chat/completions')),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
