import { Writable } from 'node:stream';
import {
  READ_ONLY_ANNOTATIONS,
  baseConfigSchema,
  defineServer,
  defineTool,
  loadConfig,
} from '@gatehouse/core';
import { createLogger, createRuntime, createServerFactory } from '@gatehouse/core/runtime';
import type { ServerDefinition } from '@gatehouse/core';
import type { AuditRecord } from '@gatehouse/audit';
import { connectInMemory, memoryAudit, resultText } from '@gatehouse/testkit';
import type { Connection, Era } from '@gatehouse/testkit';
import * as z from 'zod';
import { afterEach, describe, expect, it } from 'vitest';
import { createDemoServer } from './fixtures/demo.ts';
import { expectSchemaValid } from './schema.ts';
import type { DemoProbe } from './fixtures/demo.ts';

interface Harness extends Connection {
  records: AuditRecord[];
  logs: () => string;
  probe: DemoProbe;
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
  options: { pageSize?: number; definition?: ServerDefinition; extraTools?: number } = {},
): Promise<Harness> {
  const config = loadConfig(baseConfigSchema, { GATEHOUSE_PRINCIPAL: 'tester', ...env });
  let logText = '';
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      logText += chunk.toString();
      done();
    },
  });
  const logger = createLogger({ level: 'debug', destination });
  const probe: DemoProbe = { aborted: [], posted: [] };
  const { audit, records } = memoryAudit({ name: 'demo', version: '1.0.0' });
  const runtime = {
    ...createRuntime(config, logger, { audit }),
    ...(options.pageSize === undefined ? {} : { pageSize: options.pageSize }),
  };
  const definition =
    options.definition ??
    createDemoServer({ probe, ...(options.extraTools ? { extraTools: options.extraTools } : {}) });
  const connection = await connectInMemory(createServerFactory(definition, runtime), { era });
  const h: Harness = { ...connection, records, logs: () => logText, probe };
  open.push(h);
  return h;
}

const text = resultText;

async function rpcError(promise: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await promise;
  } catch (error) {
    return error as { code: number; message: string };
  }
  throw new Error('expected a JSON-RPC error');
}

