import { Agent, request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { eventually, initializeRequest, seededRandom, spawnServer } from '@gatehouse/testkit';
import type { ServerProcess } from '@gatehouse/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ID_SHAPES, rawServer } from './raw-server.ts';

// A structure-aware fuzz of the JSON-RPC front door, seeded and reproducible, over both
// transports and both protocol eras. Messages are built from valid requests of every method
// and mutated — ids, framing, params, _meta, arguments, keys, depth, size, bytes, batches.
// The oracle: the server never dies; stdout carries only JSON-RPC; HTTP never answers 5xx;
// every request whose id can be read gets exactly one answer; no error says anything of the
// engine or the libraries (stack overflows, schema messages, stack frames).
//
// Every method is sent, subscriptions/listen and resources/subscribe included, under ids of
// every shape ('' and 0 among them); a stdio run ends as a client ends it — stdin closed with
// streams still open — and the process must answer each stream once and exit 0. (That ending
// found the last class of issue 34: a drain that waited for streams only the close answers,
// exit 1; and closing answers lost when the process exited with stdout still holding them.
// sessions.test.ts holds the same oracle over every id shape × method × way a session ends.)
//
// The default run sends GATEHOUSE_FUZZ_MESSAGES (default 2 000) messages in all; the long
// mode (npm run test:long) sends 100 000. GATEHOUSE_FUZZ_SEED replays a run.

const demoServer = fileURLToPath(new URL('./fixtures/demo-server.ts', import.meta.url));
const LONG = process.env.GATEHOUSE_TEST_LONG === '1';
const TOTAL = Number(process.env.GATEHOUSE_FUZZ_MESSAGES ?? (LONG ? 100_000 : 2_000));
const SEED = Number(process.env.GATEHOUSE_FUZZ_SEED ?? 20261201);
const PER_RUN = Math.ceil(TOTAL / 4);
const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'fuzz', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
const INTERNAL =
  /Maximum call stack|Invalid input: expected|received undefined|zod|ZodError|TypeError|ReferenceError|SyntaxError|Cannot read propert|at [\w.<>]+ \(|node_modules|\.js:\d+/;

type Json = unknown;
type Era = 'legacy' | 'modern';
type Transport = 'stdio' | 'http';

/** One fuzz message: its bytes, and the id whose one answer it must get (if any). */
interface Case {
  bytes: Buffer;
  expect: string | number | undefined;
}

function generator(seed: number, era: Era, transport: Transport) {
  const r = seededRandom(seed);
  const int = (n: number) => Math.floor(r() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)]!;
  const chance = (p: number) => r() < p;
  const text = (): string =>
    pick([
      'hello',
      '',
      'x'.repeat(int(3000)),
      '\u0000\u001b[31m\u202e\u200b\u{e0041}',
      '🏴\u{e0061}\u{e0062}\u{e0063}\u{e0064}\u{e0065}\u{e0066}\u{e0067}\u{e007f}',
      '"quoted" \\back\\slash',
      '\ud800 lone surrogate',
      'line\nbreak\r\nand\rcarriage',
      '__proto__',
      '../../etc/passwd',
    ]);
  const value = (depth = 0): Json => {
    const kind = int(depth > 3 ? 5 : 8);
    switch (kind) {
      case 0:
        return text();
      case 1:
        return pick([0, -1, 1.5, 1e300, 2 ** 53 + 1, Number.MAX_SAFE_INTEGER, -0]);
      case 2:
        return pick([true, false]);
      case 3:
        return null;
      case 4:
        return int(100);
      case 5:
        return Array.from({ length: int(4) }, () => value(depth + 1));
      default: {
        const o: Record<string, Json> = {};
        for (let i = int(4); i > 0; i--)
          o[pick(['a', 'text', 'values', 'ms', 'board', text()])] = value(depth + 1);
        return o;
      }
    }
  };
  const deep = (levels: number): string => `${'['.repeat(levels)}1${']'.repeat(levels)}`;
  const tools = [
    'demo_echo',
    'demo_noop',
    'demo_stats',
    'demo_dirty',
    'demo_issue',
    'demo_fail',
    'demo_leak',
    'nope',
  ];
  const validArgs: Record<string, Json> = {
    demo_echo: { text: 'hi' },
    demo_noop: {},
    demo_stats: { values: [1, 2, 3] },
    demo_dirty: {},
    demo_issue: { board: 'general' },
    demo_fail: { kind: 'tool' },
    demo_leak: {},
    nope: {},
  };
  const requests = (): { method: string; params?: Record<string, Json> } => {
    const tool = pick(tools);
    return pick([
      { method: 'ping' },
      { method: 'tools/list', params: chance(0.3) ? { cursor: text() } : {} },
      {
        method: 'tools/call',
        params: { name: tool, arguments: chance(0.6) ? validArgs[tool] : value() },
      },
      { method: 'resources/list' },
      { method: 'resources/templates/list' },
      {
        method: 'resources/read',
        params: {
          uri: pick(['demo://readme', 'demo://boards/general', 'demo://boards/x', text()]),
        },
      },
      { method: 'prompts/list' },
      {
        method: 'prompts/get',
        params: {
          name: pick(['demo_summarise', text()]),
          arguments: chance(0.5) ? { board: 'general' } : value(),
        },
      },
      {
        method: 'completion/complete',
        params: {
          ref: pick([
            { type: 'ref/prompt', name: 'demo_summarise' },
            { type: 'ref/resource', uri: 'demo://boards/{board}' },
            value(),
          ]),
          argument: chance(0.7) ? { name: 'board', value: 'g' } : value(),
        },
      },
      { method: 'logging/setLevel', params: { level: pick(['debug', 'nonsense']) } },
      // A stream: open until the session ends (stdio) or at once when nothing is honoured.
      {
        method: 'subscriptions/listen',
        params: {
          notifications: pick([
            {},
            { toolsListChanged: true },
            { promptsListChanged: true },
            value(),
          ]),
        },
      },
      {
        method: pick(['resources/subscribe', 'resources/unsubscribe']),
        params: { uri: 'demo://readme' },
      },
      { method: pick(['nope/nope', '', 'tools/', 'rpc.discover', text()]) },
      ...(era === 'legacy'
        ? [{ method: 'initialize', params: initializeRequest().params as Record<string, Json> }]
        : [{ method: 'server/discover' }]),
    ]);
  };
  /** The message's params as an object to mutate (a fresh one when they are not an object). */
  const paramsOf = (message: Record<string, Json>): Record<string, Json> =>
    typeof message.params === 'object' && message.params !== null && !Array.isArray(message.params)
      ? (message.params as Record<string, Json>)
      : {};
  let next = 0;
  // Ids of every shape a client may send, each used once in a run (one answer per id).
  const shapes = [...ID_SHAPES];
  return (): Case => {
    const n = next++;
    const base = requests();
    const message: Record<string, Json> = {
      jsonrpc: '2.0',
      id: chance(0.01) && shapes.length > 0 ? shapes.shift()! : chance(0.5) ? n + 1000 : `id-${n}`,
      ...base,
    };
    if (era === 'modern') {
      const params = (message.params ?? {}) as Record<string, Json>;
      message.params = { ...params, _meta: { ...MODERN_META } };
    }
    // Structure-aware mutations: zero to three of them.
    for (let m = pick([0, 0, 1, 1, 2, 3]); m > 0; m--) {
      switch (int(11)) {
        case 0: // an id of another kind (unique when readable)
          message.id = pick([
            `s-${n}`,
            -(n + 2), // not -1: an id of ID_SHAPES
            1.5 + n,
            1e300,
            2 ** 53 + n,
            true,
            null,
            {},
            [],
            'x'.repeat(500) + n,
          ]);
          break;
        case 1:
          delete message.id; // a notification
          break;
        case 2:
          if (chance(0.5)) delete message.jsonrpc;
          else message.jsonrpc = pick(['1.0', 2, null, '2.0 ']);
          break;
        case 3:
          if (chance(0.3)) delete message.method;
          else message.method = pick([5, null, {}, text(), 'tools/call']);
          break;
        case 4:
          message.params = pick([null, [], 'x', 5, {}, value()]);
          break;
        case 5: {
          const params = paramsOf(message);
          params._meta = pick([
            'x',
            7,
            [],
            true,
            null,
            { progressToken: pick([1.5, {}, 'p', 7, null]) },
            { ...MODERN_META, 'io.modelcontextprotocol/protocolVersion': pick(['1999-01-01', 5]) },
            value(),
          ]);
          message.params = params;
          break;
        }
        case 6: {
          const params = paramsOf(message);
          params.arguments = JSON.parse(
            pick([
              '{"__proto__":{"x":1}}',
              '{"text":"a","__proto__":1}',
              '{"constructor":{"prototype":{}}}',
              '{"text":"\\u0000"}',
            ]),
          );
          message.params = params;
          break;
        }
        case 7:
          message[pick(['extra', '__proto__', 'result', 'error'])] = value();
          break;
        case 8:
          message.method = 'tools/call';
          message.params = {
            name: pick(tools),
            arguments: value(),
            ...(era === 'modern' ? { _meta: MODERN_META } : {}),
          };
          break;
        case 9:
          message.params = { name: 'demo_echo', arguments: { text: 'x'.repeat(int(200_000)) } };
          break;
        default:
          break;
      }
    }
    let json = JSON.stringify(message);
    // Text mutations: not JSON, invalid UTF-8, too deep, batches, padding.
    let bytes: Buffer;
    switch (int(14)) {
      case 0:
        json = json.slice(0, int(json.length));
        bytes = Buffer.from(json);
        break;
      case 1:
        bytes = Buffer.concat([
          Buffer.from(json.slice(0, 10)),
          Buffer.from([0xff, 0xfe, 0xc3]),
          Buffer.from(json.slice(10)),
        ]);
        break;
      case 2:
        bytes = Buffer.from(json.replace(/}$/, `,"deep":${deep(pick([65, 200, 6000]))}}`));
        break;
      case 3:
        bytes = Buffer.from(
          transport === 'http' ? `[${json},${json.replace(/"id":/, '"x":')}]` : `[${json}]`,
        );
        break;
      case 4:
        bytes = Buffer.from(`\ufeff  ${json}  `);
        break;
      case 5:
        bytes = Buffer.from(pick(['null', '5', '"str"', '[]', '{}', 'true', '{"jsonrpc":"2.0"}']));
        break;
      default:
        bytes = Buffer.from(json);
    }
    // The answer it must get: a request whose id can be read, in bytes that parse as one.
    let parsed: Json;
    try {
      parsed = JSON.parse(bytes.toString('utf8'));
    } catch {
      parsed = undefined;
    }
    const object =
      typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
        ? (parsed as Record<string, Json>)
        : undefined;
    const id = object?.id;
    const readable = typeof id === 'string' || Number.isSafeInteger(id);
    const isRequest =
      object !== undefined && 'id' in object && !('result' in object) && !('error' in object);
    return { bytes, expect: isRequest && readable ? (id as string | number) : undefined };
  };
}

