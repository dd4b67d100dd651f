import { fileURLToPath } from 'node:url';
import { connectHttp, initializeRequest, spawnServer } from '@gatehouse/testkit';
import type { ServerProcess } from '@gatehouse/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { raw, rawSocket } from './raw-http.ts';
import { rawServer } from './raw-server.ts';

// The JSON-RPC front door, through real processes on both transports: every request whose id
// can be read gets exactly one answer in our words, anything else an answer with id null; the
// engine's own words (a stack overflow, the schema library's messages) never reach the client;
// a malformed message never ends the session.

const demoServer = fileURLToPath(new URL('./fixtures/demo-server.ts', import.meta.url));
const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'front-door', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
const INTERNAL = /Invalid input|expected .*, received|Maximum call stack|stack|zod|at Object\./i;

/** Requests the SDK's message schema refuses, with the answer each must get. */
const MALFORMED: Array<[string, Record<string, unknown>, { id: 'same' | null; code: number }]> = [
  [
    '_meta is a string',
    { method: 'tools/list', params: { _meta: 'x' } },
    { id: 'same', code: -32602 },
  ],
  [
    '_meta is a number',
    { method: 'tools/list', params: { _meta: 7 } },
    { id: 'same', code: -32602 },
  ],
  [
    '_meta is an array',
    { method: 'tools/list', params: { _meta: [] } },
    { id: 'same', code: -32602 },
  ],
  [
    '_meta is a boolean',
    { method: 'tools/list', params: { _meta: true } },
    { id: 'same', code: -32602 },
  ],
  [
    '_meta is null',
    { method: 'tools/list', params: { _meta: null } },
    { id: 'same', code: -32602 },
  ],
  [
    'a fractional progressToken',
    {
      method: 'tools/call',
      params: { name: 'demo_echo', arguments: { text: 'x' }, _meta: { progressToken: 1.5 } },
    },
    { id: 'same', code: -32602 },
  ],
  [
    'an object progressToken',
    {
      method: 'tools/call',
      params: { name: 'demo_echo', arguments: { text: 'x' }, _meta: { progressToken: {} } },
    },
    { id: 'same', code: -32602 },
  ],
  ['params is an array', { method: 'tools/list', params: [] }, { id: 'same', code: -32602 }],
  [
    'a __proto__ argument key',
    {
      method: 'tools/call',
      params: JSON.parse('{"name":"demo_echo","arguments":{"text":"x","__proto__":{"a":1}}}'),
    },
    { id: 'same', code: -32602 },
  ],
  [
    'a __proto__ prompt argument',
    {
      method: 'prompts/get',
      params: JSON.parse(
        '{"name":"demo_summarise","arguments":{"board":"general","__proto__":"x"}}',
      ),
    },
    { id: 'same', code: -32602 },
  ],
  ['an unsafe integer id', { method: 'tools/list', id: 1e300 }, { id: null, code: -32600 }],
  ['a fractional id', { method: 'tools/list', id: 1.5 }, { id: null, code: -32600 }],
  ['an object id', { method: 'tools/list', id: {} }, { id: null, code: -32600 }],
  ['no method', { params: {} }, { id: 'same', code: -32600 }],
  ['jsonrpc 1.0', { jsonrpc: '1.0', method: 'tools/list' }, { id: 'same', code: -32600 }],
];

/** Methods the 2026-07-28 revision removed: unknown methods to a request in that era. */
const REMOVED_IN_2026 = [
  'initialize',
  'ping',
  'logging/setLevel',
  'resources/subscribe',
  'resources/unsubscribe',
];

/** JSON text of a value nested `levels` arrays deep (built as text: stringifying it would overflow). */
const deep = (levels: number): string => `${'['.repeat(levels)}"bottom"${']'.repeat(levels)}`;

