import { createServer } from 'node:http';
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMcpHandler, localhostAllowedHostnames } from '@modelcontextprotocol/server';
import type { AuthInfo, McpServerFactory } from '@modelcontextprotocol/server';
import { isLoopbackHost } from './config.js';
import {
  answer,
  authenticate,
  declaredBodyFits,
  framingIsSound,
  headersAppearOnce,
  hostAndOriginAreOurs,
  notDraining,
  onlyTransportMethods,
  readJsonRpcBody,
  rpcError,
  scopesHeld,
  sendJson,
  underInflightCap,
} from './http-guards.js';
import type { AuthHooks, Guard, GuardedRequest, Slots } from './http-guards.js';

export type { Peer, ScopeNeed } from './http-guards.js';
import { ANONYMOUS } from './principal.js';
import { traceHttpRequest } from './tracing.js';
import type { ReadyResult } from './define.js';
import type { Logger } from './logger.js';

/** Options of {@link startHttpServer}. */
export interface HttpServerOptions extends AuthHooks {
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
  /** Idle keep-alive connections close after this long (above the load balancer's idle timeout). */
  keepAliveTimeoutMs?: number;
  /** A client must send the request headers within this long. */
  headersTimeoutMs?: number;
  /** Hears every answered HTTP request (metrics): method, route, status, seconds. */
  onRequestDone?: (method: string, route: string, status: number, seconds: number) => void;
  /** MCP requests served at once; beyond it, 429 with Retry-After. */
  maxInflight?: number;
  /** Subscription streams (subscriptions/listen) open at once; beyond it, 429. */
  maxSubscriptions?: number;
  /**
   * Pages beside the MCP endpoint (`/connect/…`, ADR 0026): true when one answered the request.
   * Their own checks apply (a browser reaches them, with no MCP credential).
   */
  pages?: (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;
}

/** A running HTTP server. */
export interface RunningHttpServer {
  /** The MCP endpoint URL (with the bound port). */
  readonly url: URL;
  readonly server: HttpServer;
  /** MCP requests being answered now (long-lived subscription streams excluded). */
  readonly inflight: number;
  /** Subscription streams open now. */
  readonly subscriptions: number;
  /**
   * Graceful shutdown: readiness fails at once, new MCP requests get 503, in-flight requests
   * may finish until `drainMs` passes. Resolves true when everything finished in time.
   * `onDeadline` runs when the deadline passes with requests still open (abort them there).
   */
  shutdown(drainMs: number, onDeadline?: () => void): Promise<boolean>;
}

export { originAllowed } from './http-guards.js';

/** Open requests of one kind, and a wait for none to be left. */
class Counter implements Slots {
  count = 0;
  #idle: (() => void) | undefined;
  enter(res: ServerResponse): void {
    this.count++;
    res.once('close', () => {
      this.count--;
      if (this.count === 0) this.#idle?.();
    });
  }
  /** Resolves true when none is open, false when `ms` pass first. */
  idle(ms: number): Promise<boolean> {
    if (this.count === 0) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      this.#idle = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });
  }
}

/** The metrics route of a request path: mcp, healthz, readyz, metadata or other. */
function routeOf(path: string, options: HttpServerOptions): string {
  if (path === options.path) return 'mcp';
  if (path === '/healthz' || path === '/readyz') return path.slice(1);
  return options.authenticator?.metadata?.paths.includes(path) ? 'metadata' : 'other';
}

/** Answers a probe (GET or HEAD only); a probe that throws answers 503. */
function probe(
  req: IncomingMessage,
  res: ServerResponse,
  logger: Logger,
  run: () => void | Promise<void>,
): void {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendJson(res, 405, { error: 'method not allowed' }, { allow: 'GET, HEAD' });
    return;
  }
  void Promise.resolve(run()).catch((error: unknown) => {
    logger.error({ err: error }, 'probe failed');
    if (!res.headersSent) sendJson(res, 503, { status: 'error' });
  });
}