/** The id a line answers, or the subscription it acknowledges (answered at the end). */
function answeredOrOpen(line: unknown): unknown[] {
  const message = line as { id?: unknown; method?: unknown; params?: { _meta?: unknown } };
  if (message.method === undefined) return [message.id];
  if (message.method !== 'notifications/subscriptions/acknowledged') return [];
  const meta = message.params?._meta as Record<string, unknown> | undefined;
  return [meta?.['io.modelcontextprotocol/subscriptionId']];
}

interface Answer {
  id?: unknown;
  error?: { code?: unknown; message?: unknown };
}

function checkAnswers(answers: Answer[], expected: Array<string | number>, where: string): void {
  const counts = new Map<unknown, number>();
  for (const a of answers) counts.set(a.id, (counts.get(a.id) ?? 0) + 1);
  const missing = expected.filter((id) => (counts.get(id) ?? 0) === 0);
  const twice = expected.filter((id) => (counts.get(id) ?? 0) > 1);
  expect(missing, `${where}: requests never answered`).toEqual([]);
  expect(twice, `${where}: requests answered more than once`).toEqual([]);
  const leaks = answers
    .map((a) => (typeof a.error?.message === 'string' ? a.error.message : ''))
    .filter((m) => INTERNAL.test(m));
  expect(leaks, `${where}: errors that tell of the engine`).toEqual([]);
}

