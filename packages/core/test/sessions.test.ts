// Every id shape, every method, every way a stdio session ends (issue 34, class 17).
//
// The oracle, over real processes: every request whose id can be read gets exactly one answer
// — a subscription stream its closing result when the session ends — and the process exits 0
// with its stop record saying it drained. What the JSON-RPC fuzz (fuzz.test.ts) found, and the
// roads to the same place tested here:
// - an id of every shape ('' and 0 among them: falsy ids), each in turn on every method, both
//   eras, 2025 sessions with and without the initialize handshake (pre-initialize sessions);
// - a session ended by closing stdin at once (requests still being read and answered, a call
//   in flight, streams open), by SIGTERM and by SIGINT once everything is answered but the
//   streams, by a signal with a call in flight, by a last message without its newline, and
//   with a stream the client cancelled (which, cancelled, gets no answer at all);
// - over HTTP, a SIGTERM with streams open under ids of every shape: each stream ends with its
//   closing result, once, and the process exits 0;
// - a slow reader: the closing answers of many streams must leave the process before it exits
//   (they were lost when the exit came while stdout still held them).
import { fileURLToPath } from 'node:url';
import { eventually, spawnServer } from '@gatehouse/testkit';
import { describe, expect, it } from 'vitest';
import { ID_SHAPES, rawServer } from './raw-server.ts';

type Era = 'legacy' | 'modern';
type Id = string | number;

const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'sessions', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** Ids of every shape, at least as many as methods (each session uses each once). */
const SHAPES = ID_SHAPES;

/** Every method a client may send, with params that would succeed where anything can. */
const METHODS: ReadonlyArray<{ method: string; params?: Record<string, unknown> }> = [
  { method: 'ping' },
  { method: 'server/discover' },
  { method: 'tools/list' },
  { method: 'tools/call', params: { name: 'demo_noop', arguments: {} } },
  { method: 'tools/call', params: { name: 'demo_slow', arguments: { ms: 200 } } },
  { method: 'resources/list' },
  { method: 'resources/templates/list' },
  { method: 'resources/read', params: { uri: 'demo://readme' } },
  { method: 'resources/subscribe', params: { uri: 'demo://readme' } },
  { method: 'prompts/list' },
  { method: 'prompts/get', params: { name: 'demo_summarise', arguments: { board: 'general' } } },
  {
    method: 'completion/complete',
    params: {
      ref: { type: 'ref/resource', uri: 'demo://boards/{board}' },
      argument: { name: 'board', value: 'g' },
    },
  },
  { method: 'logging/setLevel', params: { level: 'info' } },
  { method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true } } },
  { method: 'subscriptions/listen', params: { notifications: {} } },
  {
    method: 'initialize',
    params: {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'late', version: '1' },
    },
  },
  { method: 'no/such/method' },
];

interface Session {
  era: Era;
  /** 2025 sessions: open with initialize (or go straight to requests). */
  handshake?: boolean;
  /** Which shape the first method gets (the rest follow in turn). */
  rotation: number;
  end: 'stdin' | 'SIGTERM' | 'SIGINT' | 'signal-in-flight' | 'unterminated' | 'cancel-stream';
}

function requestLine(era: Era, id: Id, method: string, params?: Record<string, unknown>) {
  const withMeta = era === 'modern' ? { ...params, _meta: MODERN_META } : params;
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    method,
    ...(withMeta === undefined ? {} : { params: withMeta }),
  });
}

interface Line {
  id?: unknown;
  method?: string;
  params?: { _meta?: Record<string, unknown> };
}

async function runSession(s: Session) {
  const server = rawServer({
    GATEHOUSE_PRINCIPAL: 'sessions',
    GATEHOUSE_DRAIN_MS: '5000',
    DEMO_LIST_CHANGED: 'true',
  });
  try {
    if (s.handshake === true) await server.handshake();
    const expected: Id[] = [];
    const lines = METHODS.map(({ method, params }, i) => {
      const id = SHAPES[(i + s.rotation) % SHAPES.length]!;
      expected.push(id);
      return requestLine(s.era, id, method, params);
    });
    const stream = expected[METHODS.findIndex((m) => m.method === 'subscriptions/listen')]!;
    const parsed = () => server.stdoutLines.map((l) => JSON.parse(l) as Line);
    const acknowledged = () =>
      parsed().some(
        (l) =>
          l.method === 'notifications/subscriptions/acknowledged' &&
          l.params?._meta?.['io.modelcontextprotocol/subscriptionId'] === stream,
      );
    if (s.end === 'unterminated') {
      server.child.stdin.write(lines.join('\n'));
      server.child.stdin.end();
    } else {
      for (const line of lines) server.sendLine(line);
    }
    if (s.end === 'stdin') server.child.stdin.end();
    if (s.end === 'cancel-stream' && s.era === 'modern') {
      await eventually(acknowledged);
      server.sendLine(
        JSON.stringify({
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: stream, _meta: MODERN_META },
        }),
      );
      // Cancelled, it gets no answer (the protocol says so).
      expected.splice(expected.indexOf(stream), 1);
      server.child.stdin.end();
    }
    if (s.end === 'cancel-stream' && s.era === 'legacy') server.child.stdin.end();
    if (s.end === 'signal-in-flight') {
      await eventually(() => server.stderr().includes('demo_slow started'));
      server.child.kill('SIGTERM');
    }
    if (s.end === 'SIGTERM' || s.end === 'SIGINT') {
      // Everything answered but the streams (their acknowledgement stands in), then the signal.
      await eventually(() => {
        const seen = new Set(parsed().map((l) => l.id));
        return expected.filter((id) => !seen.has(id)).length <= 2;
      });
      server.child.kill(s.end);
    }
    const [code, signal] = await server.exit;
    const answers = parsed().filter((l) => l.method === undefined);
    const counts = new Map<unknown, number>();
    for (const a of answers) counts.set(a.id, (counts.get(a.id) ?? 0) + 1);
    return {
      code,
      signal,
      unanswered: expected.filter((id) => (counts.get(id) ?? 0) === 0),
      twice: expected.filter((id) => (counts.get(id) ?? 0) > 1),
      strays: answers.filter((a) => !expected.includes(a.id as Id) && a.id !== 1 && a.id !== null),
      drained: server.stderr().includes('"drained":true'),
    };
  } finally {
    if (server.child.exitCode === null) server.child.kill('SIGKILL');
  }
}