describe.each<Era>(['legacy', 'modern'])('pipeline over the %s era', (era) => {
  it('lists read tools with all four annotations and strict schemas; write tools stay off', async () => {
    const { client } = await harness(era);
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toContain('demo_echo');
    expect(names).not.toContain('demo_post');
    const echo = tools.find((t) => t.name === 'demo_echo')!;
    expect(echo.annotations).toEqual({
      title: 'Echo',
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    });
    expect(echo.inputSchema).toMatchObject({ type: 'object', required: ['text'] });
    // `additionalProperties: false` is not listed: the server refuses an unknown argument by name.
    expect(echo.inputSchema.additionalProperties).toBeUndefined();
    const unknown = await client.callTool({
      name: 'demo_echo',
      arguments: { text: 'x', colour: 'red' },
    });
    expect(unknown.isError).toBe(true);
    expect(JSON.stringify(unknown.content)).toContain('colour');
    // JSON Schema 2020-12 is MCP's default dialect: no $schema in every listing.
    expect(JSON.stringify(tools)).not.toContain('$schema');
    // Output schemas are listed only with GATEHOUSE_STRUCTURED_OUTPUT (the next test).
    expect(tools.find((t) => t.name === 'demo_stats')!.outputSchema).toBeUndefined();
  });

  it('lists output schemas with GATEHOUSE_STRUCTURED_OUTPUT', async () => {
    const { client } = await harness(era, { GATEHOUSE_STRUCTURED_OUTPUT: 'true' });
    const { tools } = await client.listTools();
    expect(tools.find((t) => t.name === 'demo_stats')!.outputSchema).toMatchObject({
      type: 'object',
    });
  });

  it('calls a tool and audits one success with target and definition hash', async () => {
    const { client, records } = await harness(era);
    const result = await client.callTool({
      name: 'demo_echo',
      arguments: { text: 'hi', repeat: 2 },
    });
    expect(result.isError).toBeFalsy();
    expect(text(result)).toBe('hihi');
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      event: {
        action: 'tools/call',
        outcome: 'success',
        reason: 'ok',
        category: ['api'],
        type: ['access'],
      },
      user: { id: 'tester' },
      auth: { method: 'local' },
      target: { resource: 'demo:echo/2' },
      mcp: { name: 'demo_echo', era, transport: 'stdio' },
      tool: { name: 'demo_echo', access: 'read', read_only: true },
      policy: { decision: 'allow', rule: 'read_tool' },
      args: { shape: { repeat: 'number', text: 'string' } },
      result: { items: 1 },
    });
    expect(records[0]!.tool!.definition_hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(records[0]!.args!.redacted).toBeUndefined();
    expect(JSON.stringify(records[0])).not.toContain('hihi');
    expect(records[0]!.event.duration).toBeGreaterThan(0);
  });

  it('answers an unknown tool with a JSON-RPC -32602 and audits it', async () => {
    const { client, records } = await harness(era);
    const error = await rpcError(client.callTool({ name: 'nope_tool', arguments: {} }));
    expect(error.code).toBe(-32602);
    expect(error.message).toContain('Unknown tool: nope_tool');
    expect(records.map((r) => r.event.reason)).toEqual(['not_found']);
  });

  it('answers bad arguments with a tool error naming the field, and never runs the handler', async () => {
    const { client, records } = await harness(era);
    const missing = await client.callTool({ name: 'demo_echo', arguments: {} });
    expect(missing.isError).toBe(true);
    expect(text(missing)).toContain('Invalid arguments for demo_echo');
    expect(text(missing)).toContain('text');
    const unknownKey = await client.callTool({
      name: 'demo_echo',
      arguments: { text: 'x', extra: true },
    });
    expect(unknownKey.isError).toBe(true);
    expect(text(unknownKey)).toMatch(/extra/);
    const tooLong = await client.callTool({
      name: 'demo_echo',
      arguments: { text: 'x'.repeat(201) },
    });
    expect(text(tooLong)).toMatch(/200/);
    expect(records.map((r) => r.event.reason)).toEqual([
      'invalid_params',
      'invalid_params',
      'invalid_params',
    ]);
  });

  it('answers an unknown method with -32601', async () => {
    const { client } = await harness(era);
    const error = await rpcError(
      client.request({ method: 'gatehouse/nothing', params: {} }, z.object({}).loose()),
    );
    expect(error.code).toBe(-32601);
  });

  it('pages tools/list and rejects a forged cursor with -32602', async () => {
    const { client } = await harness(era, {}, { pageSize: 5, extraTools: 12 });
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      // A raw request: the SDK's listTools() follows cursors by itself.
      const page = await client.request({
        method: 'tools/list',
        params: cursor === undefined ? {} : { cursor },
      });
      expect(page.tools.length).toBeLessThanOrEqual(5);
      seen.push(...page.tools.map((t) => t.name));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toHaveLength(11 + 12); // 12 demo tools minus the write tool, plus 12 extras
    for (const bad of ['not-a-cursor', Buffer.from('{"v":1,"o":9999}').toString('base64url')]) {
      const error = await rpcError(
        client.request({ method: 'tools/list', params: { cursor: bad } }),
      );
      expect(error.code).toBe(-32602);
      expect(error.message).toContain('Invalid cursor');
    }
  });

  it('hides the detail of a handler crash from the client and logs it', async () => {
    const { client, records, logs } = await harness(era);
    const result = await client.callTool({ name: 'demo_fail', arguments: { kind: 'crash' } });
    expect(result.isError).toBe(true);
    const message = text(result);
    expect(message).toMatch(/internal error \(incident [0-9a-f-]{36}\)/);
    expect(message).not.toContain('hunter2');
    expect(records[0]).toMatchObject({ event: { reason: 'internal_error' } });
    expect(message).toContain(records[0]!.event.id);
    expect(logs()).toContain('tool handler failed');
    expect(logs()).toContain(records[0]!.event.id);
  });

  it('passes a business error through as a tool error the model can act on', async () => {
    const { client, records } = await harness(era);
    const result = await client.callTool({ name: 'demo_fail', arguments: { kind: 'tool' } });
    expect(result.isError).toBe(true);
    expect(text(result)).toBe('The board is archived; pick another board.');
    expect(records[0]!.event.reason).toBe('tool_error');
  });

  it('keeps the meaning of an upstream 4xx and hides the detail of a 5xx', async () => {
    const { client, records } = await harness(era);
    const notFound = await client.callTool({
      name: 'demo_fail',
      arguments: { kind: 'upstream404' },
    });
    expect(notFound.isError).toBe(true);
    expect(text(notFound)).toBe('Demo answered 404 (not found): no such board');
    const down = await client.callTool({ name: 'demo_fail', arguments: { kind: 'upstream503' } });
    expect(down.isError).toBe(true);
    expect(text(down)).toContain('Demo failed (503)');
    expect(text(down)).not.toContain('10.0.0.7');
    const limited = await client.callTool({
      name: 'demo_fail',
      arguments: { kind: 'upstream429' },
    });
    expect(text(limited)).toBe('Demo rate limit reached. Retry after 30s.');
    expect(records.map((r) => r.event.reason)).toEqual([
      'upstream_error',
      'upstream_error',
      'rate_limited',
    ]);
    expect(records[1]!.upstream).toEqual({ status: 503, request_id: 'req-123' });
    expect(records[2]!.upstream).toEqual({ status: 429, retry_after_s: 30 });
  });

  it('stops a call at its deadline with a tool error, even if the handler ignores the signal', async () => {
    const { client, records, probe } = await harness(era);
    for (const ignoreAbort of [false, true]) {
      const started = Date.now();
      const result = await client.callTool({
        name: 'demo_slow',
        arguments: { ms: 20_000, ignoreAbort },
      });
      expect(result.isError).toBe(true);
      expect(text(result)).toContain('did not finish within 1.5s');
      expect(Date.now() - started).toBeLessThan(15_000);
    }
    expect(records.map((r) => r.event.reason)).toEqual(['timeout', 'timeout']);
    expect(probe.aborted[0]).toBe('DeadlineExceededError: deadline of 1500 ms exceeded');
  });

  it('aborts the handler when the client cancels, and audits the cancellation', async () => {
    const { client, records, probe } = await harness(era);
    const controller = new AbortController();
    const call = client.callTool(
      { name: 'demo_slow', arguments: { ms: 1_000 } },
      { signal: controller.signal },
    );
    setTimeout(() => controller.abort('user pressed stop'), 100);
    await expect(call).rejects.toThrow();
    await expect.poll(() => records.map((r) => r.event.reason)).toEqual(['cancelled']);
    expect(probe.aborted).toHaveLength(1);
    expect(probe.aborted[0]).toBe('CancelledError: cancelled by the client');
  });

  it('reports progress monotonically to a client that asked for it', async () => {
    const { client } = await harness(era);
    const seen: number[] = [];
    const result = await client.callTool(
      { name: 'demo_slow', arguments: { ms: 40 } },
      { onprogress: (p) => seen.push(p.progress) },
    );
    expect(text(result)).toBe('waited 40 ms');
    expect(seen).toEqual([1, 2, 3, 4]);
  });

  it('answers with one copy by default: the text, still checked against the output schema', async () => {
    const { client, records } = await harness(era);
    const good = await client.callTool({ name: 'demo_stats', arguments: { values: [1, 2, 3] } });
    expect(good.structuredContent).toBeUndefined();
    expect(JSON.parse(text(good))).toEqual({ count: 3, sum: 6 });
    const bad = await client.callTool({
      name: 'demo_stats',
      arguments: { values: [1], lie: true },
    });
    expect(bad.isError).toBe(true);
    expect(records.map((r) => r.event.reason)).toEqual(['ok', 'internal_error']);
  });

  it('holds what is sent to the budget: the text alone by default, the structured copy when on', async () => {
    const args = { values: [1, 2], detail: 5_000 };
    const budget = { GATEHOUSE_MAX_OUTPUT_BYTES: '1024' };
    const off = await harness(era, budget);
    const alone = await off.client.callTool({ name: 'demo_stats', arguments: args });
    expect(alone.isError).toBeFalsy();
    expect(text(alone)).toBe('2 values, sum 3');
    const on = await harness(era, { ...budget, GATEHOUSE_STRUCTURED_OUTPUT: 'true' });
    const both = await on.client.callTool({ name: 'demo_stats', arguments: args });
    expect(both.isError).toBe(true);
    expect(text(both)).toMatch(/over its 1024-byte budget/);
  });

  it('returns structured content that matches the output schema, and refuses one that does not', async () => {
    const { client, records } = await harness(era, { GATEHOUSE_STRUCTURED_OUTPUT: 'true' });
    const good = await client.callTool({ name: 'demo_stats', arguments: { values: [1, 2, 3] } });
    expect(good.structuredContent).toEqual({ count: 3, sum: 6 });
    expect(JSON.parse(text(good))).toEqual({ count: 3, sum: 6 });
    const bad = await client.callTool({
      name: 'demo_stats',
      arguments: { values: [1], lie: true },
    });
    expect(bad.isError).toBe(true);
    expect(bad.structuredContent).toBeUndefined();
    expect(records.map((r) => r.event.reason)).toEqual(['ok', 'internal_error']);
  });

  it('sanitises tool output but keeps emoji, flags and non-Latin scripts', async () => {
    const { client, records } = await harness(era);
    const result = await client.callTool({ name: 'demo_dirty', arguments: {} });
    expect(text(result)).toBe('red:RED bell: bidi:evil tag: zw:ab ok:👩‍💻 🏴󠁧󠁢󠁳󠁣󠁴󠁿 日本 עברית');
    expect(records[0]!.sanitizer!.flags).toEqual(['ansi', 'bidi', 'control', 'tag', 'zero_width']);
  });

  it('reads static and templated resources, completes template variables, and 404s the rest', async () => {
    const { client, records } = await harness(era);
    const listed = await client.listResources();
    expect(listed.resources.map((r) => r.uri)).toEqual([
      'demo://readme',
      'demo://boards/general',
      'demo://boards/random',
    ]);
    const templates = await client.listResourceTemplates();
    expect(templates.resourceTemplates.map((t) => t.uriTemplate)).toEqual([
      'demo://boards/{board}',
    ]);
    const readme = await client.readResource({ uri: 'demo://readme' });
    expect(readme.contents[0]).toMatchObject({ uri: 'demo://readme', text: '# Demo' });
    const board = await client.readResource({ uri: 'demo://boards/general' });
    expect(JSON.parse((board.contents[0] as { text: string }).text)).toEqual({ board: 'general' });
    const missing = await rpcError(client.readResource({ uri: 'demo://boards/nope' }));
    expect([-32002, -32602]).toContain(missing.code);
    const unknown = await rpcError(client.readResource({ uri: 'other://x' }));
    expect([-32002, -32602]).toContain(unknown.code);
    const completion = await client.complete({
      ref: { type: 'ref/resource', uri: 'demo://boards/{board}' },
      argument: { name: 'board', value: 'ge' },
    });
    expect(completion.completion).toEqual({
      values: ['general', 'gear'],
      total: 2,
      hasMore: false,
    });
    expect(records.map((r) => [r.event.action, r.event.reason, r.target?.resource])).toEqual([
      // The listing asked the board template's list(): it has its record like a read.
      ['resources/list', 'ok', undefined],
      ['resources/read', 'ok', undefined],
      ['resources/read', 'ok', 'demo:board/general'],
      ['resources/read', 'not_found', 'demo:board/nope'],
      ['resources/read', 'not_found', undefined],
      ['completion/complete', 'ok', undefined],
    ]);
  });

  it('gets prompts, completes their arguments, and rejects missing or invalid arguments with -32602', async () => {
    const { client, records } = await harness(era);
    const { prompts } = await client.listPrompts();
    expect(prompts[0]).toMatchObject({
      name: 'demo_summarise',
      arguments: [
        { name: 'board', required: true },
        { name: 'tone', required: false },
      ],
    });
    const got = await client.getPrompt({ name: 'demo_summarise', arguments: { board: 'general' } });
    expect(got.messages[0]!.content).toEqual({
      type: 'text',
      text: 'Summarise board general in a neutral tone.',
    });
    const missing = await rpcError(client.getPrompt({ name: 'demo_summarise', arguments: {} }));
    expect(missing.code).toBe(-32602);
    expect(missing.message).toContain(
      'Missing required argument(s) for prompt demo_summarise: board',
    );
    const invalid = await rpcError(
      client.getPrompt({ name: 'demo_summarise', arguments: { board: 'Robert; DROP' } }),
    );
    expect(invalid.code).toBe(-32602);
    expect(invalid.message).toContain('lowercase letters only');
    const extra = await rpcError(
      client.getPrompt({ name: 'demo_summarise', arguments: { board: 'x', colour: 'red' } }),
    );
    expect(extra.message).toContain('Unknown argument(s)');
    const unknown = await rpcError(client.getPrompt({ name: 'nope', arguments: {} }));
    expect(unknown.code).toBe(-32602);
    const completion = await client.complete({
      ref: { type: 'ref/prompt', name: 'demo_summarise' },
      argument: { name: 'board', value: 'r' },
    });
    expect(completion.completion.values).toEqual(['random']);
    expect(records.map((r) => r.event.reason)).toEqual([
      'ok',
      'invalid_params',
      'invalid_params',
      'invalid_params',
      'not_found',
      'ok',
    ]);
    // A prompt declares its target like a tool: the record names it.
    expect(records[0]!.target).toEqual({ resource: 'demo:board/general' });
  });
});