describe.each(['legacy', 'modern'] as const)('the stdio front door (%s era)', (era) => {
  const server = rawServer({ GATEHOUSE_PRINCIPAL: 'tester' });
  let nextId = 100;
  const meta = era === 'modern' ? { _meta: MODERN_META } : {};

  beforeAll(async () => {
    if (era === 'legacy') await server.handshake();
    else {
      server.send({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: meta });
      await server.waitForResponse(1);
    }
  });
  afterAll(async () => {
    server.child.stdin.end();
    expect((await server.exit)[0]).toBe(0);
  });

  /** Sends one line and returns every answer it got (waiting for the one we expect). */
  async function answersTo(line: string | Buffer, expectId: number | null) {
    const before = server.stdoutLines.length;
    server.sendLine(line);
    const answer = await server.waitForResponse(expectId, before);
    // Then a valid request, answered in order: nothing else came for the bad line.
    const probe = nextId++;
    server.send({ jsonrpc: '2.0', id: probe, method: 'ping', params: meta });
    await server.waitForResponse(probe, before);
    const answers = server.stdoutLines
      .slice(before)
      .map((l) => JSON.parse(l) as { id: unknown; error?: { code: number; message: string } })
      .filter((m) => m.id !== probe);
    return { answer: answer as { id: unknown; error: { code: number; message: string } }, answers };
  }

  it.each(MALFORMED)(
    'answers a request with %s exactly once, in its own words',
    async (_n, body, want) => {
      const id = nextId++;
      const { jsonrpc = '2.0', ...rest } = body;
      const message = { jsonrpc, id, ...rest };
      const params = (message as { params?: unknown }).params;
      if (
        era === 'modern' &&
        typeof params === 'object' &&
        params !== null &&
        !Array.isArray(params)
      ) {
        const p = params as Record<string, unknown>;
        if (!('_meta' in p)) p._meta = MODERN_META;
      }
      const expectId = want.id === 'same' && Number.isSafeInteger(message.id) ? id : null;
      const { answer, answers } = await answersTo(JSON.stringify(message), expectId);
      expect(answers).toHaveLength(1);
      expect(answer.error.code).toBe(want.code);
      expect(answer.error.message).not.toMatch(INTERNAL);
    },
  );

  // Unknown in any era: names of Object's members. Unknown in the 2026 era: removed methods.
  it.each([
    ...['constructor', 'toString', '__proto__', 'hasOwnProperty'],
    ...(era === 'modern' ? REMOVED_IN_2026 : []),
  ])('answers a request for the method %s as an unknown method (-32601)', async (method) => {
    const id = nextId++;
    const { answer, answers } = await answersTo(
      JSON.stringify({ jsonrpc: '2.0', id, method, params: meta }),
      id,
    );
    expect(answers).toHaveLength(1);
    expect(answer.error.code).toBe(-32601);
  });

  // Found by the fuzz: on a connection of the 2025 era, the same request (a 2026 claim, no
  // 2025 params) reached the legacy instance, which answered with the schema library's words.
  it.each(REMOVED_IN_2026.filter((m) => m !== 'ping'))(
    'answers %s with a 2026 claim and no 2025 params as an unknown method, in our words',
    async (method) => {
      const id = nextId++;
      const { answer, answers } = await answersTo(
        JSON.stringify({ jsonrpc: '2.0', id, method, params: { _meta: MODERN_META } }),
        id,
      );
      expect(answers).toHaveLength(1);
      expect(answer.error).toEqual({
        code: -32601,
        message: `Method not found: ${method} was removed in the 2026-07-28 revision`,
      });
    },
  );

  it('answers text that is not JSON with -32700 and id null', async () => {
    const { answer, answers } = await answersTo('{"jsonrpc":"2.0","id":', null);
    expect(answers).toHaveLength(1);
    expect(answer.error).toEqual({
      code: -32700,
      message: 'Parse error: the message is not valid JSON',
    });
  });

  it('answers a batch with -32600 and id null', async () => {
    const { answer } = await answersTo(
      JSON.stringify([{ jsonrpc: '2.0', id: 9, method: 'ping' }]),
      null,
    );
    expect(answer.error.code).toBe(-32600);
  });

  it('answers JSON nested 6000 levels deep with -32600 and the id, not the engine', async () => {
    const id = nextId++;
    const line = JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'demo_echo', arguments: { text: 'DEEP' }, ...meta },
    }).replace('"DEEP"', deep(6000));
    const { answer, answers } = await answersTo(line, id);
    expect(answers).toHaveLength(1);
    expect(answer.error.code).toBe(-32600);
    expect(answer.error.message).toBe(
      'Invalid Request: the message nests objects or arrays deeper than 64 levels',
    );
  });

  it('answers a line over the 10 MiB read limit with -32600 and keeps serving', async () => {
    const id = nextId++;
    const padding = 'x'.repeat(11 * 1024 * 1024);
    const line = `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"demo_echo","arguments":{"text":"${padding}"}}}`;
    const { answer, answers } = await answersTo(line, id);
    expect(answers).toHaveLength(1);
    expect(answer.error).toEqual({
      code: -32600,
      message: `Invalid Request: the message is larger than ${10 * 1024 * 1024} bytes`,
    });
    // The session is alive and still serves calls.
    const call = nextId++;
    server.send({
      jsonrpc: '2.0',
      id: call,
      method: 'tools/call',
      params: { name: 'demo_echo', arguments: { text: 'still here' }, ...meta },
    });
    expect(await server.waitForResponse(call)).toMatchObject({
      result: { content: [{ type: 'text', text: 'still here' }] },
    });
  });

  it('wrote nothing but JSON-RPC to stdout, and logged each refusal without the message', () => {
    for (const line of server.stdoutLines) {
      expect(JSON.parse(line)).toMatchObject({ jsonrpc: '2.0' });
    }
    const refusals = server
      .stderr()
      .split('\n')
      .filter((l) => l.includes('refused a malformed message'));
    expect(refusals.length).toBeGreaterThanOrEqual(MALFORMED.length);
    expect(server.stderr()).not.toContain('x'.repeat(1000));
  });
});

