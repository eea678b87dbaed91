/**
 * The local HTTP server task pages are loaded from. Pages are served from memory on 127.0.0.1
 * (port 0, so environments never collide), each under its own path, with a Content-Security-Policy
 * that lets a page run its own inline script and style but talk to no other origin. That is the
 * second fence: the browser context also aborts every request not addressed to this server.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Inline script and style only; images and fonts from data: URLs; fetch/XHR/WebSocket only to
 * the page's own origin. `form-action 'self'` keeps a form that really submits on this server.
 */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'unsafe-inline'",
  "style-src 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-src 'none'",
  "worker-src 'none'",
].join('; ');

export class PageServer {
  private readonly pages = new Map<string, string>();

  private constructor(
    private readonly server: Server,
    /** `http://127.0.0.1:<port>`, without a trailing slash. */
    readonly origin: string,
  ) {}

  static async start(): Promise<PageServer> {
    let self: PageServer | undefined;
    const server = createServer((req, res) => self?.handle(req, res));
    // Browser contexts use this server as their proxy (see newEpisodeContext): tunnels are refused.
    server.on('connect', (_req, socket) => socket.end('HTTP/1.1 403 Forbidden\r\n\r\n'));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    const { port } = server.address() as AddressInfo;
    self = new PageServer(server, `http://127.0.0.1:${port}`);
    return self;
  }

  /** Serves `html` under a path derived from `key` (a task id) and returns its URL. */
  publish(key: string, html: string): string {
    const path = `/tasks/${encodeURIComponent(key)}`;
    this.pages.set(path, html);
    return this.origin + path;
  }

  async close(): Promise<void> {
    // Chromium keeps idle keep-alive sockets open; close() alone would wait for them.
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0];
    if (!path.startsWith('/')) {
      // An absolute URL: a proxied request for some other origin.
      res.writeHead(403, { 'Content-Type': 'text/plain; charset=utf-8' }).end('not a proxy');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' }).end();
      return;
    }
    const html = this.pages.get(path);
    if (html === undefined) {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : 'not found');
      return;
    }
    const body = Buffer.from(html, 'utf8');
    res.writeHead(200, {
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Length': body.length,
      'Content-Security-Policy': PAGE_CSP,
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
    });
    res.end(req.method === 'HEAD' ? undefined : body);
  }
}