describe('stage order: policy, then validation, then the handler', () => {
  it('refuses a hidden tool before looking at its arguments', async () => {
    const { client, records, probe } = await harness('legacy');
    await expect(
      client.callTool({ name: 'demo_post', arguments: { wrong: 1 } }),
    ).rejects.toMatchObject({ code: -32602, message: expect.stringContaining('Unknown tool') });
    expect(records.map((r) => r.event.reason)).toEqual(['denied']);
    expect(probe.posted).toEqual([]);
  });

  it('never runs a handler with arguments that failed validation', async () => {
    const { client, records, probe } = await harness('legacy', { GATEHOUSE_ENABLE_WRITES: 'true' });
    const result = await client.callTool({ name: 'demo_post', arguments: { message: '' } });
    expect(result.isError).toBe(true);
    expect(probe.posted).toEqual([]);
    expect(records.map((r) => [r.event.reason, r.policy?.decision])).toEqual([
      ['invalid_params', 'allow'],
    ]);
  });
});

describe('the listing leaves validation detail to the server', () => {
  it('lists no string lengths, but a call that breaks one is refused with an error naming it', async () => {
    const { client, records } = await harness('legacy');
    const { tools } = await client.listTools();
    const echo = tools.find((t) => t.name === 'demo_echo')!;
    const properties = echo.inputSchema.properties as Record<string, Record<string, unknown>>;
    expect(properties.text).toEqual({ type: 'string', description: 'Text to echo' });
    // Numeric ranges stay: they tell the model which values make sense.
    expect(properties.repeat).toMatchObject({ type: 'integer', minimum: 1, maximum: 3 });
    const result = await client.callTool({
      name: 'demo_echo',
      arguments: { text: 'x'.repeat(201) },
    });
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toMatch(/text.*200/);
    expect(records.map((r) => r.event.reason)).toEqual(['invalid_params']);
  });
});