describe.each(['legacy', 'modern'] as const)('fuzzing the stdio front door (%s era)', (era) => {
  it(`survives ${PER_RUN} mutated messages with one answer per readable id`, async () => {
    const server = rawServer({
      GATEHOUSE_PRINCIPAL: 'fuzz',
      GATEHOUSE_RATE_READ_PER_MIN: '1000000',
      GATEHOUSE_DRAIN_MS: '5000',
      DEMO_LIST_CHANGED: 'true',
    });
    const next = generator(SEED + (era === 'legacy' ? 1 : 2), era, 'stdio');
    try {
      if (era === 'legacy') await server.handshake();
      else {
        server.send({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/list',
          params: { _meta: MODERN_META },
        });
        await server.waitForResponse(1);
      }
      const expected: Array<string | number> = [];
      for (let sent = 0; sent < PER_RUN;) {
        const batch: Array<string | number> = [];
        for (let i = 0; i < 200 && sent < PER_RUN; i++, sent++) {
          const c = next();
          server.sendLine(c.bytes);
          if (c.expect !== undefined) batch.push(c.expect);
        }
        expected.push(...batch);
        // Wait for this batch's answers before the next (bounded memory, real back-pressure).
        // A subscription stream is answered when the session ends: its acknowledgement counts.
        await eventually(
          () => new Set(server.stdoutLines.flatMap((l) => answeredOrOpen(JSON.parse(l)))),
          (seen) => batch.every((id) => seen.has(id)),
          30_000,
          20,
        );
      }
      // Still alive: a plain ping is answered.
      server.send({
        jsonrpc: '2.0',
        id: 'final',
        method: 'ping',
        ...(era === 'modern' ? { params: { _meta: MODERN_META } } : {}),
      });
      await server.waitForResponse('final');
      // The session ends as a client ends it: stdin closes, open streams are answered, exit 0.
      server.child.stdin.end();
      const [code, signal] = await server.exit;
      const answers = server.stdoutLines
        .map((line) => {
          const value = JSON.parse(line) as Answer & { jsonrpc?: unknown; method?: unknown };
          expect(value.jsonrpc).toBe('2.0');
          return value;
        })
        .filter((value) => value.method === undefined);
      checkAnswers(answers, expected, `stdio ${era} (seed ${SEED})`);
      expect({ code, signal }, server.stderr().slice(-2000)).toEqual({ code: 0, signal: null });
    } finally {
      server.child.kill('SIGKILL');
    }
  }, 900_000);
});

