/**
 * The guards in front of the MCP endpoint, one named step each, in the order
 * {@link startHttpServer} runs them. A guard returns a refusal (status, body, headers) or
 * nothing; the first refusal answers the request and nothing behind it runs.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isJSONRPCRequest, validateHostHeader } from '@modelcontextprotocol/server';
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import type { AuthOutcome, Authenticator } from './auth.js';
import {
  RPC,
  asRequest,
  inspectMessage,
  parseText,
  rpcError as rpcErrorResponse,
} from './jsonrpc.js';
import type { Logger } from './logger.js';
import { hasScope } from './policy.js';
import type { Principal } from './principal.js';

/** Who is on the other end of a request, for the audit trail. */
export interface Peer {
  sourceIp: string | undefined;
  userAgent: string | undefined;
}

/** What a request needs before the pipeline runs it: the scope, and what it names. */
export interface ScopeNeed {
  /** The method that needs it. */
  readonly method: 'tools/call' | 'resources/read' | 'prompts/get' | 'completion/complete';
  /** The tool, resource URI or prompt the request names. */
  readonly name: string;
  readonly scope: string;
}

/** Who may call, and what the guards tell the audit trail (part of the HTTP server's options). */
export interface AuthHooks {
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
  /** Audits a refused authentication (never with the credential). */
  onAuthFailure?: (outcome: Extract<AuthOutcome, { ok: false }>, peer: Peer) => void;
  /** Audits a request refused for a missing scope. */
  onScopeDenied?: (principal: Principal, need: ScopeNeed, peer: Peer) => void;
}

/** One request to the MCP endpoint as the guards fill it in. */
export interface GuardedRequest {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly peer: Peer;
  /** Set by {@link authenticate}. */
  principal: Principal;
  /** Set by {@link readJsonRpcBody}: the parsed body and the requests it carries. */
  body?: unknown;
  requests: ReadonlyArray<{ method: string; params?: Record<string, unknown> }>;
  bodyRead: boolean;
}

/** How a guard refuses a request. `close`: the connection is not kept alive. */
export interface HttpRefusal {
  readonly status: number;
  readonly body: unknown;
  readonly headers?: Record<string, string>;
  readonly close?: boolean;
}

export type Guard = (
  call: GuardedRequest,
) => HttpRefusal | undefined | Promise<HttpRefusal | undefined>;

export function answer(res: ServerResponse, refusal: HttpRefusal): void {
  if (refusal.close === true) {
    res.shouldKeepAlive = false;
    sendJson(res, refusal.status, refusal.body, { connection: 'close', ...refusal.headers });
  } else sendJson(res, refusal.status, refusal.body, refusal.headers);
}

export function sendJson(
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

/**
 * How much of a body past the limit is read (and dropped) so that the 413 reaches the client:
 * closing a socket with unread bytes in it resets the connection, and the client sees a reset
 * instead of the answer. A body longer still is cut off.
 */
const DRAIN_BYTES = 4 * 1024 * 1024;

/** Reads a request body up to `limit` bytes; undefined when it is larger. */
async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit + DRAIN_BYTES) return undefined;
    if (size > limit) chunks.length = 0;
    else chunks.push(chunk as Buffer);
  }
  return size > limit ? undefined : Buffer.concat(chunks);
}

export function rpcError(message: string): unknown {
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

// ---- the guards, in order -----------------------------------------------------------------

/** Only the methods of the Streamable HTTP transport reach the SDK (405 with Allow). */
export const onlyTransportMethods: Guard = ({ req }) =>
  MCP_METHODS.has(req.method ?? '')
    ? undefined
    : {
        status: 405,
        body: rpcError(`Method Not Allowed: use ${[...MCP_METHODS].join(', ')}`),
        headers: { allow: [...MCP_METHODS].join(', ') },
        close: true,
      };

/**
 * A header that decides who is calling or what is called appears once: with two, a proxy and
 * this server could each act on a different one.
 */
export const headersAppearOnce: Guard = ({ req }) => {
  const repeated = repeatedHeader(req.rawHeaders);
  return repeated === undefined
    ? undefined
    : {
        status: 400,
        body: rpcError(`Bad Request: the ${repeated} header appears more than once`),
        close: true,
      };
};

/**
 * Framing the server can trust (RFC 9112 §6): Transfer-Encoding on an HTTP/1.0 request is faulty
 * framing (§6.1: 1.0 has no chunked coding, so a proxy and this server could each read a
 * different body), and so is any coding but `chunked` alone, or Transfer-Encoding beside
 * Content-Length (§6.3). Refused with 400 and the connection closed.
 */
export const framingIsSound: Guard = ({ req }) => {
  const te = req.headers['transfer-encoding'];
  if (te === undefined) return undefined;
  const codings = te
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '');
  const problem =
    req.httpVersion !== '1.1'
      ? `Transfer-Encoding on an HTTP/${req.httpVersion} request`
      : codings.length !== 1 || codings[0] !== 'chunked'
        ? 'a Transfer-Encoding other than chunked'
        : req.headers['content-length'] !== undefined
          ? 'both Transfer-Encoding and Content-Length'
          : undefined;
  return problem === undefined
    ? undefined
    : { status: 400, body: rpcError(`Bad Request: faulty framing (${problem})`), close: true };
};

