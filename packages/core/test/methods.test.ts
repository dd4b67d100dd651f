// Every method that can reach a database or a vendor goes through the runner (runner.ts): a
// place in the minute, the deadline, exactly one audit record (issue 34, class 16).
//
// The class, and the roads to it tested here:
// - resources/list calling a template's list() (the Postgres catalog, Slack's channel list) —
//   the road the review found: it ran with no slot, no deadline, no record;
// - every other method a client may send (ping, discovery, the listings, reads, gets,
//   completions, logging/setLevel, subscribe), in both eras: the oracle below drives each one
//   against a server whose every callback (tool handler, read, list, completer, prompt
//   handler) notes that it ran, and asserts that a request which ran server code left a
//   record of its own method — so a method added later without the runner fails here;
// - the runner's stages on the listing: the deadline (a list() that ignores its signal), an
//   upstream failure (detail hidden, reason recorded), a cursor that cannot be one (refused
//   before list() is asked), and a listing that asks nothing (statics only: no record, as
//   tools/list).
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import * as z from 'zod';
import {
  READ_ONLY_ANNOTATIONS,
  UpstreamError,
  baseConfigSchema,
  definePrompt,
  defineResource,
  defineServer,
  defineTool,
  loadConfig,
} from '@gatehouse/core';
import type { ServerDefinition } from '@gatehouse/core';
import { createLogger, createRuntime, createServerFactory } from '@gatehouse/core/runtime';
import type { AuditRecord } from '@gatehouse/audit';
import { connectInMemory, memoryAudit } from '@gatehouse/testkit';
import type { Connection, Era } from '@gatehouse/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { expectSchemaValid } from './schema.ts';

/** What the server's callbacks saw: which ran, and the signals they were given. */
interface Spy {
  ran: string[];
  signals: AbortSignal[];
  /** How list() behaves. */
  list: 'ok' | 'hang' | 'fail';
}

function spyServer(spy: Spy, options: { listing?: boolean } = {}): ServerDefinition {
  const note = (what: string, signal?: AbortSignal) => {
    spy.ran.push(what);
    if (signal !== undefined) spy.signals.push(signal);
  };
  return defineServer({
    name: 'spy',
    version: '1.0.0',
    title: 'Spy',
    logging: true,
    tools: [
      defineTool({
        name: 'spy_tool',
        title: 'Spy tool',
        description: 'Notes that it ran.',
        access: 'read',
        annotations: READ_ONLY_ANNOTATIONS,
        input: z.strictObject({}),
        handler: async (_, ctx) => {
          note('tool', ctx.signal);
          return 'ran';
        },
      }),
    ],
    resources: [
      defineResource({
        kind: 'static',
        name: 'fixed',
        uri: 'spy://fixed',
        read: async (ctx) => {
          note('static read', ctx.signal);
          return { text: 'fixed' };
        },
      }),
      defineResource({
        kind: 'template',
        name: 'item',
        uriTemplate: 'spy://items/{item}',
        ...(options.listing === false
          ? {}
          : {
              list: async (ctx) => {
                note('list', ctx.signal);
                if (spy.list === 'fail') {
                  throw new UpstreamError({
                    service: 'Spy',
                    status: 503,
                    message: 'upstream at 10.0.0.7 fell over',
                  });
                }
                if (spy.list === 'hang') await sleep(30_000); // ignores its signal
                return [{ uri: 'spy://items/a', name: 'a' }];
              },
            }),
        complete: {
          item: (value, { signal }) => {
            note('template completer', signal);
            return ['a', 'b'].filter((v) => v.startsWith(value));
          },
        },
        read: async (_uri, { item }, ctx) => {
          note('template read', ctx.signal);
          return { text: `item ${item}` };
        },
      }),
    ],
    prompts: [
      definePrompt({
        name: 'spy_prompt',
        title: 'Spy prompt',
        description: 'Notes that it ran.',
        arguments: {
          item: {
            description: 'An item',
            required: true,
            complete: (value, { signal }) => {
              note('prompt completer', signal);
              return ['a'].filter((v) => v.startsWith(value));
            },
          },
        },
        handler: async ({ item }, ctx) => {
          note('prompt', ctx.signal);
          return [{ role: 'user', content: { type: 'text', text: `about ${item}` } }];
        },
      }),
    ],
  });
}

interface Harness extends Connection {
  records: AuditRecord[];
  spy: Spy;
}

const open: Harness[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) {
    await h.close();
    expectSchemaValid(h.records);
  }
});

async function harness(
  era: Era,
  env: Record<string, string> = {},
  options: { listing?: boolean } = {},
): Promise<Harness> {
  const config = loadConfig(baseConfigSchema, { GATEHOUSE_PRINCIPAL: 'tester', ...env });
  const destination = new Writable({ write: (_chunk, _enc, done) => done() });
  const { audit, records } = memoryAudit({ name: 'spy', version: '1.0.0' });
  const runtime = createRuntime(config, createLogger({ level: 'error', destination }), { audit });
  const spy: Spy = { ran: [], signals: [], list: 'ok' };
  const connection = await connectInMemory(createServerFactory(spyServer(spy, options), runtime), {
    era,
  });
  const h: Harness = { ...connection, records, spy };
  open.push(h);
  return h;
}

