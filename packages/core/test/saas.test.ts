import {
  ConfigError,
  PolicyError,
  UpstreamError,
  loadConfig,
  baseConfigSchema,
  defineTool,
} from '@gatehouse/core';
import {
  Pacer,
  RequestTimeoutError,
  TargetScope,
  createUpstreamErrors,
  dedupeKey,
  mayWait,
  postOnce,
  retryAfterSeconds,
  timedFetch,
  writesEnabled,
} from '@gatehouse/core/saas';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as z from 'zod';
import { describe, expect, it } from 'vitest';

// The SaaS kit on its own: what every vendor server gets from it, vendor by vendor the same.

const toUpstream = createUpstreamErrors({
  service: 'Acme',
  timeoutVariable: 'ACME_REQUEST_TIMEOUT_MS',
  requestIdHeader: 'x-request-id',
  reset: { remaining: 'x-ratelimit-remaining', reset: 'x-ratelimit-reset', format: 'date' },
  notFound: 'no such project, or this server cannot see it',
  fieldErrors: (data) =>
    Object.entries((data as { errors?: Record<string, string> }).errors ?? {}).map(
      ([field, problem]) => `${field}: ${problem}`,
    ),
  classify: ({ status, data }) =>
    status === 200 && (data as { ok?: boolean }).ok === false
      ? { status: 404, message: 'channel_not_found' }
      : undefined,
});
const failure = (status: number | undefined, extra: Record<string, unknown> = {}) =>
  toUpstream({ status, cause: new Error('boom'), ...extra });

describe('createUpstreamErrors: one mapping, told about a vendor', () => {
  it.each([
    [
      401,
      {},
      "Acme answered 401 (the server credentials were rejected): Acme rejected this server's credentials; the operator must renew them",
    ],
    [
      403,
      { data: { message: 'needs admin' } },
      "Acme answered 403 (access denied): needs admin (this server's credentials lack the permission)",
    ],
    [404, {}, 'Acme answered 404 (not found): no such project, or this server cannot see it'],
    [
      400,
      {
        data: { errorMessages: ['Bad field'], errors: { summary: 'required', labels: 'too many' } },
      },
      'Acme answered 400 (the request was invalid): Bad field: summary: required; labels: too many',
    ],
    [429, { headers: { 'retry-after': '7' } }, 'Acme rate limit reached. Retry after 7s.'],
    [
      503,
      { data: { message: 'internal detail at db-7' } },
      'Acme failed (503); this is not caused by your request. Try again later.',
    ],
    [
      undefined,
      { message: 'connect ECONNREFUSED' },
      'Acme failed (503); this is not caused by your request. Try again later.',
    ],
    [
      200,
      { data: { ok: false, error: 'channel_not_found' } },
      'Acme answered 404 (not found): channel_not_found',
    ],
  ] as const)('status %s → what the model reads', (status, extra, text) => {
    expect(failure(status, extra).toolMessage()).toBe(text);
  });

  it('keeps the request id for the audit trail, never the detail of a 5xx for the model', () => {
    const error = failure(502, {
      headers: { 'x-request-id': 'REQ-1' },
      data: { message: 'stack…' },
    });
    expect(error).toBeInstanceOf(UpstreamError);
    expect(error.requestId).toBe('REQ-1');
    expect(error.toolMessage()).not.toContain('stack');
  });

  it('names the timeout variable when a request timed out', () => {
    const error = toUpstream({ cause: new RequestTimeoutError(2_500) });
    expect(error.toolMessage()).toBe(
      'Acme failed (504): it did not answer within 2.5 s (ACME_REQUEST_TIMEOUT_MS); this is not caused by your request. Try again later.',
    );
  });

  it('passes an error that is already an UpstreamError through', () => {
    const mapped = failure(404);
    expect(toUpstream({ cause: mapped })).toBe(mapped);
  });
});

