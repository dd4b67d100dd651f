import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * A loopback HTTP fake of a vendor API, for tests that drive the vendor's real client: a route
 * table with the vendor's path templates, a log of every request, every response captured with
 * its template (for validating the bodies against the vendor's published shapes), and failure
 * injection — statuses, rate limits with the vendor's headers, delays that are not errors, and
 * "the write happened but the answer was lost". A vendor fake (GitHub, Slack, Jira) adds its
 * world model, its routes and its error and rate-limit shapes.
 */

/** A canned failure for the next matching request(s). */
export interface FakeFailure {
  /** Only requests whose method and path match (`GET /repos/acme/api/issues`, `*` prefix ok). */
  match?: string;
  status: number;
  /** A rate limit of the vendor's kind (`primary`, `secondary`, `ratelimited`…). */
  rateLimit?: string;
  /** Seconds in a `retry-after` header (with a rate limit, or on any error status). */
  retryAfter?: number;
  /** How many matching requests fail (default 1). */
  times?: number;
  /**
   * Wait this long before answering (for timeouts); the request still takes effect. With a
   * status below 400 the request is then answered normally: a slow answer that is no error.
   */
  delayMs?: number;
  /** Apply the request (e.g. create the issue) before failing, as a timed-out write does. */
  afterEffect?: boolean;
  /** The error's message (default: the vendor's for the status). */
  message?: string;
  /**
   * Answer with this redirect instead (`status` 301, 302, 303, 307 or 308): the `Location`, as
   * given (an absolute URL, or a path on the fake). The request takes no effect.
   */
  redirect?: string;
  /**
   * Answer with this body and content type instead (a proxy's HTML page, a captive portal's
   * answer), with `status`. The request takes no effect.
   */
  page?: { contentType: string; body: string };
}

/** One response the fake sent, for validation against the vendor's shapes. */
export interface FakeResponse {
  method: string;
  /** The vendor's path template (`/repos/{owner}/{repo}/issues`, `/chat.postMessage`). */
  route: string;
  status: number;
  body: unknown;
}

/** Checks the captured responses against the vendor's shapes; one line per problem. */
export type ResponseValidator = (responses: readonly FakeResponse[]) => string[];

/** Where a response goes: the request's method and route template. */
export interface FakeMeta {
  readonly method: string;
  readonly route: string;
}

/** What a route handler gets. */
export interface RouteContext<C> {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  /** The template's parameters, in order, URL-encoded as sent. */
  readonly params: string[];
  /** Who is calling (from the vendor's `authenticate`). */
  readonly cred: C;
  readonly meta: FakeMeta;
}

export type RouteHandler<C> = (ctx: RouteContext<C>) => Promise<void> | void;

/** Where a route answers and whom. */
interface RouteOptions {
  /** Callers without API credentials too. */
  readonly anonymous?: boolean;
  /** At the server's root, not below the API's prefix. */
  readonly root?: boolean;
}

/** The vendor's part of a fake. */
export interface HttpFakeOptions<C> {
  /** Mount the API below this path (`/api/v3` as on GitHub Enterprise Server). */
  prefix?: string;
  /** Who is calling; undefined answers `unauthorized`. */
  authenticate: (req: IncomingMessage) => C | undefined | Promise<C | undefined>;
  /** The vendor's error body. */
  errorBody: (status: number, message: string) => unknown;
  /** The vendor's message for an injected failure of this status. */
  failureMessage?: (status: number) => string;
  /** Headers on every answer (request ids, rate-limit counters). */
  headers?: (meta: FakeMeta) => Record<string, string>;
  /** The vendor's answer to an injected rate limit (status, message, headers). */
  rateLimitReply?: (failure: FakeFailure) => { message: string; headers: Record<string, string> };
  /**
   * The answer to a request without valid credentials: its status (default 401) and message
   * (default `Bad credentials`), which may depend on the request (an expired token's own code).
   */
  unauthorized?: string | ((req: IncomingMessage) => string);
  unauthorizedStatus?: number;
  /** Where a route spans slashes (`{path}` of GitHub's contents API). */
  multiSegment?: readonly string[];
  /**
   * The API path a request's path stands for, before routes are matched (a gateway's
   * `/ex/jira/{cloudId}/rest/…` for the site's `/rest/…`); undefined leaves it as it is.
   */
  rewrite?: (path: string) => string | undefined;
}

/** A running fake: the framework's half. */
export class HttpFake<C> {
  /** Every request, as `METHOD /path?query`. */
  readonly requests: string[] = [];
  readonly responses: FakeResponse[] = [];
  readonly #routes: Array<{
    method: string;
    pattern: RegExp;
    route: string;
    handle: RouteHandler<C>;
    options: RouteOptions;
  }> = [];
  readonly #failures: FakeFailure[] = [];
  readonly #server = createServer((req, res) => {
    this.#serve(req, res).catch((err: unknown) => {
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ message: `fake error: ${String(err)}` }));
      }
    });
  });
  #base = '';

  constructor(private readonly options: HttpFakeOptions<C>) {}

  /** The API's base URL (with the prefix), once listening. */
  get url(): string {
    return this.#base;
  }

  /** Adds a route: `{name}` is one path segment (or more, for the names of `multiSegment`). */
  route(method: string, template: string, handle: RouteHandler<C>): void {
    this.#add(method, template, handle as RouteHandler<C | undefined>, {});
  }

  /**
   * Adds a route that answers callers without API credentials (its handler checks what the
   * vendor checks there: a browser session, client credentials in the body), at the server's
   * root unless `underPrefix` — a vendor's sign-in pages live beside its API, not below it.
   */
  anonymousRoute(
    method: string,
    template: string,
    handle: RouteHandler<C | undefined>,
    options: { underPrefix?: boolean } = {},
  ): void {
    this.#add(method, template, handle, { anonymous: true, root: options.underPrefix !== true });
  }

  #add(
    method: string,
    template: string,
    handle: RouteHandler<C | undefined>,
    options: RouteOptions,
  ): void {
    let source = template;
    for (const name of this.options.multiSegment ?? [])
      source = source.replace(`{${name}}`, '(.+)');
    const pattern = new RegExp(`^${source.replace(/\{[^/}]+\}/g, '([^/]+)')}$`);
    this.#routes.push({
      method,
      pattern,
      route: template,
      handle: handle,
      options,
    });
  }

  /** Queues a failure for the next matching request(s). */
  fail(failure: FakeFailure): void {
    this.#failures.push({ ...failure });
  }

  /** Drops every failure still queued. */
  clearFailures(): void {
    this.#failures.splice(0);
  }

  /** Sends a JSON answer and captures it. */
  send(
    res: ServerResponse,
    meta: FakeMeta,
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
  ): void {
    this.responses.push({ method: meta.method, route: meta.route, status, body });
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      ...this.options.headers?.(meta),
      ...headers,
    });
    res.end(body === undefined ? '' : JSON.stringify(body));
  }

  /** Sends the vendor's error body. */
  error(
    res: ServerResponse,
    meta: FakeMeta,
    status: number,
    message: string,
    extra: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ): void {
    const body = this.options.errorBody(status, message);
    this.send(res, meta, status, { ...(body as object), ...extra }, headers);
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    const { port } = this.#server.address() as { port: number };
    this.#base = `http://127.0.0.1:${port}${this.options.prefix ?? ''}`;
    return this.#base;
  }

  close(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#server.closeAllConnections();
      this.#server.close(() => resolve());
    });
  }

  async #serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const prefix = this.options.prefix ?? '';
    const url = new URL(req.url ?? '/', this.#base || 'http://127.0.0.1');
    const method = req.method ?? 'GET';
    this.requests.push(`${method} ${url.pathname}${url.search}`);
    const prefixed = url.pathname.startsWith(prefix) ? url.pathname.slice(prefix.length) : '';
    const apiPath = this.options.rewrite?.(prefixed) ?? prefixed;
    const found = this.#routes.find(
      (r) =>
        r.method === method && r.pattern.test(r.options.root === true ? url.pathname : apiPath),
    );
    const path = found?.options.root === true ? url.pathname : apiPath;
    const meta = { method, route: found?.route ?? path };
    if (found === undefined) return this.error(res, meta, 404, 'Not Found');
    const failure = this.#failures.find(
      (f) => f.match === undefined || `${method} ${path}`.startsWith(f.match.replace(/\*$/, '')),
    );
    const cred = await this.options.authenticate(req);
    const params = [...found.pattern.exec(path)!].slice(1);
    const { unauthorized: said = 'Bad credentials', unauthorizedStatus = 401 } = this.options;
    const unauthorized = () =>
      this.error(res, meta, unauthorizedStatus, typeof said === 'string' ? said : said(req));
    if (failure === undefined) {
      if (cred === undefined && found.options.anonymous !== true) return unauthorized();
      return found.handle({ req, res, url, params, cred: cred as C, meta });
    }
    failure.times = (failure.times ?? 1) - 1;
    if (failure.times <= 0) this.#failures.splice(this.#failures.indexOf(failure), 1);
    if (failure.afterEffect === true && cred !== undefined) {
      // The write happens; only its answer is lost (a timeout or a 502 after the fact).
      const sink = { writeHead: () => sink, end: () => undefined, headersSent: false };
      const sent = this.responses.length;
      await found.handle({ req, res: sink as unknown as ServerResponse, url, params, cred, meta });
      this.responses.splice(sent);
    }
    if (failure.delayMs !== undefined) await new Promise((r) => setTimeout(r, failure.delayMs));
    if (failure.redirect !== undefined) {
      res.writeHead(failure.status, { location: failure.redirect, 'content-type': 'text/html' });
      res.end(`<a href="${failure.redirect}">Moved</a>`);
      return;
    }
    if (failure.page !== undefined) {
      res.writeHead(failure.status, { 'content-type': failure.page.contentType });
      res.end(failure.page.body);
      return;
    }
    if (failure.status < 400) {
      // Slow, not failed: answered normally once the delay is over (if anyone still waits).
      if (res.destroyed || req.destroyed) return;
      if (cred === undefined && found.options.anonymous !== true) return unauthorized();
      return found.handle({ req, res, url, params, cred: cred as C, meta });
    }
    if (failure.rateLimit !== undefined && this.options.rateLimitReply !== undefined) {
      const { message, headers } = this.options.rateLimitReply(failure);
      return this.error(res, meta, failure.status, message, {}, headers);
    }
    return this.error(
      res,
      meta,
      failure.status,
      failure.message ??
        this.options.failureMessage?.(failure.status) ??
        'Failure injected by the test',
      {},
      failure.retryAfter === undefined ? {} : { 'retry-after': String(failure.retryAfter) },
    );
  }
}