/** Every request a client may send, with params that reach the server's code where any can. */
const REQUESTS: ReadonlyArray<{ method: string; params?: Record<string, unknown> }> = [
  { method: 'ping' },
  { method: 'server/discover' },
  { method: 'tools/list' },
  { method: 'tools/call', params: { name: 'spy_tool', arguments: {} } },
  { method: 'resources/list' },
  { method: 'resources/templates/list' },
  { method: 'resources/read', params: { uri: 'spy://fixed' } },
  { method: 'resources/read', params: { uri: 'spy://items/a' } },
  { method: 'resources/subscribe', params: { uri: 'spy://fixed' } },
  { method: 'resources/unsubscribe', params: { uri: 'spy://fixed' } },
  { method: 'prompts/list' },
  { method: 'prompts/get', params: { name: 'spy_prompt', arguments: { item: 'a' } } },
  {
    method: 'completion/complete',
    params: {
      ref: { type: 'ref/resource', uri: 'spy://items/{item}' },
      argument: { name: 'item', value: '' },
    },
  },
  {
    method: 'completion/complete',
    params: {
      ref: { type: 'ref/prompt', name: 'spy_prompt' },
      argument: { name: 'item', value: '' },
    },
  },
  { method: 'logging/setLevel', params: { level: 'info' } },
];

describe.each<Era>(['legacy', 'modern'])('over the %s era', (era) => {
  it('no request runs server code without a record of its own method', async () => {
    const { client, records, spy } = await harness(era);
    let reached = 0;
    for (const { method, params } of REQUESTS) {
      const [ranBefore, recordsBefore] = [spy.ran.length, records.length];
      try {
        await client.request({ method, ...(params === undefined ? {} : { params }) } as never);
      } catch {
        // Methods this server or era does not serve answer an error: still a request.
      }
      const ran = spy.ran.slice(ranBefore);
      const written = records.slice(recordsBefore).map((r) => r.event.action);
      if (ran.length > 0) {
        reached++;
        expect({ method, ran, written }).toEqual({ method, ran, written: [method] });
      }
    }
    // The oracle saw every kind of callback run (a method that reached none proves nothing).
    expect(reached).toBe(7);
    expect(new Set(spy.ran)).toEqual(
      new Set([
        'tool',
        'list',
        'static read',
        'template read',
        'prompt',
        'template completer',
        'prompt completer',
      ]),
    );
    // And each ran with the runner's signal, live while it ran.
    expect(spy.signals).toHaveLength(spy.ran.length);
  });

  it('resources/list asking a list() is recorded like a read: who, what came back', async () => {
    const { client, records } = await harness(era);
    const listed = await client.listResources();
    expect(listed.resources.map((r) => r.uri)).toEqual(['spy://fixed', 'spy://items/a']);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      event: { action: 'resources/list', outcome: 'success', reason: 'ok' },
      mcp: { name: 'resources/list' },
      policy: { decision: 'allow', rule: 'scope' },
      result: { items: 2 },
      user: { id: 'tester' },
    });
  });

  it('a list() that ignores its signal is stopped at the deadline, and says so', async () => {
    const { client, records, spy } = await harness(era, { GATEHOUSE_TOOL_TIMEOUT_MS: '300' });
    spy.list = 'hang';
    const started = Date.now();
    await expect(client.listResources()).rejects.toThrow(
      /resources\/list did not finish within 0\.3s and was stopped/,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(spy.signals[0]!.aborted).toBe(true);
    expect(records.map((r) => [r.event.action, r.event.reason])).toEqual([
      ['resources/list', 'timeout'],
    ]);
  });

  it('an upstream failure of a list() is recorded, its detail kept from the caller', async () => {
    const { client, records, spy } = await harness(era);
    spy.list = 'fail';
    const failure = await client.listResources().then(
      () => undefined,
      (error: Error) => error,
    );
    expect(failure?.message).toMatch(/Spy failed \(503\)/);
    expect(failure?.message).not.toContain('10.0.0.7');
    expect(records.map((r) => [r.event.action, r.event.reason, r.upstream?.status])).toEqual([
      ['resources/list', 'upstream_error', 503],
    ]);
  });

  it('a cursor that cannot be one is refused before list() is asked; a good one pages', async () => {
    const { client, records, spy } = await harness(era);
    await expect(client.listResources({ cursor: 'not-a-cursor' })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('Invalid cursor'),
    });
    expect(spy.ran).toEqual([]);
    // One past the end is a cursor this server could write, for a shorter list: refused after.
    const past = Buffer.from(JSON.stringify({ v: 1, o: 3 })).toString('base64url');
    await expect(client.listResources({ cursor: past })).rejects.toMatchObject({ code: -32602 });
    expect(records.map((r) => [r.event.action, r.event.reason])).toEqual([
      ['resources/list', 'invalid_params'],
      ['resources/list', 'invalid_params'],
    ]);
  });
});

it('a listing that asks no list() reaches nothing: answered as tools/list is, unrecorded', async () => {
  const { client, records, spy } = await harness('legacy', {}, { listing: false });
  const listed = await client.listResources();
  expect(listed.resources.map((r) => r.uri)).toEqual(['spy://fixed']);
  expect(spy.ran).toEqual([]);
  expect(records).toEqual([]);
});