describe('rate limits', () => {
  const now = Date.parse('2026-12-01T12:00:00Z');
  it('reads Retry-After in seconds or as an HTTP date, and an exhausted quota’s reset', () => {
    expect(retryAfterSeconds({ 'retry-after': '2.2' })).toBe(3);
    expect(
      retryAfterSeconds({ 'retry-after': 'Tue, 01 Dec 2026 12:00:30 GMT' }, undefined, now),
    ).toBe(30);
    const epoch = { remaining: 'x-remaining', reset: 'x-reset', format: 'epoch-seconds' } as const;
    expect(
      retryAfterSeconds({ 'x-remaining': '0', 'x-reset': String(now / 1000 + 90) }, epoch, now),
    ).toBe(90);
    expect(
      retryAfterSeconds({ 'x-remaining': '5', 'x-reset': String(now / 1000 + 90) }, epoch, now),
    ).toBeUndefined();
    const iso = { remaining: 'x-remaining', reset: 'x-reset', format: 'date' } as const;
    expect(
      retryAfterSeconds({ 'x-remaining': '0', 'x-reset': '2026-12-01T12:01:00Z' }, iso, now),
    ).toBe(60);
    expect(retryAfterSeconds({ 'retry-after': 'soon' })).toBeUndefined();
  });

  it('waits only when the wait ends before the deadline (with a margin), and only once', () => {
    expect(mayWait(2, { deadline: now + 10_000, waited: 0, now })).toBe(true);
    expect(mayWait(2, { deadline: now + 2_400, waited: 0, now })).toBe(false);
    expect(mayWait(2, { deadline: now + 10_000, waited: 1, now })).toBe(false);
    expect(mayWait(120, { waited: 0 })).toBe(true);
  });

  it('paces a group, never past the deadline, and leaves other groups alone', async () => {
    const pacer = new Pacer({ write: 200 });
    const signal = new AbortController().signal;
    expect(await pacer.wait('write', signal)).toBe(true);
    expect(await pacer.wait('read', signal)).toBe(true);
    // The next write may start 200 ms after the first; a deadline before that refuses at once.
    expect(await pacer.wait('write', signal, Date.now() + 50)).toBe(false);
    const before = performance.now();
    expect(await pacer.wait('write', signal, Date.now() + 5_000)).toBe(true);
    expect(performance.now() - before).toBeGreaterThan(100);
  });

  it('stops a paced wait when the call is cancelled', async () => {
    const pacer = new Pacer({ write: 10_000 });
    const controller = new AbortController();
    await pacer.wait('write', controller.signal);
    const waiting = pacer.wait('write', controller.signal);
    controller.abort(new Error('cancelled'));
    await expect(waiting).rejects.toThrow('cancelled');
  });
});

