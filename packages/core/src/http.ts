import { createServer } from 'node:http';
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createMcpHandler,
  isJSONRPCRequest,
  localhostAllowedHostnames,
  validateHostHeader,
} from '@modelcontextprotocol/server';
import type { AuthInfo, JSONRPCMessage, McpServerFactory } from '@modelcontextprotocol/server';
import type { AuthOutcome, Authenticator } from './auth.js';
import { isLoopbackHost } from './config.js';
import {
  RPC,
  asRequest,
  inspectMessage,
  parseText,
  rpcError as rpcErrorResponse,
} from './jsonrpc.js';
import { hasScope } from './policy.js';
import { ANONYMOUS } from './principal.js';
import type { Principal } from './principal.js';
import type { ReadyResult } from './define.js';
import type { Logger } from './logger.js';

/** What a request needs before the pipeline runs it: the scope, and what it names. */
export interface ScopeNeed {
  /** The method that needs it. */
  readonly method: 'tools/call' | 'resources/read' | 'prompts/get' | 'completion/complete';
  /** The tool, resource URI or prompt the request names. */
  readonly name: string;
  readonly scope: string;
}

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
  /**
   * The scope one request needs (a tool call, a resource read, a prompt get, a completion), when
   * what it names exists and is enabled; checked for every request of the body before anything
   * runs, so a missing scope is an HTTP 403 the client can step up from.
   */
  requiredScope?: (
    method: string,
    params: Record<string, unknown> | undefined,
  ) => ScopeNeed | undefined;
  /** MCP requests served at once; beyond it, 429 with Retry-After. */
  maxInflight?: number;
  /** Audits a refused authentication (never with the credential). */
  onAuthFailure?: (outcome: Extract<AuthOutcome, { ok: false }>, peer: Peer) => void;
  /** Audits a request refused for a missing scope. */
  onScopeDenied?: (principal: Principal, need: ScopeNeed, peer: Peer) => void;
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

function tooLarge(limit: number): unknown {
  return rpcError(`Payload Too Large: request body must not exceed ${limit} bytes`);
}

/** The methods of the Streamable HTTP transport; anything else (TRACE, PUT…) is a 405. */
const MCP_METHODS = new Set(['GET', 'POST', 'DELETE']);

/** Headers that must appear at most once in a request. */
const SINGLE_HEADERS = new Set([
  'host',
  'authorization',
  'origin',
  'content-type',
  'content-length',
  'mcp-method',
  'mcp-name',
  'mcp-protocol-version',
  'mcp-session-id',
]);

/** The first header of {@link SINGLE_HEADERS} that a request repeats. */
function repeatedHeader(raw: readonly string[]): string | undefined {
  const seen = new Set<string>();
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (!SINGLE_HEADERS.has(name)) continue;
    if (seen.has(name)) return name;
    seen.add(name);
  }
  return undefined;
}

type Request = { method: string; params?: Record<string, unknown> };

/**
 * Checks a POST body as JSON-RPC (depth, JSON, framing, the MCP message schema — one message
 * or each message of a batch) and returns it parsed with the requests it carries; or the 400
 * answer: one error per request with its id, id null for what cannot be read.
 */
function checkBody(
  text: string,
):
  | { ok: true; body: unknown; requests: Request[] }
  | { ok: false; reply: unknown; problem: string } {
  const refused = (
    problem: string,
    reply: unknown = rpcErrorResponse(null, RPC.invalidRequest, problem),
  ) => ({ ok: false, problem, reply }) as const;
  const parsed = parseText(text);
  if (!parsed.ok) return refused(parsed.problem, parsed.reply);
  if (!Array.isArray(parsed.value)) {
    const single = inspectMessage(parsed.value);
    if (!single.ok) return refused(single.problem, single.reply);
    return { ok: true, body: single.message, requests: requestsOf([single.message]) };
  }
  const batch = parsed.value as unknown[];
  if (batch.length === 0) return refused('Invalid Request: an empty batch');
  const inspected = batch.map((m) => (Array.isArray(m) ? undefined : inspectMessage(m)));
  const bad = inspected.findIndex((i) => i === undefined || !i.ok);
  if (bad === -1) {
    const messages = inspected.map((i) => (i as { message: JSONRPCMessage }).message);
    return { ok: true, body: messages, requests: requestsOf(messages) };
  }
  // One answer per request of the refused batch: its own error, or why the batch was refused.
  const problem = `Invalid Request: message ${bad + 1} of the batch is not valid${
    inspected[bad] === undefined
      ? ' (a nested batch)'
      : `: ${(inspected[bad] as { problem: string }).problem}`
  }`;
  const replies = batch.flatMap((m, i) => {
    const own = inspected[i];
    if (own !== undefined && !own.ok) return own.reply === undefined ? [] : [own.reply];
    const id = asRequest(m)?.id;
    return id === undefined || id === null
      ? []
      : [rpcErrorResponse(id, RPC.invalidRequest, problem)];
  });
  return refused(problem, replies.length > 0 ? replies : undefined);
}

