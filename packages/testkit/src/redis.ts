/**
 * A real Redis for the tests: Debian's `redis-server`, started on a free loopback port with no
 * persistence, stopped (and restarted on the same port) at will — the way the PostgreSQL helper
 * starts a real PostgreSQL. `redis-server` must be installed (`apt-get install redis-server`;
 * `npm test` installs it on a fresh machine, see scripts/ensure-tools.mjs).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { scaled } from './time.js';
import { createServer } from 'node:net';

/** A running redis-server. */
export interface TestRedis {
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** Stops the server (SIGTERM), as an outage would. */
  stop(): Promise<void>;
  /** Starts it again on the same port (empty: no persistence). */
  start(): Promise<void>;
}

/** A port nothing listens on now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Starts `redis-server` on a free loopback port. */
export async function startRedis(binary = 'redis-server'): Promise<TestRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async (): Promise<void> => {
    const proc = spawn(
      binary,
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = proc;
    await new Promise<void>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(
        () => reject(new Error(`redis-server did not start:\n${out}`)),
        scaled(10_000),
      );
      proc.once('error', (error) => {
        clearTimeout(timer);
        reject(
          new Error(
            `cannot run ${binary} (${error.message}): install it with apt-get install redis-server`,
          ),
        );
      });
      proc.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('Ready to accept connections')) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    start,
    stop: async () => {
      const proc = child;
      if (proc === undefined || proc.exitCode !== null) return;
      await new Promise<void>((resolve) => {
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
      });
    },
  };
}
