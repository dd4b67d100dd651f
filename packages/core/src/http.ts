import { createServer } from 'node:http';
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createMcpHandler,
  localhostAllowedHostnames,
  validateHostHeader,
} from '@modelcontextprotocol/server';
import type { AuthInfo, McpServerFactory } from '@modelcontextprotocol/server';
import type { AuthOutcome, Authenticator } from './auth.js';
import { isLoopbackHost } from './config.js';
import { hasScope } from './policy.js';
import { ANONYMOUS } from './principal.js';
import type { Principal } from './principal.js';
import type { ReadyResult } from './define.js';
import type { Logger } from './logger.js';

/** Options of {@link startHttpServer}. */
export interface HttpServerOptions {
  host: string;
  port: number;
  /** Path of the MCP endpoint, e.g. `/mcp`. */
  path: string;
  /** Accepted Host header hostnames; defaults to the localhost names on a loopback bind. */
  allowedHosts: readonly string[];
  /** Accepted browser origins (`scheme://host[:port]`); localhost origins pass on a loopback bind. */
  allowedOrigins: readonly string[];
  maxBodyBytes: number;
  logger: Logger;
  /** Readiness of the server's upstreams, behind `/readyz`. */
  ready?: () => Promise<ReadyResult>;
  /** Bearer authentication; absent means `none` (loopback only). */
  authenticator?: Authenticator;
  /** The scope a `tools/call` of this tool needs, when the tool exists and is enabled. */
  toolScope?: (name: string) => string | undefined;
  /** MCP requests served at once; beyond it, 429 with Retry-After. */
  maxInflight?: number;
  /** Audits a refused authentication (never with the credential). */
  onAuthFailure?: (outcome: Extract<AuthOutcome, { ok: false }>, peer: Peer) => void;
  /** Audits a call refused for a missing scope. */
  onScopeDenied?: (principal: Principal, tool: string, scope: string, peer: Peer) => void;
}

/** Who is on the other end of a request, for the audit trail. */
export interface Peer {
  sourceIp: string | undefined;
  userAgent: string | undefined;
}

/** A running HTTP server. */
export interface RunningHttpServer {
  /** The MCP endpoint URL (with the bound port). */
  readonly url: URL;
  readonly server: HttpServer;
  /** MCP requests being answered now (long-lived subscription streams excluded). */
  readonly inflight: number;
  /**
   * Graceful shutdown: readiness fails at once, new MCP requests get 503, in-flight requests
   * may finish until `drainMs` passes. Resolves true when everything finished in time.
   * `onDeadline` runs when the deadline passes with requests still open (abort them there).
   */
  shutdown(drainMs: number, onDeadline?: () => void): Promise<boolean>;
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(payload)),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(payload);
}

/** Reads a request body up to `limit` bytes; undefined when it is larger. */
async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      req.resume();
      return undefined;
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function rpcError(message: string): unknown {
  return { jsonrpc: '2.0', error: { code: -32000, message }, id: null };
}

const LOCAL_HOSTNAMES = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Decides whether a browser Origin may call the endpoint. A missing Origin (non-browser) passes. */
export function originAllowed(
  origin: string | undefined,
  allowedOrigins: readonly string[],
  loopback: boolean,
): boolean {
  if (origin === undefined || origin === '') return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  if (allowedOrigins.includes(url.origin)) return true;
  return loopback && LOCAL_HOSTNAMES.has(url.hostname);
}

/**
 * Serves a server factory over Streamable HTTP, stateless: every request gets a fresh SDK server
 * (`createMcpHandler`), so any replica can answer any request. In front of the SDK handler: Host
 * and Origin validation (DNS rebinding, 403), a body limit (413), readiness/liveness endpoints,
 * and a drain on shutdown. The SDK answers 405/406/415 and JSON-RPC framing errors itself.
 */
