/**
 * The `/metrics` endpoint of a head or worker: Prometheus text, behind the cluster token
 * (`Authorization: Bearer …`; Prometheus sends it with `authorization.credentials_file`).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tokenMatches } from './auth.js';

export interface MetricsEndpoint {
  port: number;
  close(): Promise<void>;
}

export async function serveMetrics(options: {
  host: string;
  port: number;
  token: string;
  /** Produces the exposition text and its content type on each scrape. */
  collect: () => Promise<{ contentType: string; body: string }>;
}): Promise<MetricsEndpoint> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: clawray serves /metrics here\n');
      return;
    }
    if (!tokenMatches(req.headers.authorization, options.token)) {
      res
        .writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer' })
        .end('missing or wrong cluster token: send "Authorization: Bearer <token>"\n');
      return;
    }
    options.collect().then(
      ({ contentType, body }) => res.writeHead(200, { 'content-type': contentType }).end(body),
      (err: Error) =>
        res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${err.message}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
