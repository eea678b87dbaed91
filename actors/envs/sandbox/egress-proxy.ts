/**
 * The network allow-list of the sandbox. A sandbox with `allowHosts` still gets its own network
 * namespace with only loopback, so nothing can connect out directly; the one way out is an HTTP
 * proxy on a Unix socket bind-mounted into the sandbox, which connects only to allowed hosts.
 * Inside, a small forwarder listens on 127.0.0.1:3128 and passes connections to that socket, and
 * HTTP(S)_PROXY point at it, so pip, npm, git, curl and urllib work unchanged. Names are resolved
 * by the proxy on the host (the sandbox has no DNS), so what is checked is what is connected to.
 *
 * Patterns: `example.com` (that host), `*.example.com` (its subdomains, not itself), either with
 * `:port` to allow one port only; IP literals the same way (`10.0.0.5:8080`, `[::1]:443`).
 */
import { once } from 'node:events';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../../common/errors.js';

export const PROXY_PORT = 3128;
/** Where the proxy's directory (socket + forwarder) appears inside the sandbox. */
export const EGRESS_MOUNT = '/run/clawray-egress';
const SOCKET_NAME = 'proxy.sock';
const FORWARDER_NAME = 'forwarder.mjs';
const MAX_HEAD_BYTES = 16 * 1024;

interface HostPattern {
  host: string;
  wildcard: boolean;
  port?: number;
}

function parsePattern(pattern: string): HostPattern {
  const m = /^(\*\.)?(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(pattern.trim());
  const port = m?.[3] === undefined ? undefined : Number(m[3]);
  if (!m || (port !== undefined && (port < 1 || port > 65535))) {
    throw new ConfigError(
      `sandbox: allowHosts entry '${pattern}' is not a host, *.domain or host:port pattern`,
      { fields: { allowHosts: pattern } },
    );
  }
  return { host: m[2].replace(/^\[|\]$/g, '').toLowerCase(), wildcard: m[1] !== undefined, port };
}

export class HostAllowList {
  private readonly patterns: HostPattern[];

  constructor(patterns: readonly string[]) {
    this.patterns = patterns.map(parsePattern);
  }

  allows(host: string, port: number): boolean {
    const h = host
      .replace(/^\[|\]$/g, '')
      .toLowerCase()
      .replace(/\.$/, '');
    return this.patterns.some(
      (p) =>
        (p.port === undefined || p.port === port) && (p.wildcard ? h.endsWith(`.${p.host}`) : h === p.host),
    );
  }
}

/** `host:port` of a CONNECT target or an absolute-form URI; undefined when unparsable. */
function targetOf(method: string, target: string): { host: string; port: number } | undefined {
  if (method === 'CONNECT') {
    const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(target);
    return m ? { host: m[1], port: Number(m[2]) } : undefined;
  }
  try {
    const url = new URL(target);
    if (url.protocol !== 'http:') return undefined;
    return { host: url.hostname, port: url.port === '' ? 80 : Number(url.port) };
  } catch {
    return undefined;
  }
}

function refuse(client: Socket, status: string, why: string): void {
  const body = `clawray sandbox: ${why}\n`;
  client.end(
    `HTTP/1.1 ${status}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

function handle(client: Socket, allowList: HostAllowList, allowed: string): void {
  let head = Buffer.alloc(0);
  client.on('error', () => {});
  const onData = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    if (end < 0) {
      if (head.length > MAX_HEAD_BYTES)
        refuse(client, '431 Request Header Fields Too Large', 'request head too large');
      return;
    }
    client.off('data', onData);
    client.pause();
    const [method = '', target = ''] = head.subarray(0, head.indexOf('\r\n')).toString('latin1').split(' ');
    const dest = targetOf(method, target);
    if (!dest) {
      refuse(client, '400 Bad Request', 'only CONNECT host:port and http:// requests go through the proxy');
      return;
    }
    if (!allowList.allows(dest.host, dest.port)) {
      refuse(client, '403 Forbidden', `${dest.host}:${dest.port} is not in the allow-list (${allowed})`);
      return;
    }
    const upstream = connect({ host: dest.host.replace(/^\[|\]$/g, ''), port: dest.port });
    upstream.on('error', (err) => {
      if (upstream.bytesRead === 0 && !client.destroyed) refuse(client, '502 Bad Gateway', err.message);
      else client.destroy();
    });
    upstream.on('connect', () => {
      if (method === 'CONNECT') {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.write(head.subarray(end + 4));
      } else {
        // Origin servers must accept the absolute-form target, so the request goes on as sent.
        upstream.write(head);
      }
      client.pipe(upstream).pipe(client);
      client.resume();
    });
    client.on('close', () => upstream.destroy());
  };
  client.on('data', onData);
}

/** Listens on 127.0.0.1:3128 in the sandbox, then runs the command; exits with its status. */
const FORWARDER = `import { spawn } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { constants } from 'node:os';
const [socketPath, ...command] = process.argv.slice(2);
const server = createServer((client) => {
  const upstream = connect(socketPath);
  client.on('error', () => upstream.destroy());
  upstream.on('error', () => client.destroy());
  client.pipe(upstream).pipe(client);
});
server.listen(${PROXY_PORT}, '127.0.0.1', () => {
  const child = spawn(command[0], command.slice(1), { stdio: 'inherit' });
  child.on('error', (err) => {
    process.stderr.write(command[0] + ': ' + err.message + '\\n');
    process.exit(127);
  });
  child.on('exit', (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 9)));
});
`;

export interface EgressProxy {
  /** bwrap arguments that mount the proxy directory. */
  mountArgs: string[];
  /** Prefix of the sandboxed command: the forwarder, which then runs the rest. */
  commandPrefix: string[];
  env: Record<string, string>;
  close(): Promise<void>;
}

/** Starts a proxy for one sandbox run; `close()` stops it and removes its files. */
export async function startEgressProxy(
  allowHosts: readonly string[],
  nodePath: string,
): Promise<EgressProxy> {
  const allowList = new HostAllowList(allowHosts);
  const dir = await mkdtemp(join(tmpdir(), 'clawray-egress-'));
  const socketPath = join(dir, SOCKET_NAME);
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    handle(client, allowList, allowHosts.join(', '));
  });
  try {
    await writeFile(join(dir, FORWARDER_NAME), FORWARDER, { mode: 0o644 });
    server.listen(socketPath);
    await once(server, 'listening');
    // The sandbox user (not the owner) must be able to reach the socket through the directory.
    await chmod(dir, 0o755);
    await chmod(socketPath, 0o666);
  } catch (err) {
    server.close();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  const proxyUrl = `http://127.0.0.1:${PROXY_PORT}`;
  return {
    // bwrap would make /run 0700, closed to the sandbox user.
    mountArgs: ['--perms', '0755', '--dir', '/run', '--ro-bind', dir, EGRESS_MOUNT],
    commandPrefix: [nodePath, `${EGRESS_MOUNT}/${FORWARDER_NAME}`, `${EGRESS_MOUNT}/${SOCKET_NAME}`],
    env: {
      HTTP_PROXY: proxyUrl,
      HTTPS_PROXY: proxyUrl,
      http_proxy: proxyUrl,
      https_proxy: proxyUrl,
      NO_PROXY: 'localhost,127.0.0.1,::1',
      no_proxy: 'localhost,127.0.0.1,::1',
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