describe('the HTTP front door', () => {
  let server: ServerProcess;
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  };
  beforeAll(async () => {
    server = await spawnServer(process.execPath, [demoServer], {
      env: { GATEHOUSE_TRANSPORT: 'http', GATEHOUSE_PORT: '0' },
    });
  });
  afterAll(async () => {
    expect(await server.stop()).toBe(0);
  });

  it.each(['TRACE', 'PUT', 'PATCH', 'OPTIONS', 'PROPFIND'])(
    '%s /mcp is a 405 naming the allowed methods, never a 500',
    async (method) => {
      const { host, pathname } = server.url!;
      const response = await rawSocket(
        server.url!,
        `${method} ${pathname} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
      );
      expect(response.status).toBe(405);
      expect(response.headers.allow).toBe('GET, POST, DELETE');
    },
  );

  it('never logs a stack for a request a client got wrong', () => {
    expect(server.logs.some((l) => l.msg === 'unhandled error serving an MCP request')).toBe(false);
  });

  it.each(['Authorization', 'Host', 'Content-Type', 'Mcp-Method'])(
    'refuses a request with two %s headers (400)',
    async (name) => {
      const { host } = server.url!;
      const body = JSON.stringify(initializeRequest());
      const lines = [
        `POST ${server.url!.pathname} HTTP/1.1`,
        ...(name === 'Host' ? [`Host: ${host}`, 'Host: evil.example'] : [`Host: ${host}`]),
        ...(name === 'Authorization' ? ['Authorization: Bearer a', 'Authorization: Bearer b'] : []),
        ...(name === 'Content-Type'
          ? ['Content-Type: application/json', 'Content-Type: text/plain']
          : ['Content-Type: application/json']),
        ...(name === 'Mcp-Method' ? ['Mcp-Method: ping', 'Mcp-Method: tools/call'] : []),
        'Accept: application/json, text/event-stream',
        `Content-Length: ${Buffer.byteLength(body)}`,
        'Connection: close',
      ];
      const response = await rawSocket(server.url!, `${lines.join('\r\n')}\r\n\r\n${body}`);
      expect(response.status).toBe(400);
      expect(response.body).toContain(`the ${name.toLowerCase()} header appears more than once`);
    },
  );

  it.each(MALFORMED)(
    'answers a request with %s with 400 and one error in our words',
    async (_n, body, want) => {
      const message = { jsonrpc: '2.0', id: 41, ...body };
      const response = await raw(server.url!, { headers, body: JSON.stringify(message) });
      expect(response.status).toBe(400);
      const answer = JSON.parse(response.body) as {
        id: unknown;
        error: { code: number; message: string };
      };
      expect(answer.id).toBe(want.id === 'same' && Number.isSafeInteger(message.id) ? 41 : null);
      expect(answer.error.code).toBe(want.code);
      expect(answer.error.message).not.toMatch(INTERNAL);
    },
  );

  it('answers JSON nested 6000 levels deep with 400 and -32600 carrying the id', async () => {
    const body = JSON.stringify(initializeRequest(77)).replace(
      '"capabilities":{}',
      `"capabilities":{"x":${deep(6000)}}`,
    );
    const response = await raw(server.url!, { headers, body });
    expect(response.status).toBe(400);
    expect(JSON.parse(response.body)).toEqual({
      jsonrpc: '2.0',
      id: 77,
      error: {
        code: -32600,
        message: 'Invalid Request: the message nests objects or arrays deeper than 64 levels',
      },
    });
  });

  it.each(['constructor', 'toString', '__proto__', 'hasOwnProperty'])(
    'answers a request for the method %s like any unknown method (-32601)',
    async (method) => {
      const response = await raw(server.url!, {
        headers: { ...headers, 'mcp-protocol-version': '2025-11-25' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 6, method }),
      });
      const data = /^data: (.*)$/m.exec(response.body)?.[1] ?? response.body;
      expect(JSON.parse(data)).toMatchObject({ id: 6, error: { code: -32601 } });
    },
  );

  it.each(REMOVED_IN_2026)(
    'answers %s in the 2026 era with 404 and -32601, whatever its params',
    async (method) => {
      const response = await raw(server.url!, {
        headers: {
          ...headers,
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': method,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 5, method, params: { _meta: MODERN_META } }),
      });
      expect(response.status).toBe(404);
      expect(JSON.parse(response.body)).toMatchObject({ id: 5, error: { code: -32601 } });
    },
  );

  it('answers a batch with one bad message with one error per request', async () => {
    const body = JSON.stringify([
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: 'x' } },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
    ]);
    const response = await raw(server.url!, { headers, body });
    expect(response.status).toBe(400);
    const answers = JSON.parse(response.body) as Array<{ id: number; error: { code: number } }>;
    expect(answers.map((a) => [a.id, a.error.code]).sort()).toEqual([
      [1, -32600],
      [2, -32602],
    ]);
  });

  it('answers a request target it cannot parse with 400 and keeps serving', async () => {
    const response = await rawSocket(
      server.url!,
      `GET http://[::1 HTTP/1.1\r\nHost: ${server.url!.host}\r\nConnection: close\r\n\r\n`,
    );
    expect(response.status).toBe(400);
    const { client, close } = await connectHttp(server.url!);
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await close();
  });
});