export async function startHttpServer(
  factory: McpServerFactory,
  options: HttpServerOptions,
): Promise<RunningHttpServer> {
  const { logger } = options;
  const loopback = isLoopbackHost(options.host);
  const allowedHosts =
    options.allowedHosts.length > 0 ? [...options.allowedHosts] : localhostAllowedHostnames();
  // Loaded here, not at import: a stdio server never pays for the HTTP adapter.
  const { toNodeHandler } = await import('@modelcontextprotocol/node');
  const handler = createMcpHandler(factory, {
    maxRequestBodySize: options.maxBodyBytes,
    onerror: (error) => logger.debug({ err: error }, 'mcp request rejected'),
  });
  const nodeHandler = toNodeHandler(handler, {
    maxRequestBodySize: options.maxBodyBytes,
    onerror: (error) => logger.warn({ err: error }, 'mcp handler error'),
  });
  let draining = false;
  let inflight = 0;
  let idleWaiter: (() => void) | undefined;

  const serveMcp = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const host = validateHostHeader(req.headers.host, allowedHosts);
    if (!host.ok) {
      logger.warn({ host: req.headers.host?.slice(0, 256) }, 'rejected Host header');
      sendJson(res, 403, rpcError(`Forbidden: ${host.message}`));
      return;
    }
    if (!originAllowed(req.headers.origin, options.allowedOrigins, loopback)) {
      logger.warn({ origin: req.headers.origin?.slice(0, 256) }, 'rejected Origin header');
      sendJson(res, 403, rpcError('Forbidden: Origin not allowed'));
      return;
    }
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > options.maxBodyBytes) {
      sendJson(
        res,
        413,
        rpcError(`Payload Too Large: request body must not exceed ${options.maxBodyBytes} bytes`),
        { connection: 'close' },
      );
      req.resume();
      return;
    }
    if (draining) {
      res.shouldKeepAlive = false;
      sendJson(res, 503, rpcError('Service Unavailable: the server is shutting down'), {
        'retry-after': '1',
        connection: 'close',
      });
      return;
    }
    const peer: Peer = { sourceIp: req.socket.remoteAddress, userAgent: req.headers['user-agent'] };
    let principal: Principal = ANONYMOUS;
    if (options.authenticator !== undefined) {
      const outcome = await options.authenticator.authenticate(req.headers.authorization);
      if (!outcome.ok) {
        options.onAuthFailure?.(outcome, peer);
        sendJson(
          res,
          outcome.status,
          { error: outcome.error ?? 'unauthorized', error_description: outcome.description },
          {
            ...(outcome.status === 503 ? { 'retry-after': '5' } : {}),
            ...(outcome.status === 401 || outcome.status === 403
              ? { 'www-authenticate': options.authenticator.challenge(outcome) }
              : {}),
          },
        );
        req.resume();
        return;
      }
      principal = outcome.principal;
    }
    if (inflight >= (options.maxInflight ?? Number.POSITIVE_INFINITY)) {
      sendJson(res, 429, rpcError('Too Many Requests: the server is at capacity'), {
        'retry-after': '1',
      });
      req.resume();
      return;
    }
    // Read the body here (bounded) to check a tool's scope before anything runs: a missing scope
    // is an HTTP 403 insufficient_scope the client can step up from.
    let body: unknown;
    if (req.method === 'POST') {
      const raw = await readBody(req, options.maxBodyBytes);
      if (raw === undefined) {
        sendJson(
          res,
          413,
          rpcError(`Payload Too Large: request body must not exceed ${options.maxBodyBytes} bytes`),
          {
            connection: 'close',
          },
        );
        return;
      }
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        sendJson(res, 400, {
          jsonrpc: '2.0',
          error: { code: -32700, message: 'Parse error: Invalid JSON' },
          id: null,
        });
        return;
      }
      const call = body as { method?: unknown; params?: { name?: unknown } } | null;
      if (call?.method === 'tools/call' && typeof call.params?.name === 'string') {
        const scope = options.toolScope?.(call.params.name);
        if (scope !== undefined && !hasScope(principal, scope)) {
          options.onScopeDenied?.(principal, call.params.name, scope, peer);
          const outcome = {
            ok: false as const,
            status: 403 as const,
            error: 'insufficient_scope' as const,
            description: `${call.params.name} needs the scope ${scope}`,
            scope,
          };
          sendJson(
            res,
            403,
            { error: outcome.error, error_description: outcome.description, scope },
            {
              'www-authenticate':
                options.authenticator?.challenge(outcome) ??
                `Bearer error="insufficient_scope", scope="${scope}"`,
            },
          );
          return;
        }
      }
    }
    // A subscriptions/listen stream lives until the client leaves; it does not hold up a drain.
    const counted = req.headers['mcp-method'] !== 'subscriptions/listen';
    if (counted) {
      inflight++;
      res.once('close', () => {
        inflight--;
        if (inflight === 0) idleWaiter?.();
      });
    }
    // The SDK passes `auth` through to handlers untouched: the principal travels in it, and the
    // peer address for the audit trail. The token itself never does.
    const withAuth = req as IncomingMessage & { auth?: AuthInfo };
    withAuth.auth = {
      token: '',
      clientId: principal.id,
      scopes: [...principal.scopes],
      extra: { principal, sourceIp: peer.sourceIp },
    };
    await nodeHandler(withAuth as Parameters<typeof nodeHandler>[0], res, body);
  };

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const probe = (run: () => void | Promise<void>): void => {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        sendJson(res, 405, { error: 'method not allowed' }, { allow: 'GET, HEAD' });
        return;
      }
      void Promise.resolve(run()).catch((error: unknown) => {
        logger.error({ err: error }, 'probe failed');
        if (!res.headersSent) sendJson(res, 503, { status: 'error' });
      });
    };
    if (url.pathname === options.path) {
      serveMcp(req, res).catch((error: unknown) => {
        logger.error({ err: error }, 'unhandled error serving an MCP request');
        if (!res.headersSent) sendJson(res, 500, rpcError('Internal Server Error'));
        else res.destroy();
      });
    } else if (options.authenticator?.metadata?.paths.includes(url.pathname)) {
      const document = options.authenticator.metadata.document;
      probe(() =>
        sendJson(res, 200, document, {
          'access-control-allow-origin': '*',
          'cache-control': 'max-age=3600',
        }),
      );
    } else if (url.pathname === '/healthz') {
      probe(() => sendJson(res, 200, { status: 'ok' }));
    } else if (url.pathname === '/readyz') {
      probe(async () => {
        if (draining) {
          sendJson(res, 503, { status: 'draining' });
          return;
        }
        const result = options.ready ? await options.ready() : { ready: true };
        sendJson(res, result.ready ? 200 : 503, {
          status: result.ready ? 'ready' : 'not_ready',
          ...(result.detail === undefined ? {} : { detail: result.detail }),
        });
      });
    } else {
      sendJson(res, 404, { error: 'not found', endpoint: options.path });
    }
  });
  server.requestTimeout = 0; // tool calls have their own deadlines
  server.headersTimeout = 30_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const hostForUrl = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = new URL(`http://${hostForUrl}:${address.port}${options.path}`);

  return {
    url,
    server,
    get inflight() {
      return inflight;
    },
    async shutdown(drainMs, onDeadline) {
      // Keep listening while draining: /readyz answers 503 and new MCP requests get a 503 with
      // Retry-After (the client retries another replica) instead of a refused connection.
      draining = true;
      server.closeIdleConnections();
      let drained = inflight === 0;
      if (!drained) {
        drained = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(false), drainMs);
          idleWaiter = () => {
            clearTimeout(timer);
            resolve(true);
          };
        });
      }
      if (!drained) {
        onDeadline?.();
        // Give aborted calls a moment to write their answers and audit records.
        await new Promise((r) => setTimeout(r, 100));
      }
      await handler.close();
      server.close();
      server.closeAllConnections();
      return drained;
    },
  };
}