/** Reads a JSON request body (`{}` when empty). */
export async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
}

/**
 * Page-numbered pagination with an RFC 8288 Link header (GitHub): `page` and `per_page` from the
 * query, next/last/first/prev links on `base` with the rest of the query kept.
 */
export function linkPages<T>(
  url: URL,
  base: string,
  items: readonly T[],
  options: { defaultPerPage?: number; maxPerPage?: number; pathPrefix?: string } = {},
): { page: T[]; headers: Record<string, string> } {
  const max = options.maxPerPage ?? 100;
  const perPage = Math.min(
    max,
    Math.max(1, Number(url.searchParams.get('per_page') ?? options.defaultPerPage ?? 30)),
  );
  const pageNo = Math.max(1, Number(url.searchParams.get('page') ?? 1));
  const last = Math.max(1, Math.ceil(items.length / perPage));
  const link = (p: number, rel: string) => {
    const target = new URL(`${base}${url.pathname.slice((options.pathPrefix ?? '').length)}`);
    for (const [k, v] of url.searchParams) target.searchParams.set(k, v);
    target.searchParams.set('page', String(p));
    return `<${target.href}>; rel="${rel}"`;
  };
  const links: string[] = [];
  if (pageNo < last) links.push(link(pageNo + 1, 'next'), link(last, 'last'));
  if (pageNo > 1) links.push(link(1, 'first'), link(pageNo - 1, 'prev'));
  return {
    page: items.slice((pageNo - 1) * perPage, pageNo * perPage),
    headers: links.length === 0 ? {} : { link: links.join(', ') },
  };
}

/**
 * Opaque-cursor pagination (Slack): `cursor` is where the page starts; `next_cursor` is empty on
 * the last page.
 */
export function cursorPages<T>(
  items: readonly T[],
  cursor: string | null | undefined,
  limit: number,
): { page: T[]; next_cursor: string } {
  const start = cursor
    ? Number(Buffer.from(cursor, 'base64url').toString('utf8').slice(5)) || 0
    : 0;
  const end = start + Math.max(1, limit);
  return {
    page: items.slice(start, end),
    next_cursor: end < items.length ? Buffer.from(`next:${end}`).toString('base64url') : '',
  };
}

/** Offset pagination (Jira): `startAt`, `maxResults`, `total`, `isLast`. */
export function offsetPages<T>(
  items: readonly T[],
  startAt: number,
  maxResults: number,
): { page: T[]; startAt: number; maxResults: number; total: number; isLast: boolean } {
  const from = Math.max(0, startAt);
  const page = items.slice(from, from + Math.max(1, maxResults));
  return {
    page,
    startAt: from,
    maxResults,
    total: items.length,
    isLast: from + page.length >= items.length,
  };
}
