// Several replicas behind one load balancer: two real server processes behind a loopback
// round-robin proxy (every HTTP request goes to the other replica), a real redis-server.
import { createServer, request as httpRequest } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { connectHttp, eventually, spawnServer, startRedis } from '@gatehouse/testkit';
import type { ServerProcess, TestRedis } from '@gatehouse/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

const demoServer = fileURLToPath(new URL('./fixtures/demo-server.ts', import.meta.url));
const STATE_KEY = 'k'.repeat(40);

let redis: TestRedis;
const running: Array<{ close(): unknown }> = [];

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(() => redis?.stop());
afterEach(async () => {
  for (const r of running.splice(0)) await r.close();
  // An empty Redis for the next test (no persistence: a restart forgets every counter).
  await redis.stop();
  await redis.start();
});

function replica(env: Record<string, string>): Promise<ServerProcess> {
  return spawnServer(process.execPath, [demoServer], {
    env: {
      GATEHOUSE_TRANSPORT: 'http',
      GATEHOUSE_PORT: '0',
      ...env,
    },
  });
}

/** A loopback proxy that sends each HTTP request to the next replica in turn. */
async function roundRobin(targets: readonly URL[]): Promise<{ url: URL; hits: number[] }> {
  let next = 0;
  const hits = targets.map(() => 0);
  const server: Server = createServer((req, res) => {
    const i = next++ % targets.length;
    hits[i]!++;
    const target = targets[i]!;
    const upstream = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: req.url,
        method: req.method,
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  running.push({ close: () => server.close() });
  const { port } = server.address() as AddressInfo;
  return { url: new URL(`http://127.0.0.1:${port}/mcp`), hits };
}

/** Two replicas with `env` behind a round-robin proxy. */
async function pair(env: Record<string, string>, second: Record<string, string> = {}) {
  const replicas = [await replica(env), await replica({ ...env, ...second })];
  for (const r of replicas) running.push({ close: () => r.stop() });
  const proxy = await roundRobin(replicas.map((r) => r.url!));
  return { replicas, ...proxy };
}

/** Calls demo_echo `n` times through `url`; how many were answered, how many rate-limited. */
async function callMany(url: URL, n: number): Promise<{ ok: number; limited: string[] }> {
  const { client, close } = await connectHttp(url, { era: 'legacy' });
  let ok = 0;
  const limited: string[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const result = await client.callTool({ name: 'demo_echo', arguments: { text: `call ${i}` } });
      const text = (result.content as Array<{ text: string }>)[0]!.text;
      if (result.isError) limited.push(text);
      else ok++;
    }
  } finally {
    await close();
  }
  return { ok, limited };
}

const limitedEnv = () => ({ GATEHOUSE_REDIS_URL: redis.url, GATEHOUSE_RATE_READ_PER_MIN: '6' });

describe('rate limits shared through Redis', () => {
  it('two replicas enforce one limit; without Redis each would allow it again', async () => {
    // 6 per minute across the replicas: six calls pass, the rest wait for the minute to move.
    const shared = await pair(limitedEnv());
    const together = await callMany(shared.url, 16);
    expect(shared.hits[0]).toBeGreaterThan(5);
    expect(shared.hits[1]).toBeGreaterThan(5);
    expect(together.ok).toBe(6);
    expect(together.limited[0]).toMatch(
      /^Rate limit reached for demo_echo \(reads\)\. Retry in (59|60)s\.$/,
    );

    // The control: the same two replicas without a shared store let twice as many through.
    const alone = await pair({ GATEHOUSE_RATE_READ_PER_MIN: '6' });
    expect((await callMany(alone.url, 16)).ok).toBe(12);
  });

  it('Redis down with the memory fallback: served per replica, audited, visible on /readyz', async () => {
    const { replicas, url } = await pair(limitedEnv());
    const [a] = replicas;
    expect((await fetch(new URL('/readyz', a!.url))).status).toBe(200);
    await redis.stop();
    try {
      await a!.waitForLog((l) => String(l.msg).includes('rate-limit store (redis) unreachable'));
      const ready = await fetch(new URL('/readyz', a!.url));
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({
        status: 'ready',
        detail:
          'degraded: the shared rate-limit store (redis) is unreachable; limits are per replica',
      });
      // Each replica now limits alone: 6 each.
      expect((await callMany(url, 16)).ok).toBe(12);
      const down = a!
        .auditRecords()
        .find(
          (r) => r.event.action === 'gatehouse/rate_limit_store' && r.gatehouse.state === 'down',
        );
      expect(down).toMatchObject({
        event: { outcome: 'failure', reason: 'store_unavailable' },
        gatehouse: { store: 'redis', state: 'down', fallback: 'memory' },
      });
    } finally {
      await redis.start();
    }
    // It comes back by itself (ioredis reconnects within 2 s), audited: up, down, up.
    const transitions = () =>
      a!
        .auditRecords()
        .filter((r) => r.event.action === 'gatehouse/rate_limit_store')
        .map((r) => `${r.gatehouse.state}:${r.event.reason}`);
    await eventually(transitions, (t) => t.length >= 3, 5_000);
    expect(transitions()).toEqual([
      'up:store_available',
      'down:store_unavailable',
      'up:store_available',
    ]);
    expect(await (await fetch(new URL('/readyz', a!.url))).json()).toEqual({ status: 'ready' });
  });

  it('Redis down with GATEHOUSE_RATE_LIMIT_ON_STORE_FAILURE=closed: calls refused, not ready', async () => {
    const server = await replica({
      ...limitedEnv(),
      GATEHOUSE_RATE_LIMIT_ON_STORE_FAILURE: 'closed',
    });
    running.push({ close: () => server.stop() });
    expect((await callMany(server.url!, 1)).ok).toBe(1);
    await redis.stop();
    try {
      await server.waitForLog((l) => String(l.msg).includes('refusing calls until it is back'));
      const ready = await fetch(new URL('/readyz', server.url));
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({
        status: 'not_ready',
        detail: 'the shared rate-limit store (redis) is unreachable',
      });
      const refused = await callMany(server.url!, 2);
      expect(refused.ok).toBe(0);
      expect(refused.limited[0]).toBe(
        'The shared rate-limit store (redis) is unreachable, and this server refuses calls until it is back. Retry in 5s; tell the operator if it lasts.',
      );
      const record = server
        .auditRecords()
        .filter((r) => r.event.action === 'tools/call')
        .at(-1);
      expect(record).toMatchObject({
        event: { reason: 'rate_limited' },
        policy: { rule: 'rate_store' },
      });
    } finally {
      await redis.start();
    }
  });

  it('a server whose Redis is unreachable at start starts, degraded, and says so', async () => {
    const server = await replica({ GATEHOUSE_REDIS_URL: 'redis://127.0.0.1:1' });
    running.push({ close: () => server.stop() });
    expect((await callMany(server.url!, 1)).ok).toBe(1);
    const ready = (await (await fetch(new URL('/readyz', server.url))).json()) as {
      detail?: string;
    };
    expect(ready.detail).toMatch(/^degraded/);
    // The URL (it may carry a password) is a secret: never in the log.
    expect(JSON.stringify(server.logs)).not.toContain('redis://127.0.0.1:1');
  });
});

describe('state across replicas (GATEHOUSE_STATE_KEY)', () => {
  const writes = {
    GATEHOUSE_ENABLE_WRITES: 'true',
    GATEHOUSE_CONFIRM_WRITES: 'true',
    GATEHOUSE_STATE_KEY: STATE_KEY,
  };

  async function confirmThrough(url: URL) {
    const connection = await connectHttp(url, {
      era: 'modern',
      capabilities: { elicitation: { form: {} } },
    });
    running.push({ close: () => connection.close() });
    const asked: string[] = [];
    connection.client.setRequestHandler('elicitation/create', (request) => {
      asked.push(request.params.message);
      return { action: 'accept', content: { confirm: true } };
    });
    return { client: connection.client, asked };
  }

  it('a confirmation asked by one replica is answered on the other', async () => {
    const { url, hits, replicas } = await pair(writes);
    const { client, asked } = await confirmThrough(url);
    const before = [...hits];
    const result = await client.callTool({ name: 'demo_post', arguments: { message: 'deploy' } });
    expect(asked).toHaveLength(1);
    expect(result.isError).toBeFalsy();
    expect((result.content as Array<{ text: string }>)[0]!.text).toBe('posted 6 characters');
    // The first round trip on one replica, the retry with the sealed state on the other.
    expect(hits[0]! - before[0]!).toBeGreaterThanOrEqual(1);
    expect(hits[1]! - before[1]!).toBeGreaterThanOrEqual(1);
    const posts = replicas.map((r) =>
      r
        .auditRecords()
        .filter((x) => x.event.action === 'tools/call' && x.mcp?.name === 'demo_post'),
    );
    // One record on each replica: the question on one, the confirmed write on the other.
    expect(posts.map((p) => p.length)).toEqual([1, 1]);
  });

  it('replicas with different keys refuse each other’s state (the control)', async () => {
    const { url } = await pair(writes, { GATEHOUSE_STATE_KEY: 'z'.repeat(40) });
    const { client } = await confirmThrough(url);
    await expect(
      client.callTool({ name: 'demo_post', arguments: { message: 'deploy' } }),
    ).rejects.toThrow(/state/i);
  });
});