describe('what counts as in flight is decided by the body, not the Mcp-Method header', () => {
  const started: ServerProcess[] = [];
  afterEach(async () => {
    for (const s of started.splice(0)) await s.stop('SIGKILL');
  });
  /** The demo server over HTTP with `env` on top (stopped after the test). */
  const start = async (env: Record<string, string>): Promise<ServerProcess> => {
    const server = await spawnServer(process.execPath, [demoServer], {
      env: { GATEHOUSE_TRANSPORT: 'http', GATEHOUSE_PORT: '0', ...env },
    });
    started.push(server);
    return server;
  };
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-11-25',
    // A lie: the body is a tools/call.
    'mcp-method': 'subscriptions/listen',
  };
  const slowCall = (ms: number) =>
    JSON.stringify({
      jsonrpc: '2.0',
      id: 5,
      method: 'tools/call',
      params: { name: 'demo_slow', arguments: { ms } },
    });

  it('a call that claims to be a subscription is drained on SIGTERM like any call', async () => {
    const server = await start({ GATEHOUSE_DRAIN_MS: '5000' });
    const call = raw(server.url!, { headers, body: slowCall(1_000) });
    await server.waitForLog((l) => l.msg === 'demo_slow started');
    server.child.kill('SIGTERM');
    const response = await call;
    expect(response.status).toBe(200);
    expect(response.body).toContain('waited 1000 ms');
    expect(await server.exited()).toBe(0);
    const stopped = await server.waitForLog((l) => l.msg === 'stopped');
    expect(stopped.drained).toBe(true);
  });

  it('and takes a slot under the in-flight cap (429 for the next)', async () => {
    const server = await start({ GATEHOUSE_MAX_INFLIGHT: '1' });
    const first = raw(server.url!, { headers, body: slowCall(800) });
    await server.waitForLog((l) => l.msg === 'demo_slow started');
    const second = await raw(server.url!, { headers, body: slowCall(10) });
    expect(second.status).toBe(429);
    expect(second.headers['retry-after']).toBe('1');
    expect((await first).status).toBe(200);
  });
});

describe('subscription streams have a cap of their own', () => {
  const started: ServerProcess[] = [];
  afterEach(async () => {
    for (const s of started.splice(0)) await s.stop('SIGKILL');
  });
  const listen = (url: URL, id: number, signal: AbortSignal) =>
    fetch(url, {
      method: 'POST',
      signal,
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'subscriptions/listen',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id,
        method: 'subscriptions/listen',
        params: {
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': {},
          },
          notifications: { toolsListChanged: true },
        },
      }),
    });

  it('70 genuine streams under a cap of 64: 64 open, 6 × 429; calls still get in', async () => {
    const server = await spawnServer(process.execPath, [demoServer], {
      env: {
        GATEHOUSE_TRANSPORT: 'http',
        GATEHOUSE_PORT: '0',
        GATEHOUSE_MAX_SUBSCRIPTIONS: '64',
        GATEHOUSE_MAX_INFLIGHT: '4',
        // Announces tools/list_changed: each stream stays open until the client leaves.
        DEMO_LIST_CHANGED: 'true',
      },
    });
    started.push(server);
    const abort = new AbortController();
    try {
      const answers = await Promise.all(
        Array.from({ length: 70 }, (_, i) => listen(server.url!, i + 1, abort.signal)),
      );
      const statuses = answers.map((a) => a.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(64);
      expect(statuses.filter((s) => s === 429)).toHaveLength(6);
      const refused = answers.find((a) => a.status === 429)!;
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(await refused.text()).toContain('subscription streams');
      // The streams take no in-flight slot: a call (cap 4) is served beside all 64.
      const { client, close } = await connectHttp(server.url!);
      expect((await client.listTools()).tools.length).toBeGreaterThan(0);
      await close();
    } finally {
      abort.abort();
    }
  });
});
