import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import {
  Client,
  InMemoryTransport,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import type { ClientCapabilities } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { McpServerFactory } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { TIME_SCALE, scaled } from './time.js';

/** The two protocol eras: `legacy` = 2025-11-25 (initialize), `modern` = 2026-07-28 (discover). */
export type Era = 'legacy' | 'modern';

/** The modern revision the harness pins. */
export const MODERN_REVISION = '2026-07-28';

/** A raw 2025-era `initialize` request, for tests that speak JSON-RPC by hand. */
export function initializeRequest(id = 1, clientName = 'raw-test'): Record<string, unknown> {
  return {
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: clientName, version: '1.0.0' },
    },
  };
}

/** Options shared by every client the harness builds. */
export interface ClientOptions {
  era?: Era;
  capabilities?: ClientCapabilities;
  /** Client name reported to the server (and in its audit records). */
  name?: string;
}

/** Creates a real SDK v2 client for the given era. */
export function createClient(options: ClientOptions = {}): Client {
  const era = options.era ?? 'legacy';
  return new Client(
    { name: options.name ?? 'gatehouse-testkit', version: '1.0.0' },
    {
      ...(options.capabilities === undefined ? {} : { capabilities: options.capabilities }),
      versionNegotiation: { mode: era === 'modern' ? { pin: MODERN_REVISION } : 'legacy' },
    },
  );
}

/** A connected client and the way to tear it down. */
export interface Connection {
  readonly client: Client;
  readonly close: () => Promise<void>;
}

/**
 * Connects a real client to a server factory in memory, through the same `serveStdio` entry a
 * stdio server uses (so the era is negotiated exactly as over a pipe).
 */
export async function connectInMemory(
  factory: McpServerFactory,
  options: ClientOptions = {},
): Promise<Connection> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const handle = serveStdio(factory, { transport: serverSide });
  const client = createClient(options);
  await client.connect(clientSide);
  return {
    client,
    async close() {
      await client.close();
      await handle.close();
    },
  };
}

/** Connects a real client to a Streamable HTTP endpoint. */
export async function connectHttp(
  url: URL | string,
  options: ClientOptions & { headers?: Record<string, string> } = {},
): Promise<Connection> {
  const client = createClient(options);
  const extra = options.headers;
  // Headers go on every request, the era probe included (a fetch wrapper, not requestInit).
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    ...(extra === undefined
      ? {}
      : {
          fetch: (input: string | URL, init?: RequestInit) => {
            const headers = new Headers(init?.headers);
            for (const [k, v] of Object.entries(extra)) headers.set(k, v);
            return fetch(input, { ...init, headers });
          },
        }),
  });
  await client.connect(transport);
  return { client, close: () => client.close() };
}

/** A server process driven over stdio by a real client. */
export interface StdioConnection extends Connection {
  /** Lines the server wrote to stderr so far. */
  readonly stderr: string[];
  readonly pid: number | null;
}

/** Spawns a stdio server and connects a real client to it. */
export async function connectStdio(
  command: string,
  args: readonly string[],
  options: ClientOptions & {
    env?: Record<string, string>;
    cwd?: string;
    /** `ignore` sends the server's stderr to /dev/null (benchmarks); default: collected. */
    stderr?: 'pipe' | 'ignore';
  } = {},
): Promise<StdioConnection> {
  const transport = new StdioClientTransport({
    command,
    args: [...args],
    stderr: options.stderr ?? 'pipe',
    ...(options.env === undefined ? {} : { env: options.env }),
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
  });
  const stderr: string[] = [];
  const stream = transport.stderr;
  if (stream) {
    createInterface({ input: stream as Readable }).on('line', (line) => stderr.push(line));
  }
  const client = createClient(options);
  await client.connect(transport);
  return { client, stderr, pid: transport.pid, close: () => client.close() };
}

/** A JSON log line a server wrote to stderr. */
export type LogLine = Record<string, unknown> & { msg?: string };

