/**
 * A scripted OpenAI-compatible `/v1/chat/completions` server on 127.0.0.1 (a real HTTP server,
 * node:http) for judge tests and demos. Each request is answered by `respond`, which sees the
 * parsed body, so replies can depend on the prompt rather than on arrival order (parallel votes
 * from several processes arrive in any order).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeReply {
  /** HTTP status (default 200). */
  status?: number;
  /** The assistant message content (any JSON value, to test malformed replies). */
  content?: unknown;
  /** A raw body sent instead of a completion. */
  raw?: string;
  /** Answer after this many ms. */
  delayMs?: number;
}

export interface FakeRequest {
  url: string;
  authorization: string | undefined;
  body: Record<string, unknown>;
}

export interface FakeOpenAiServer {
  /** `http://127.0.0.1:PORT/v1` */
  baseURL: string;
  requests: FakeRequest[];
  close(): Promise<void>;
}

/** The text of the last message of a request (the judge's user prompt). */
export function lastMessageText(body: Record<string, unknown>): string {
  const messages = body.messages as Array<{ content?: unknown }> | undefined;
  const content = messages?.[messages.length - 1]?.content;
  return typeof content === 'string' ? content : '';
}

/**
 * The next-state section of a judge prompt built by prompts.ts (what a scripted judge decides
 * on; the rest of the prompt mentions "redo", "correction" and the like in its instructions).
 */
export function nextStateText(body: Record<string, unknown>): string {
  const prompt = lastMessageText(body);
  const at = prompt.indexOf('## Next state');
  if (at < 0) return '';
  const from = prompt.indexOf('\n', at) + 1;
  const end = prompt.indexOf('\n\n', from);
  return prompt.slice(from, end < 0 ? undefined : end);
}

export async function startFakeOpenAiServer(
  respond: (body: Record<string, unknown>, index: number) => FakeReply,
): Promise<FakeOpenAiServer> {
  const requests: FakeRequest[] = [];
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      } catch {
        res.writeHead(400).end('bad json');
        return;
      }
      const index = requests.length;
      requests.push({ url: req.url ?? '', authorization: req.headers.authorization, body });
      if (req.url !== '/v1/chat/completions') {
        res.writeHead(404).end('not found');
        return;
      }
      const reply = respond(body, index);
      const send = () => {
        const headers = { 'content-type': 'application/json' };
        if (reply.raw !== undefined) {
          res.writeHead(reply.status ?? 200, headers).end(reply.raw);
          return;
        }
        res.writeHead(reply.status ?? 200, headers).end(
          JSON.stringify({
            id: `chatcmpl-${index}`,
            object: 'chat.completion',
            model: body.model,
            choices: [
              { index: 0, message: { role: 'assistant', content: reply.content }, finish_reason: 'stop' },
            ],
          }),
        );
      };
      if (reply.delayMs) setTimeout(send, reply.delayMs);
      else send();
    });
  };
  const server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