function requestsOf(messages: readonly JSONRPCMessage[]): Request[] {
  return messages.filter(isJSONRPCRequest).map((m) => ({
    method: m.method,
    ...(m.params === undefined ? {} : { params: m.params }),
  }));
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

  const refuse = (res: ServerResponse, status: number, body: unknown, headers = {}): void => {
    res.shouldKeepAlive = false;
    sendJson(res, status, body, { connection: 'close', ...headers });
  };

  const serveMcp = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // 1. Only the methods of the Streamable HTTP transport reach the SDK.
    if (!MCP_METHODS.has(req.method ?? '')) {
      refuse(res, 405, rpcError(`Method Not Allowed: use ${[...MCP_METHODS].join(', ')}`), {
        allow: [...MCP_METHODS].join(', '),
      });
      req.resume();
      return;
    }
    // 2. A header that decides who is calling or what is called appears once: with two, a proxy
    //    and this server could each act on a different one.
    const repeated = repeatedHeader(req.rawHeaders);
    if (repeated !== undefined) {
      refuse(res, 400, rpcError(`Bad Request: the ${repeated} header appears more than once`));
      req.resume();
      return;
    }
    // 3. DNS rebinding: the Host and the browser Origin must be ours.
    const host = validateHostHeader(req.headers.host, allowedHosts);
    if (!host.ok) {
      logger.warn({ host: req.headers.host?.slice(0, 256) }, 'rejected Host header');
      refuse(res, 403, rpcError(`Forbidden: ${host.message}`));
      req.resume();
      return;
    }
    if (!originAllowed(req.headers.origin, options.allowedOrigins, loopback)) {
      logger.warn({ origin: req.headers.origin?.slice(0, 256) }, 'rejected Origin header');
      refuse(res, 403, rpcError('Forbidden: Origin not allowed'));
      req.resume();
      return;
    }
    // 4. The declared body size, before reading anything.
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > options.maxBodyBytes) {
      refuse(res, 413, tooLarge(options.maxBodyBytes));
      req.resume();
      return;
    }
    // 5. Draining: new requests go to another replica.
    if (draining) {
      refuse(res, 503, rpcError('Service Unavailable: the server is shutting down'), {
        'retry-after': '1',
      });
      req.resume();
      return;
    }
    // 6. Who is calling.
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
    // 7. The body, read here (bounded) and checked as JSON-RPC before the SDK sees it: what it
    //    asks for decides the scope check and whether it counts as in flight — never a header.
    let body: unknown;
    let requests: ReadonlyArray<{ method: string; params?: Record<string, unknown> }> = [];
    if (req.method === 'POST') {
      const raw = await readBody(req, options.maxBodyBytes);
      if (raw === undefined) {
        refuse(res, 413, tooLarge(options.maxBodyBytes));
        return;
      }
      const checked = checkBody(raw.toString('utf8'));
      if (!checked.ok) {
        logger.debug({ problem: checked.problem }, 'refused a malformed message');
        // A method the request's era does not have is a 404, as the SDK answers one.
        const code = (checked.reply as { error?: { code?: unknown } }).error?.code;
        sendJson(res, code === RPC.methodNotFound ? 404 : 400, checked.reply);
        return;
      }
      body = checked.body;
      requests = checked.requests;
    }
    // 8. Scopes, for every request in the body (a batch included).
    for (const request of requests) {
      const need = options.requiredScope?.(request.method, request.params);
      if (need === undefined || hasScope(principal, need.scope)) continue;
      options.onScopeDenied?.(principal, need, peer);
      const outcome = {
        ok: false as const,
        status: 403 as const,
        error: 'insufficient_scope' as const,
        description: `${need.method === 'tools/call' ? '' : `${need.method} `}${need.name} needs the scope ${need.scope}`,
        scope: need.scope,
      };
      sendJson(
        res,
        403,
        { error: outcome.error, error_description: outcome.description, scope: need.scope },
        {
          'www-authenticate':
            options.authenticator?.challenge(outcome) ??
            `Bearer error="insufficient_scope", scope="${need.scope}"`,
        },
      );
      return;
    }
    // 9. The global in-flight cap. A subscriptions/listen stream lives until the client leaves;
    //    it neither holds up a drain nor takes a slot. (Decided from the body, not Mcp-Method.)
    const counted = requests.some((r) => r.method !== 'subscriptions/listen');
    if (counted) {
      if (inflight >= (options.maxInflight ?? Number.POSITIVE_INFINITY)) {
        sendJson(res, 429, rpcError('Too Many Requests: the server is at capacity'), {
          'retry-after': '1',
        });
        return;
      }
      inflight++;
      res.once('close', () => {
        inflight--;
        if (inflight === 0) idleWaiter?.();
      });
    }
    // 10. The SDK. It passes `auth` through to handlers untouched: the principal travels in it,
    //     and the peer address for the audit trail. The token itself never does.
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
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      sendJson(res, 400, { error: 'bad request target' });
      return;
    }
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
