import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpFake, cursorPages, linkPages, offsetPages, readJson } from '../src/index.js';
import type { ResponseValidator } from '../src/index.js';

// The framework vendor fakes are built on, with a small vendor of its own ("Acme"): its world
// is a list of things, its errors `{ error: { message } }`, its rate limit a 429 with Retry-After.

const things: Array<{ id: number; name: string }> = [{ id: 1, name: 'first' }];
let fake: HttpFake<{ user: string }>;
let url: string;

beforeAll(async () => {
  fake = new HttpFake({
    prefix: '/v1',
    authenticate: (req) =>
      req.headers.authorization === 'Bearer good' ? { user: 'bot' } : undefined,
    errorBody: (status, message) => ({ error: { status, message } }),
    headers: (meta) => ({ 'x-acme-route': meta.route }),
    rateLimitReply: (failure) => ({
      message: 'slow down',
      headers: { 'retry-after': String(failure.retryAfter ?? 30) },
    }),
  });
  fake.route('GET', '/things/{id}', ({ res, meta, params, cred }) => {
    const thing = things.find((t) => t.id === Number(params[0]));
    if (thing === undefined) return fake.error(res, meta, 404, 'no such thing');
    fake.send(res, meta, 200, { ...thing, seenBy: cred.user });
  });
  fake.route('POST', '/things', async ({ req, res, meta }) => {
    const body = await readJson(req);
    const thing = { id: things.length + 1, name: String(body.name) };
    things.push(thing);
    fake.send(res, meta, 201, thing);
  });
  url = await fake.listen();
});
afterAll(() => fake.close());

const call = (path: string, init: RequestInit = {}) =>
  fetch(`${url}${path}`, {
    ...init,
    headers: { authorization: 'Bearer good', 'content-type': 'application/json' },
  });

describe('HttpFake', () => {
  it('routes by template, logs the request and captures the response with its template', async () => {
    const before = fake.requests.length;
    const response = await call('/things/1?expand=all');
    expect(response.status).toBe(200);
    expect(response.headers.get('x-acme-route')).toBe('/things/{id}');
    expect(await response.json()).toEqual({ id: 1, name: 'first', seenBy: 'bot' });
    expect(fake.requests.slice(before)).toEqual(['GET /v1/things/1?expand=all']);
    expect(fake.responses.at(-1)).toMatchObject({
      method: 'GET',
      route: '/things/{id}',
      status: 200,
    });
  });

  it('answers the vendor’s way without credentials and for unknown paths', async () => {
    const anonymous = await fetch(`${url}/things/1`);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toEqual({ error: { status: 401, message: 'Bad credentials' } });
    const unknown = await call('/nothing/here');
    expect(unknown.status).toBe(404);
  });

  it('injects failures: a status with Retry-After, a number of times, then normal again', async () => {
    fake.fail({ match: 'GET /things/1', status: 503, retryAfter: 9, times: 2 });
    for (let i = 0; i < 2; i++) {
      const failed = await call('/things/1');
      expect(failed.status).toBe(503);
      expect(failed.headers.get('retry-after')).toBe('9');
    }
    expect((await call('/things/1')).status).toBe(200);
  });

  it('injects the vendor’s rate limit', async () => {
    fake.fail({ match: 'GET /things/*', status: 429, rateLimit: 'any', retryAfter: 4 });
    const limited = await call('/things/1');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('4');
    expect(await limited.json()).toEqual({ error: { status: 429, message: 'slow down' } });
  });

  it('answers slowly without failing (a delay that is no error)', async () => {
    fake.fail({ match: 'GET /things/1', status: 200, delayMs: 150 });
    const started = performance.now();
    const slow = await call('/things/1');
    expect(slow.status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
  });

  it('applies a write and loses its answer', async () => {
    const count = things.length;
    const captured = fake.responses.length;
    fake.fail({ match: 'POST /things', status: 502, afterEffect: true });
    const lost = await call('/things', {
      method: 'POST',
      body: JSON.stringify({ name: 'second' }),
    });
    expect(lost.status).toBe(502);
    expect(things).toHaveLength(count + 1);
    expect(things.at(-1)!.name).toBe('second');
    // Only the 502 was sent, so only the 502 is captured for validation.
    expect(fake.responses.slice(captured).map((r) => r.status)).toEqual([502]);
  });

  it('hands the captured responses to a pluggable validator', () => {
    const shapes: ResponseValidator = (responses) =>
      responses
        .filter((r) => r.route === '/things/{id}' && r.status === 200)
        .filter((r) => typeof (r.body as { name?: unknown }).name !== 'string')
        .map((r) => `${r.method} ${r.route}: name is not a string`);
    expect(shapes(fake.responses)).toEqual([]);
    expect(shapes([{ method: 'GET', route: '/things/{id}', status: 200, body: {} }])).toEqual([
      'GET /things/{id}: name is not a string',
    ]);
  });
});

describe('pagination helpers', () => {
  const items = Array.from({ length: 7 }, (_, i) => i + 1);

  it('pages by number with a Link header (GitHub)', () => {
    const first = linkPages(
      new URL('http://x/v1/things?per_page=3&state=open'),
      'http://x/v1',
      items,
      {
        pathPrefix: '/v1',
      },
    );
    expect(first.page).toEqual([1, 2, 3]);
    expect(first.headers.link).toContain(
      '<http://x/v1/things?per_page=3&state=open&page=2>; rel="next"',
    );
    expect(first.headers.link).toContain('page=3>; rel="last"');
    const last = linkPages(new URL('http://x/v1/things?per_page=3&page=3'), 'http://x/v1', items, {
      pathPrefix: '/v1',
    });
    expect(last.page).toEqual([7]);
    expect(last.headers.link).not.toContain('rel="next"');
  });

  it('pages by opaque cursor (Slack): an empty next_cursor ends it', () => {
    const seen: number[] = [];
    let cursor: string | undefined;
    do {
      const { page, next_cursor } = cursorPages(items, cursor, 3);
      seen.push(...page);
      cursor = next_cursor;
    } while (cursor !== '');
    expect(seen).toEqual(items);
  });

  it('pages by offset (Jira): startAt, maxResults, total, isLast', () => {
    expect(offsetPages(items, 0, 5)).toMatchObject({
      page: [1, 2, 3, 4, 5],
      total: 7,
      isLast: false,
    });
    expect(offsetPages(items, 5, 5)).toMatchObject({ page: [6, 7], startAt: 5, isLast: true });
  });
});