const ok = { code: 0, signal: null, unanswered: [], twice: [], strays: [], drained: true };

/** Runs sessions a few at a time (each is a process). */
async function all(sessions: readonly Session[]) {
  const results: Array<readonly [Session, Awaited<ReturnType<typeof runSession>>]> = [];
  for (let i = 0; i < sessions.length; i += 6) {
    const batch = sessions.slice(i, i + 6);
    results.push(...(await Promise.all(batch.map(async (s) => [s, await runSession(s)] as const))));
  }
  return results;
}

describe('every id shape on every method, stdin closed at once', () => {
  // Each session gives each method a different shape; over all rotations, every pair meets.
  const rotations = SHAPES.map((_, k) => k);
  it.each<[string, Omit<Session, 'rotation' | 'end'>]>([
    ['modern', { era: 'modern' }],
    ['2025, after initialize', { era: 'legacy', handshake: true }],
    ['2025, before initialize', { era: 'legacy' }],
  ])(
    '%s: one answer each, exit 0',
    async (_, base) => {
      expect(SHAPES.length).toBeGreaterThanOrEqual(METHODS.length);
      const results = await all(rotations.map((rotation) => ({ ...base, rotation, end: 'stdin' })));
      for (const [session, result] of results)
        expect({ session, ...result }).toEqual({ session, ...ok });
    },
    120_000,
  );
});

describe('every way a session ends', () => {
  const ends: Session['end'][] = [
    'SIGTERM',
    'SIGINT',
    'signal-in-flight',
    'unterminated',
    'cancel-stream',
  ];
  it.each(ends)(
    '%s, both eras: one answer each, exit 0',
    async (end) => {
      const sessions: Session[] = [
        { era: 'modern', rotation: 0, end },
        { era: 'modern', rotation: 7, end },
        { era: 'legacy', rotation: 0, end, handshake: true },
        { era: 'legacy', rotation: 3, end },
      ];
      const results = await all(sessions);
      for (const [session, result] of results)
        expect({ session, ...result }).toEqual({ session, ...ok });
    },
    120_000,
  );

  it('many open streams and a reader that has not read yet: every closing answer arrives', async () => {
    const server = rawServer({ GATEHOUSE_PRINCIPAL: 'sessions', DEMO_LIST_CHANGED: 'true' });
    const ids = Array.from({ length: 60 }, (_, i) => `stream-${i}-${'x'.repeat(2000)}`);
    for (const id of ids) {
      server.sendLine(
        requestLine('modern', id, 'subscriptions/listen', {
          notifications: { toolsListChanged: true },
        }),
      );
    }
    await eventually(() => server.stdoutLines.length >= ids.length);
    // Stop reading: the closing answers (2 kB each) fill the pipe before the process may exit.
    server.child.stdout.pause();
    server.child.stdin.end();
    await new Promise((r) => setTimeout(r, 300));
    server.child.stdout.resume();
    const [code] = await server.exit;
    await eventually(() => server.stdoutLines.length >= ids.length * 2);
    const closed = server.stdoutLines
      .map((l) => JSON.parse(l) as Line)
      .filter((l) => l.method === undefined)
      .map((l) => l.id);
    expect(closed.sort()).toEqual([...ids].sort());
    expect(code).toBe(0);
  });
});

describe('over HTTP, a SIGTERM with streams open', () => {
  const demoServer = fileURLToPath(new URL('./fixtures/demo-server.ts', import.meta.url));
  it('every stream, whatever its id, ends with its one closing result; exit 0', async () => {
    const server = await spawnServer(process.execPath, [demoServer], {
      env: { GATEHOUSE_TRANSPORT: 'http', GATEHOUSE_PORT: '0', DEMO_LIST_CHANGED: 'true' },
    });
    const shapes = SHAPES.slice(0, 12);
    // Every stream open (its headers are here), then the signal.
    const responses = await Promise.all(
      shapes.map((id) =>
        fetch(server.url!, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-protocol-version': '2026-07-28',
            'mcp-method': 'subscriptions/listen',
          },
          body: requestLine('modern', id, 'subscriptions/listen', {
            notifications: { toolsListChanged: true },
          }),
        }),
      ),
    );
    expect(responses.map((r) => r.headers.get('content-type'))).toEqual(
      shapes.map(() => 'text/event-stream'),
    );
    server.child.kill('SIGTERM');
    const texts = await Promise.all(responses.map((r) => r.text()));
    texts.forEach((text, i) => {
      const answers = text
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => JSON.parse(l.slice(6)) as Line)
        .filter((l) => l.method === undefined);
      expect(answers.map((a) => a.id)).toEqual([shapes[i]]);
    });
    expect(await server.exited()).toBe(0);
  });
});