describe.each(['legacy', 'modern'] as const)('fuzzing the HTTP front door (%s era)', (era) => {
  let server: ServerProcess;
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  beforeAll(async () => {
    server = await spawnServer(process.execPath, [demoServer], {
      env: {
        GATEHOUSE_TRANSPORT: 'http',
        GATEHOUSE_PORT: '0',
        GATEHOUSE_RATE_READ_PER_MIN: '1000000',
        GATEHOUSE_MAX_INFLIGHT: '1000',
        GATEHOUSE_MAX_CONCURRENT_PER_PRINCIPAL: '1000',
        GATEHOUSE_MAX_BODY_BYTES: String(4 * 1024 * 1024),
      },
    });
  });
  afterAll(async () => {
    agent.destroy();
    expect(await server.stop()).toBe(0);
  });

  function post(bytes: Buffer): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = request(
        server.url!,
        {
          method: 'POST',
          agent,
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-protocol-version': era === 'modern' ? '2026-07-28' : '2025-11-25',
            'content-length': bytes.length,
          },
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end(bytes);
    });
  }

  /** The JSON-RPC messages of a response body: JSON, or the data lines of an event stream. */
  function messages(body: string): Answer[] {
    const trimmed = body.trim();
    if (trimmed === '') return [];
    if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
      const value = JSON.parse(trimmed) as Answer | Answer[];
      return Array.isArray(value) ? value : [value];
    }
    return trimmed
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)) as Answer);
  }

  it(`survives ${PER_RUN} mutated messages: no 5xx, one answer per readable id`, async () => {
    const next = generator(SEED + (era === 'legacy' ? 3 : 4), era, 'http');
    const answers: Answer[] = [];
    const expected: Array<string | number> = [];
    const fivexx: string[] = [];
    let sent = 0;
    const worker = async (): Promise<void> => {
      while (sent < PER_RUN) {
        sent++;
        const c = next();
        const response = await post(c.bytes);
        if (response.status >= 500)
          fivexx.push(`${response.status} for ${c.bytes.toString('utf8').slice(0, 200)}`);
        // Batches: each request of the array is one expected answer (checked by id below).
        if (c.expect !== undefined) expected.push(c.expect);
        let got: Answer[] = [];
        try {
          got = messages(response.body);
        } catch {
          fivexx.push(`unparseable ${response.status} body: ${response.body.slice(0, 200)}`);
        }
        // A refusal before JSON-RPC (4xx without a body of ours) is still one answer to it.
        if (got.length === 0 && c.expect !== undefined && response.status >= 400)
          got = [{ id: c.expect }];
        answers.push(...got);
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    expect(fivexx, `HTTP ${era} (seed ${SEED})`).toEqual([]);
    checkAnswers(answers, expected, `HTTP ${era} (seed ${SEED})`);
    expect(server.logs.some((l) => l.msg === 'unhandled error serving an MCP request')).toBe(false);
  }, 900_000);
});