describe('the listing drops schema keywords, never what a tool calls its arguments', () => {
  it('keeps arguments named like keywords, data verbatim, and one description per argument', async () => {
    const definition = defineServer({
      name: 'keywords',
      version: '1.0.0',
      tools: [
        defineTool({
          name: 'kw_find',
          title: 'Find',
          description: 'Finds things by pattern.',
          access: 'read',
          annotations: READ_ONLY_ANNOTATIONS,
          input: z.strictObject({
            pattern: z.string().min(1).describe('A glob'),
            minLength: z.number().int().optional().describe('Shortest match'),
            description: z.string().optional().describe('Free text'),
            options: z
              .object({ pattern: z.string().max(5).describe('Inner glob') })
              .default({ pattern: 'a*' })
              .describe('More options'),
            who: z.array(z.string().max(9).describe('A login')).optional().describe('People'),
            since: z.string().max(10).nullable().optional().describe('A day, or null'),
            when: z
              .union([z.string(), z.object({ from: z.string() })])
              .optional()
              .describe('A day or a range'),
          }),
          handler: async ({ pattern }) => pattern,
        }),
      ],
    });
    const { client } = await harness('legacy', {}, { definition });
    const { tools } = await client.listTools();
    const schema = tools[0]!.inputSchema as Record<string, any>;
    expect(Object.keys(schema.properties)).toEqual([
      'pattern',
      'minLength',
      'description',
      'options',
      'who',
      'since',
      'when',
    ]);
    expect(schema.required).toEqual(expect.arrayContaining(['pattern']));
    expect(schema.properties.pattern).toEqual({ type: 'string', description: 'A glob' });
    expect(schema.properties.description).toEqual({ type: 'string', description: 'Free text' });
    // A nested object's own arguments keep their descriptions; its default is data, kept whole.
    expect(schema.properties.options.properties.pattern).toEqual({
      type: 'string',
      description: 'Inner glob',
    });
    expect(schema.properties.options.default).toEqual({ pattern: 'a*' });
    // Under a described argument, its items need no second description.
    expect(schema.properties.who).toEqual({
      type: 'array',
      items: { type: 'string' },
      description: 'People',
    });
    // Alternatives that are bare types are one list of types; others stay alternatives.
    expect(schema.properties.since).toEqual({
      type: ['string', 'null'],
      description: 'A day, or null',
    });
    expect(schema.properties.when.anyOf).toEqual([
      { type: 'string' },
      { type: 'object', properties: { from: { type: 'string' } }, required: ['from'] },
    ]);
    const nulled = await client.callTool({
      name: 'kw_find',
      arguments: { pattern: 'x*', since: null },
    });
    expect(nulled.isError).toBeFalsy();
    const result = await client.callTool({ name: 'kw_find', arguments: { pattern: 'x*' } });
    expect(result.isError).toBeFalsy();
  });
});

