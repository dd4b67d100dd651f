import { connect, createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';

/** A loopback TCP proxy (see {@link startTcpProxy}). */
export interface TcpProxy {
  readonly port: number;
  /** `url` with its host and port replaced by the proxy's. */
  urlFor(url: string): string;
  /** A network cut: open connections dropped, new ones closed at once (the port is kept). */
  cut(): void;
  /** Accepts connections again after {@link cut}. */
  restore(): void;
  close(): Promise<void>;
}

/**
 * A TCP proxy on 127.0.0.1 in front of `target` (e.g. PostgreSQL): cutting it is a database
 * outage or a network cut, and `onClientData` sees every chunk the client sends (to read the
 * protocol on the wire). It keeps its port while cut: were the port let go, another test
 * process could take it before the target comes back.
 */
export async function startTcpProxy(
  target: { host: string; port: number },
  options: { onClientData?: (chunk: Buffer) => void } = {},
): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let down = false;
  const server = createServer((client) => {
    if (down) {
      client.destroy();
      return;
    }
    const upstream = connect(target.port, target.host);
    sockets.add(client).add(upstream);
    client.on('data', (chunk: Buffer) => {
      options.onClientData?.(chunk);
      upstream.write(chunk);
    });
    upstream.pipe(client);
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    urlFor(url) {
      const proxied = new URL(url);
      proxied.hostname = '127.0.0.1';
      proxied.port = String(port);
      return proxied.toString();
    },
    cut() {
      down = true;
      for (const socket of sockets) socket.destroy();
      sockets.clear();
    },
    restore() {
      down = false;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