/** Everything beside the MCP endpoint: metadata, liveness, readiness, 404. */
function serveOther(
  req: IncomingMessage,
  res: ServerResponse,
  pathname: string,
  options: HttpServerOptions,
  draining: () => boolean,
): void {
  const { logger } = options;
  const metadata = options.authenticator?.metadata;
  if (metadata?.paths.includes(pathname)) {
    probe(req, res, logger, () =>
      sendJson(res, 200, metadata.document, {
        'access-control-allow-origin': '*',
        'cache-control': 'max-age=3600',
      }),
    );
  } else if (pathname === '/healthz') {
    probe(req, res, logger, () => sendJson(res, 200, { status: 'ok' }));
  } else if (pathname === '/readyz') {
    probe(req, res, logger, async () => {
      if (draining()) {
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
}

/** Runs every guard in order (the first refusal answers), then the SDK's handler. */
function mcpEndpoint(
  guards: readonly Guard[],
  nodeHandler: (
    req: IncomingMessage & { auth?: AuthInfo },
    res: ServerResponse,
    body: unknown,
  ) => Promise<void>,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return async (req, res) => {
    const call: GuardedRequest = {
      req,
      res,
      peer: { sourceIp: req.socket.remoteAddress, userAgent: req.headers['user-agent'] },
      principal: ANONYMOUS,
      bodyRead: false,
      requests: [],
    };
    for (const guard of guards) {
      const refusal = await guard(call);
      if (refusal === undefined) continue;
      answer(res, refusal);
      // An unread body is drained so the socket can close cleanly.
      if (!call.bodyRead) req.resume();
      return;
    }
    // The SDK. It passes `auth` through to handlers untouched: the principal travels in it, and
    // the peer address for the audit trail. The token itself never does.
    const { principal, peer } = call;
    const withAuth = req as IncomingMessage & { auth?: AuthInfo };
    withAuth.auth = {
      token: '',
      clientId: principal.id,
      scopes: [...principal.scopes],
      extra: { principal, sourceIp: peer.sourceIp },
    };
    await nodeHandler(withAuth, res, call.body);
  };
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
    // The SDK's own cap, behind ours (which answers 429 before any work is done).
    ...(options.maxSubscriptions === undefined
      ? {}
      : { maxSubscriptions: options.maxSubscriptions }),
    onerror: (error) => logger.debug({ err: error }, 'mcp request rejected'),
  });
  const nodeHandler = toNodeHandler(handler, {
    maxRequestBodySize: options.maxBodyBytes,
    onerror: (error) => logger.warn({ err: error }, 'mcp handler error'),
  });
  let draining = false;
  const inflight = new Counter();
  const subscriptions = new Counter();

  /** The guards every MCP request passes, in order; the first refusal answers it. */
  const guards: readonly Guard[] = [
    onlyTransportMethods,
    headersAppearOnce,
    framingIsSound,
    hostAndOriginAreOurs(allowedHosts, options.allowedOrigins, loopback, logger),
    declaredBodyFits(options.maxBodyBytes),
    notDraining(() => draining),
    authenticate(options),
    readJsonRpcBody(options.maxBodyBytes, logger),
    scopesHeld(options),
    underInflightCap(options.maxInflight ?? Number.POSITIVE_INFINITY, inflight, {
      max: options.maxSubscriptions ?? Number.POSITIVE_INFINITY,
      slots: subscriptions,
    }),
  ];
  const serveMcp = mcpEndpoint(guards, (req, res, body) =>
    nodeHandler(req as Parameters<typeof nodeHandler>[0], res, body),
  );

  const server = createServer((req, res) => {
    if (options.onRequestDone !== undefined) {
      const done = options.onRequestDone;
      const started = process.hrtime.bigint();
      res.once('finish', () => {
        const route = routeOf((req.url ?? '/').split('?')[0] ?? '/', options);
        done(
          req.method ?? 'GET',
          route,
          res.statusCode,
          Number(process.hrtime.bigint() - started) / 1e9,
        );
      });
    }
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      sendJson(res, 400, { error: 'bad request target' });
      return;
    }
    if (url.pathname !== options.path) {
      const other = () => serveOther(req, res, url.pathname, options, () => draining);
      if (options.pages === undefined) return other();
      options.pages(req, res).then(
        (answered) => {
          if (!answered) other();
        },
        (error: unknown) => {
          logger.error({ err: error }, 'unhandled error serving a page');
          if (!res.headersSent) sendJson(res, 500, { error: 'internal error' });
          else res.destroy();
        },
      );
      return;
    }
    traceHttpRequest(req, res, options.path, () => serveMcp(req, res)).catch((error: unknown) => {
      logger.error({ err: error }, 'unhandled error serving an MCP request');
      if (!res.headersSent) sendJson(res, 500, rpcError('Internal Server Error'));
      else res.destroy();
    });
  });
  server.requestTimeout = 0; // tool calls have their own deadlines
  server.headersTimeout = options.headersTimeoutMs ?? 30_000;
  // Above a load balancer's idle timeout (60 s on most): the balancer, not Node, closes an idle
  // connection first, so it never sends a request down a socket Node is closing (a 502).
  server.keepAliveTimeout = options.keepAliveTimeoutMs ?? 65_000;

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
      return inflight.count;
    },
    get subscriptions() {
      return subscriptions.count;
    },
    async shutdown(drainMs, onDeadline) {
      // Keep listening while draining: /readyz answers 503 and new MCP requests get a 503 with
      // Retry-After (the client retries another replica) instead of a refused connection.
      draining = true;
      server.closeIdleConnections();
      const drained = await inflight.idle(drainMs);
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