/** DNS rebinding: the Host and the browser Origin must be ours (403). */
export function hostAndOriginAreOurs(
  allowedHosts: readonly string[],
  allowedOrigins: readonly string[],
  loopback: boolean,
  logger: Logger,
): Guard {
  const hosts = [...allowedHosts];
  return ({ req }) => {
    const host = validateHostHeader(req.headers.host, hosts);
    if (!host.ok) {
      logger.warn({ host: req.headers.host?.slice(0, 256) }, 'rejected Host header');
      return { status: 403, body: rpcError(`Forbidden: ${host.message}`), close: true };
    }
    if (!originAllowed(req.headers.origin, allowedOrigins, loopback)) {
      logger.warn({ origin: req.headers.origin?.slice(0, 256) }, 'rejected Origin header');
      return { status: 403, body: rpcError('Forbidden: Origin not allowed'), close: true };
    }
    return undefined;
  };
}

/** The declared body size, before reading anything (413). */
export function declaredBodyFits(limit: number): Guard {
  return ({ req }) =>
    Number(req.headers['content-length'] ?? 0) > limit
      ? { status: 413, body: tooLarge(limit), close: true }
      : undefined;
}

/** Draining: new requests go to another replica (503 with Retry-After). */
export function notDraining(draining: () => boolean): Guard {
  return () =>
    draining()
      ? {
          status: 503,
          body: rpcError('Service Unavailable: the server is shutting down'),
          headers: { 'retry-after': '1' },
          close: true,
        }
      : undefined;
}

/** Who is calling: the bearer credential becomes the principal (401/403/503 otherwise). */
export function authenticate(options: Pick<AuthHooks, 'authenticator' | 'onAuthFailure'>): Guard {
  const { authenticator } = options;
  return async (call) => {
    if (authenticator === undefined) return undefined;
    const outcome = await authenticator.authenticate(call.req.headers.authorization);
    if (outcome.ok) {
      call.principal = outcome.principal;
      return undefined;
    }
    options.onAuthFailure?.(outcome, call.peer);
    return {
      status: outcome.status,
      body: { error: outcome.error ?? 'unauthorized', error_description: outcome.description },
      headers: {
        ...(outcome.status === 503 ? { 'retry-after': '5' } : {}),
        ...(outcome.status === 401 || outcome.status === 403
          ? { 'www-authenticate': authenticator.challenge(outcome) }
          : {}),
      },
    };
  };
}

/**
 * The body, read here (bounded) and checked as JSON-RPC before the SDK sees it: what it asks
 * for decides the scope check and whether it counts as in flight — never a header.
 */
export function readJsonRpcBody(limit: number, logger: Logger): Guard {
  return async (call) => {
    if (call.req.method !== 'POST') return undefined;
    call.bodyRead = true;
    const raw = await readBody(call.req, limit);
    if (raw === undefined) return { status: 413, body: tooLarge(limit), close: true };
    const checked = checkBody(raw.toString('utf8'));
    if (!checked.ok) {
      logger.debug({ problem: checked.problem }, 'refused a malformed message');
      // A method the request's era does not have is a 404, as the SDK answers one.
      const code = (checked.reply as { error?: { code?: unknown } }).error?.code;
      return { status: code === RPC.methodNotFound ? 404 : 400, body: checked.reply };
    }
    call.body = checked.body;
    call.requests = checked.requests;
    return undefined;
  };
}

/** Scopes, for every request in the body (a batch included): 403 the client can step up from. */
export function scopesHeld(
  options: Pick<AuthHooks, 'requiredScope' | 'onScopeDenied' | 'authenticator'>,
): Guard {
  return ({ requests, principal, peer }) => {
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
      return {
        status: 403,
        body: { error: outcome.error, error_description: outcome.description, scope: need.scope },
        headers: {
          'www-authenticate':
            options.authenticator?.challenge(outcome) ??
            `Bearer error="insufficient_scope", scope="${need.scope}"`,
        },
      };
    }
    return undefined;
  };
}

/** A count of open requests of one kind, against its cap. */
export interface Slots {
  readonly count: number;
  /** Takes a slot until `res` closes. */
  enter(res: ServerResponse): void;
}

/**
 * The global caps (429). A subscriptions/listen stream lives until the client leaves: it takes
 * a slot of its own cap, not of the in-flight one, and does not hold up a drain. Decided from
 * the body, not Mcp-Method: a body with anything else in it is in flight.
 */
export function underInflightCap(
  max: number,
  inflight: Slots,
  subscriptions: { max: number; slots: Slots },
): Guard {
  return ({ requests, res }) => {
    // Notifications and responses only: answered at once (202), nothing to count.
    if (requests.length === 0) return undefined;
    const stream = requests.every((r) => r.method === 'subscriptions/listen');
    const [cap, slots] = stream ? [subscriptions.max, subscriptions.slots] : [max, inflight];
    if (slots.count >= cap) {
      return {
        status: 429,
        body: rpcError(
          stream
            ? 'Too Many Requests: the server holds as many subscription streams as it may'
            : 'Too Many Requests: the server is at capacity',
        ),
        headers: { 'retry-after': '1' },
      };
    }
    slots.enter(res);
    return undefined;
  };
}