/** A server child process (HTTP or stdio) whose stderr log is collected. */
export interface ServerProcess {
  readonly child: ChildProcess;
  /** Parsed JSON log lines; non-JSON stderr lines are kept as `{ raw }`. */
  readonly logs: LogLine[];
  /** Everything the process wrote to stdout. */
  readonly stdout: () => string;
  /** The MCP URL, once an HTTP server logged "server started". */
  readonly url: URL | undefined;
  /** Audit records (JSON lines with `audit.schema_version`) written to stdout or stderr so far. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- loosely typed for assertions in tests
  auditRecords(): Array<Record<string, any>>;
  /** Resolves with the first log line matching `predicate`. */
  /** Waits for a log line; `what` names it in the error when it never comes. */
  waitForLog(
    predicate: (line: LogLine) => boolean,
    timeoutMs?: number,
    what?: string,
  ): Promise<LogLine>;
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /** Resolves with the exit code once the process ends. */
  exited(): Promise<number | null>;
}

/**
 * Spawns a server process and collects its stderr log. For HTTP servers pass
 * `GATEHOUSE_TRANSPORT=http` and `GATEHOUSE_PORT=0`; the promise resolves once the server logged
 * its URL. For other processes pass `waitForStart: false`.
 */
export async function spawnServer(
  command: string,
  args: readonly string[],
  options: { env?: Record<string, string>; waitForStart?: boolean; timeoutMs?: number } = {},
): Promise<ServerProcess> {
  const child = spawn(command, [...args], {
    env: options.env ?? {},
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const logs: LogLine[] = [];
  const listeners = new Set<(line: LogLine) => void>();
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  createInterface({ input: child.stderr }).on('line', (raw) => {
    let line: LogLine;
    try {
      const parsed: unknown = JSON.parse(raw);
      line = typeof parsed === 'object' && parsed !== null ? (parsed as LogLine) : { raw };
    } catch {
      line = { raw };
    }
    logs.push(line);
    for (const l of listeners) l(line);
  });
  const exit = once(child, 'exit').then(([code]) => code as number | null);
  let url: URL | undefined;

  /** Which process a wait was for, in an error: its command, arguments and pid. */
  const who = `${[command, ...args].map((a) => a.split('/').slice(-3).join('/')).join(' ')} (pid ${child.pid})`;
  const waitForLog = (
    predicate: (line: LogLine) => boolean,
    timeoutMs = scaled(15_000),
    what = 'the expected log line',
  ): Promise<LogLine> => {
    const found = logs.find(predicate);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        listeners.delete(listener);
        reject(
          new Error(
            `waited ${timeoutMs} ms (×${TIME_SCALE} for this machine) for ${what} from ${who}, in vain; its log:\n${logs.map((l) => JSON.stringify(l)).join('\n')}`,
          ),
        );
      }, timeoutMs);
      const listener = (line: LogLine): void => {
        if (!predicate(line)) return;
        clearTimeout(timer);
        listeners.delete(listener);
        resolve(line);
      };
      listeners.add(listener);
      void exit.then((code) => {
        if (!listeners.has(listener)) return;
        clearTimeout(timer);
        listeners.delete(listener);
        reject(
          new Error(
            `${who} exited (${code}) before ${what}; its log:\n${logs.map((l) => JSON.stringify(l)).join('\n')}`,
          ),
        );
      });
    });
  };

  if (options.waitForStart !== false) {
    let started: LogLine;
    try {
      started = await waitForLog(
        (l) => l.msg === 'server started',
        options.timeoutMs ?? scaled(15_000),
        'its "server started" log line',
      );
    } catch (error) {
      // A server that did not start in time must not outlive the caller (it may hold a port).
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      throw error;
    }
    if (typeof started.url === 'string') url = new URL(started.url);
  }
  const isAudit = (l: Record<string, unknown>): boolean =>
    typeof (l.audit as { schema_version?: unknown } | undefined)?.schema_version === 'string';
  return {
    child,
    logs,
    stdout: () => stdout,
    auditRecords: () => [
      ...stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter(isAudit),
      ...logs.filter(isAudit),
    ],
    get url() {
      return url;
    },
    waitForLog,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exit;
    },
    exited: () => exit,
  };
}