describe('timedFetch', () => {
  it('ends a slow answer at its own timeout, whatever the caller’s signal', async () => {
    const server = createServer((_req, res) => setTimeout(() => res.end('late'), 5_000));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const fetchOnce = timedFetch(200);
      await expect(fetchOnce(`http://127.0.0.1:${port}/`)).rejects.toBeInstanceOf(
        RequestTimeoutError,
      );
      // The caller's own cancellation stays the caller's: not reported as a timeout.
      const controller = new AbortController();
      const pending = fetchOnce(`http://127.0.0.1:${port}/`, { signal: controller.signal });
      controller.abort();
      await expect(pending).rejects.not.toBeInstanceOf(RequestTimeoutError);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});

describe('timedFetch: redirects and answers that are not JSON', () => {
  /** A server answering each path as the table says. */
  async function vendor(
    routes: Record<string, { status: number; headers?: Record<string, string>; body?: string }>,
  ) {
    const hits: string[] = [];
    const server = createServer((req, res) => {
      hits.push(`${req.method} ${req.url}`);
      const route = routes[req.url ?? ''] ?? { status: 404, body: '{}' };
      res.writeHead(route.status, { 'content-type': 'application/json', ...route.headers });
      res.end(route.body ?? '');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return { base, hits, close: () => (server.closeAllConnections(), server.close()) };
  }

  it('follows a read only where the rules allow, never a write, at most three times', async () => {
    const v = await vendor({
      '/a': { status: 301, headers: { location: '/allowed' } },
      '/b': { status: 307, headers: { location: '/elsewhere' } },
      '/allowed': { status: 200, body: '{"ok":true}' },
      '/loop': { status: 302, headers: { location: '/loop' } },
    });
    try {
      const followRead = (to: URL) => to.pathname === '/allowed' || to.pathname === '/loop';
      const rules = timedFetch(2_000, fetch, { followRead });
      expect(await (await rules(`${v.base}/a`)).json()).toEqual({ ok: true });
      await expect(rules(`${v.base}/b`)).rejects.toMatchObject({ status: 307, write: false });
      await expect(rules(`${v.base}/a`, { method: 'POST', body: '{}' })).rejects.toMatchObject({
        name: 'RedirectRefusedError',
        write: true,
      });
      await expect(rules(`${v.base}/loop`)).rejects.toMatchObject({ status: 302 });
      // Without rules, nothing is followed.
      await expect(timedFetch(2_000)(`${v.base}/a`)).rejects.toMatchObject({ status: 301 });
      expect(v.hits.filter((h) => h.endsWith('/elsewhere'))).toEqual([]);
      expect(v.hits.filter((h) => h === 'POST /allowed')).toEqual([]);
    } finally {
      v.close();
    }
  });

  it('reads no answer that is not JSON, but lets an empty one and a 204 through', async () => {
    const v = await vendor({
      '/html': {
        status: 200,
        headers: { 'content-type': 'text/html' },
        body: '<script>x</script>',
      },
      '/empty': { status: 201, headers: { 'content-type': '' } },
      '/none': { status: 204 },
      '/vendor': {
        status: 200,
        headers: { 'content-type': 'application/vnd.github+json' },
        body: '[]',
      },
    });
    try {
      const get = timedFetch(2_000);
      await expect(get(`${v.base}/html`)).rejects.toMatchObject({
        name: 'UnexpectedAnswerError',
        message: expect.stringMatching(/answered 200 with text\/html instead of JSON/) as unknown,
      });
      expect((await get(`${v.base}/empty`, { method: 'PUT' })).status).toBe(201);
      expect((await get(`${v.base}/none`)).status).toBe(204);
      expect(await (await get(`${v.base}/vendor`)).json()).toEqual([]);
      // The error the model gets names the status and the type, never the body.
      const mapped = toUpstream({ cause: await get(`${v.base}/html`).catch((e: unknown) => e) });
      expect(mapped.toolMessage()).toMatch(/instead of JSON/);
      expect(mapped.toolMessage()).not.toContain('script');
    } finally {
      v.close();
    }
  });
});

describe('postOnce', () => {
  const signal = new AbortController().signal;
  it('returns what an identical earlier write made, and sends nothing', async () => {
    let posts = 0;
    const result = await postOnce(
      signal,
      async () => 'earlier',
      async () => `new-${++posts}`,
    );
    expect(result).toEqual({ value: 'earlier', deduplicated: true, recovered: false });
    expect(posts).toBe(0);
  });

  it('looks again when the answer was lost, and reports a real failure mapped', async () => {
    const made: string[] = [];
    const lost = await postOnce(
      signal,
      async () => made[0],
      async () => {
        made.push('created');
        throw Object.assign(new Error('socket hang up'), { status: 502 });
      },
    );
    expect(lost).toEqual({ value: 'created', deduplicated: false, recovered: true });
    const refused = postOnce(
      signal,
      async () => undefined,
      async () => {
        throw Object.assign(new Error('invalid'), { status: 422 });
      },
      { mapError: () => new Error('mapped: invalid') },
    );
    await expect(refused).rejects.toThrow('mapped: invalid');
  });

  it('a failing look for an earlier write refuses by default, or writes and says why', async () => {
    const lookup = async (): Promise<string | undefined> => {
      throw Object.assign(new Error('search is down'), { status: 503 });
    };
    let posts = 0;
    const post = async () => `new-${++posts}`;
    await expect(postOnce(signal, lookup, post)).rejects.toThrow('search is down');
    expect(posts).toBe(0);
    const went = await postOnce(signal, lookup, post, { onLookupFailure: 'post' });
    expect(went).toEqual({
      value: 'new-1',
      deduplicated: false,
      recovered: false,
      unchecked: 'search is down',
    });
  });

  it('a refusal from the lookup is never posted past, and a patient recovery finds a lagging write', async () => {
    let posts = 0;
    const post = async () => `new-${++posts}`;
    const refusing = async (): Promise<string | undefined> => {
      throw new PolicyError('unsettled', 'an earlier identical write may still appear');
    };
    await expect(postOnce(signal, refusing, post, { onLookupFailure: 'post' })).rejects.toThrow(
      PolicyError,
    );
    expect(posts).toBe(0);
    const looks: string[] = [];
    const lagging = await postOnce(
      signal,
      async () => {
        looks.push('find');
        return undefined;
      },
      async () => {
        throw Object.assign(new Error('timeout'), { status: 504 });
      },
      {
        recover: async () => {
          looks.push('recover');
          return 'made';
        },
      },
    );
    expect(lagging).toEqual({ value: 'made', deduplicated: false, recovered: true });
    expect(looks).toEqual(['find', 'recover']);
  });

  it('derives the same key from the same content only', () => {
    expect(dedupeKey({ who: 'a', body: 'x' })).toBe(dedupeKey({ who: 'a', body: 'x' }));
    expect(dedupeKey({ who: 'a', body: 'x' })).not.toBe(dedupeKey({ who: 'b', body: 'x' }));
  });
});

describe('TargetScope', () => {
  const scope = (configured: string[], allowTargets: string[] = []) =>
    new TargetScope({
      kind: 'acme',
      variable: 'ACME_PROJECTS',
      noun: 'project',
      configured,
      allowTargets,
      canonical: (name) => (/^[a-z]+(\/[a-z]+)?$/i.test(name) ? name : undefined),
      caseInsensitive: true,
    });

  it('is the configured reach, narrowed by the allow-list, compared case-insensitively', () => {
    const s = scope(['ops', 'web', 'corp/*'], ['acme:ops', 'acme:corp/hr', 'acme:corp/it']);
    expect(s.names).toEqual(['ops', 'corp/hr', 'corp/it']);
    expect(s.dropped).toEqual(['web']);
    expect(s.allows('OPS')).toBe(true);
    expect(s.allows('web')).toBe(false);
    expect(s.allows('corp/hr')).toBe(true);
    expect(s.allows('corp/finance')).toBe(false);
    expect(s.describe()).toBe('ops, corp/hr, corp/it');
    expect(s.target('ops', '#12')).toBe('acme:ops#12');
  });

  it('keeps a whole parent the allow-list allows, and every target for a search', () => {
    const s = scope(['corp/*', 'ops']);
    expect(s.parents).toEqual(['corp']);
    expect(s.allows('corp/anything')).toBe(true);
    expect(s.targets()).toEqual(['acme:ops', 'acme:corp/*']);
  });

  it('refuses to start with nothing left, naming the variable', () => {
    expect(() => scope(['web'], ['acme:ops'])).toThrow(ConfigError);
    expect(() => scope(['web'], ['acme:ops'])).toThrow(
      /ACME_PROJECTS: no project is left inside GATEHOUSE_ALLOW_TARGETS/,
    );
  });
});

describe('writesEnabled', () => {
  const write = defineTool({
    name: 'acme_create',
    title: 'Create',
    description: 'Creates.',
    access: 'write',
    annotations: {
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: false,
      openWorldHint: true,
    },
    input: z.strictObject({ name: z.string().describe('Name.') }),
    toolset: 'things',
    handler: async () => 'ok',
  });
  const config = (env: Record<string, string>) => loadConfig(baseConfigSchema, env);
  it('follows the same policy that lists the tools', () => {
    expect(writesEnabled(config({}), [write])).toBe(false);
    expect(writesEnabled(config({ GATEHOUSE_ENABLE_WRITES: 'true' }), [write])).toBe(true);
    expect(writesEnabled(config({ GATEHOUSE_TOOLS_ENABLE: 'things' }), [write])).toBe(true);
    expect(
      writesEnabled(config({ GATEHOUSE_ENABLE_WRITES: 'true', GATEHOUSE_READ_ONLY: 'true' }), [
        write,
      ]),
    ).toBe(false);
  });
});