describe('policy: tools/list shows exactly what tools/call permits', () => {
  const settings: Array<Record<string, string>> = [
    {},
    { GATEHOUSE_ENABLE_WRITES: 'true' },
    { GATEHOUSE_ENABLE_WRITES: 'true', GATEHOUSE_READ_ONLY: 'true' },
    { GATEHOUSE_TOOLS_ENABLE: 'demo_post,demo_echo' },
    { GATEHOUSE_TOOLS_ENABLE: 'demo_post', GATEHOUSE_READ_ONLY: 'yes' },
    { GATEHOUSE_TOOLS_DISABLE: 'demo_echo,demo_noop' },
    { GATEHOUSE_ENABLE_WRITES: '1', GATEHOUSE_TOOLS_DISABLE: 'demo_post' },
  ];
  // demo_crash is left out: calling it ends the process (it has its own test).
  const all = createDemoServer()
    .tools.map((t) => t.name)
    .filter((n) => n !== 'demo_crash');

  it.each(settings)('has no mismatch with %o', async (env) => {
    const { client, records } = await harness('legacy', env);
    const listed = new Set((await client.listTools()).tools.map((t) => t.name));
    const mismatches: string[] = [];
    for (const name of all) {
      const args =
        name === 'demo_issue'
          ? { board: 'general' }
          : name === 'demo_echo'
            ? { text: 'x' }
            : name === 'demo_post'
              ? { message: 'm' }
              : name === 'demo_stats'
                ? { values: [1] }
                : name === 'demo_fail'
                  ? { kind: 'tool' }
                  : name === 'demo_slow'
                    ? { ms: 0 }
                    : {};
      let callable: boolean;
      try {
        await client.callTool({ name, arguments: args });
        callable = true;
      } catch (error) {
        expect((error as { code: number }).code).toBe(-32602);
        callable = false;
      }
      if (callable !== listed.has(name))
        mismatches.push(`${name}: listed=${listed.has(name)} callable=${callable}`);
    }
    expect(mismatches).toEqual([]);
    const denied = records.filter((r) => r.event.reason === 'denied');
    expect(denied).toHaveLength(all.filter((n) => !listed.has(n)).length);
    for (const r of denied) expect(r.policy?.decision).toBe('deny');
  });

  it('runs a write tool only when enabled, and never under read-only', async () => {
    const off = await harness('legacy');
    await expect(
      off.client.callTool({ name: 'demo_post', arguments: { message: 'hello' } }),
    ).rejects.toMatchObject({ code: -32602 });
    expect(off.probe.posted).toEqual([]);
    expect(off.records[0]!.policy).toEqual({ decision: 'deny', rule: 'writes_off' });

    const on = await harness('legacy', { GATEHOUSE_ENABLE_WRITES: 'true' });
    const result = await on.client.callTool({ name: 'demo_post', arguments: { message: 'hello' } });
    expect(text(result)).toBe('posted 5 characters');
    expect(on.probe.posted).toEqual(['hello']);

    const readOnly = await harness('legacy', {
      GATEHOUSE_ENABLE_WRITES: 'true',
      GATEHOUSE_TOOLS_ENABLE: 'demo_post',
      GATEHOUSE_READ_ONLY: 'true',
    });
    await expect(
      readOnly.client.callTool({ name: 'demo_post', arguments: { message: 'hello' } }),
    ).rejects.toMatchObject({ code: -32602 });
    expect(readOnly.probe.posted).toEqual([]);
    expect(readOnly.records[0]!.policy).toEqual({ decision: 'deny', rule: 'read_only' });
  });
});
