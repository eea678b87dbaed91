/**
 * A rank's data servers, where the next rank dials in: TCP on port 0 of the bind host, and a
 * Unix socket beside it unless the transport is 'tcp' (transport.ts). Their address, in the
 * form transport.ts parses, is what the driver hands to every rank.
 */
import net from 'node:net';
import { hostname } from 'node:os';
import { ConfigError } from '../../common/errors.js';
import {
  formatAddress,
  hostId,
  type LinkTransport,
  type PeerAddress,
  type TransportOption,
  unixSocketPath,
} from './transport.js';

export interface DataServers {
  /** Hand it to the other ranks. */
  readonly address: string;
  /** Every connection, with the transport it came in on. */
  onConnection(accept: (socket: net.Socket, link: LinkTransport) => void): void;
  close(): Promise<void>;
}

export interface DataServerOptions {
  rank: number;
  transport: TransportOption;
  /** Default CLAWRAY_BIND_HOST, else 127.0.0.1. */
  bindHost?: string;
  /** Default CLAWRAY_ADVERTISE_HOST, else the bind host (the hostname for a wildcard address). */
  advertiseHost?: string;
}

const listen = (server: net.Server, where: () => void): Promise<void> =>
  new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.once('listening', () => {
      server.off('error', reject);
      resolve();
    });
    where();
  });

export async function startDataServers(options: DataServerOptions): Promise<DataServers> {
  const { rank, transport } = options;
  const bindHost = options.bindHost ?? process.env.CLAWRAY_BIND_HOST ?? '127.0.0.1';
  const tcp = net.createServer({ noDelay: true });
  await listen(tcp, () => tcp.listen(0, bindHost));
  const servers: Array<{ server: net.Server; link: LinkTransport }> = [{ server: tcp, link: 'tcp' }];
  const peer: PeerAddress = { host: '', port: (tcp.address() as net.AddressInfo).port };
  if (transport !== 'tcp') {
    const unix = net.createServer();
    const path = unixSocketPath(rank);
    try {
      await listen(unix, () => unix.listen(path));
      servers.push({ server: unix, link: 'unix' });
      peer.unix = path;
      peer.hostId = hostId();
    } catch (err) {
      if (transport === 'unix') {
        tcp.close();
        throw new ConfigError(`collective transport 'unix': cannot listen on a Unix socket: ${String(err)}`);
      }
      // 'auto': TCP only.
    }
  }
  const wildcard = bindHost === '0.0.0.0' || bindHost === '::' || bindHost === '';
  peer.host =
    options.advertiseHost ?? process.env.CLAWRAY_ADVERTISE_HOST ?? (wildcard ? hostname() : bindHost);
  return {
    address: formatAddress(peer),
    onConnection(accept) {
      for (const { server, link } of servers) server.on('connection', (socket) => accept(socket, link));
    },
    // Closing a Unix server on a file path removes the file (libuv unlinks it).
    close: () =>
      Promise.all(
        servers.map(({ server }) => new Promise<void>((resolve) => server.close(() => resolve()))),
      ).then(() => {}),
  };
}
