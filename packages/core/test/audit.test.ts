import { AuditLog } from '@gatehouse/audit';
import type { AuditRecord, LineSink } from '@gatehouse/audit';
import { baseConfigSchema, loadConfig } from '@gatehouse/core';
import {
  createLogger,
  createRuntime,
  createServerFactory,
  lifecycleEntry,
  redactArgs,
  scrubSecrets,
} from '@gatehouse/core/runtime';
import { connectInMemory, resultText } from '@gatehouse/testkit';
import type { Connection, Era } from '@gatehouse/testkit';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createDemoServer } from './fixtures/demo.ts';
import type { DemoProbe } from './fixtures/demo.ts';
import { expectSchemaValid } from './schema.ts';

/** A sink that can be told to fail like a full disk. */
function flakySink(records: AuditRecord[]): LineSink & { broken: boolean } {
  const sink = {
    name: 'file:/var/log/gatehouse/audit.jsonl',
    broken: false,
    write(line: string) {
      if (sink.broken)
        throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
      records.push(JSON.parse(line) as AuditRecord);
    },
    close: () => undefined,
  };
  return sink;
}

const open: Connection[] = [];
afterEach(async () => {
  for (const c of open.splice(0)) await c.close();
});

async function setup(env: Record<string, string> = {}) {
  const records: AuditRecord[] = [];
  const sink = flakySink(records);
  const audit = new AuditLog({ sinks: [sink], service: { name: 'demo', version: '1.0.0' } });
  const config = loadConfig(baseConfigSchema, { GATEHOUSE_ENABLE_WRITES: 'true', ...env });
  const logger = createLogger({ destination: new Writable({ write: (_c, _e, done) => done() }) });
  const probe: DemoProbe = { aborted: [], posted: [] };
  const factory = createServerFactory(
    createDemoServer({ probe }),
    createRuntime(config, logger, { audit }),
  );
  const connection = await connectInMemory(factory);
  open.push(connection);
  return { client: connection.client, records, sink, probe, audit };
}

const text = resultText;

describe('the audit record of a call', () => {
  it('keeps a redacted copy of what a write tool sent, secrets scrubbed', async () => {
    const { client, records } = await setup();
    const message = `deploy with token xoxb-1234567890-abcdefghij and ${'x'.repeat(1200)}`;
    await client.callTool({ name: 'demo_post', arguments: { message } });
    const record = records.find((r) => r.event.action === 'tools/call')!;
    expect(record.tool).toMatchObject({ name: 'demo_post', access: 'write', read_only: false });
    // A write carrying a token is refused before it runs (outgoing_secret); its record still
    // keeps the redacted arguments as evidence.
    expect(record.event.type).toEqual(['change', 'denied']);
    expect(record.policy).toEqual({ decision: 'deny', rule: 'outgoing_secret' });
    const redacted = (record.args!.redacted as { message: string }).message;
    expect(redacted).toContain('[REDACTED:slack-token]');
    expect(redacted).not.toContain('xoxb-');
    expect(redacted).toMatch(/…\[\d+ more characters\]$/);
    expect(record.args!.sha256).toMatch(/^sha256:/);
    expectSchemaValid(records);
  });

  it('scrubs credentials from what a tool returns, and flags it', async () => {
    const { client, records } = await setup();
    const result = await client.callTool({ name: 'demo_leak', arguments: {} });
    expect(text(result)).toBe(
      'token [REDACTED:github-token] and postgres://app:[REDACTED:password]@db.internal/prod',
    );
    expect(records[0]!.sanitizer).toEqual({ flags: ['secret'] });
  });
});

describe('the record as built', () => {
  it('is in canonical key order at every level, so the writer serialises it without copying', async () => {
    const entries: unknown[] = [];
    class Capturing extends AuditLog {
      override append(entry: Parameters<AuditLog['append']>[0]) {
        entries.push(entry);
        return super.append(entry);
      }
    }
    const audit = new Capturing({ sinks: [], service: { name: 'demo', version: '1.0.0' } });
    const config = loadConfig(baseConfigSchema, { GATEHOUSE_ENABLE_WRITES: 'true' });
    const logger = createLogger({ destination: new Writable({ write: (_c, _e, done) => done() }) });
    const factory = createServerFactory(
      createDemoServer(),
      createRuntime(config, logger, { audit }),
    );
    const connection = await connectInMemory(factory);
    open.push(connection);
    const { client } = connection;
    await client.callTool({ name: 'demo_echo', arguments: { text: 'hi' } });
    await client.callTool({ name: 'demo_post', arguments: { message: 'ship it' } }); // redacted args
    await client.callTool({ name: 'demo_leak', arguments: {} }); // sanitizer flags
    await client.callTool({ name: 'demo_echo', arguments: { text: 1 } }); // invalid params
    for (const kind of ['crash', 'upstream503', 'upstream429'])
      await client.callTool({ name: 'demo_fail', arguments: { kind } }); // error, upstream
    await client.readResource({ uri: 'demo://boards/general' }); // target
    expect(entries.length).toBeGreaterThanOrEqual(8);
    const outOfOrder: string[] = [];
    const walk = (value: unknown, path: string): void => {
      if (typeof value !== 'object' || value === null) return;
      if (Array.isArray(value)) return value.forEach((v, i) => walk(v, `${path}[${i}]`));
      const keys = Object.keys(value);
      if (keys.join() !== [...keys].sort().join()) outOfOrder.push(`${path}: ${keys.join(', ')}`);
      for (const key of keys) {
        // What the caller sent keeps the caller's order (canonical JSON sorts it when written).
        if (!`${path}.${key}`.match(/^\.args\.(shape|redacted)$/))
          walk((value as Record<string, unknown>)[key], `${path}.${key}`);
      }
    };
    for (const entry of entries) walk(entry, '');
    expect(outOfOrder).toEqual([]);
  });
});

describe('when the record is written', () => {
  type Call = (client: Connection['client']) => Promise<unknown>;
  const tool =
    (name: string, args: Record<string, unknown>): Call =>
    (client) =>
      client.callTool({ name, arguments: args });

  /** Records written when the answer arrived, and after the rest of that turn. */
  async function answeredWith(env: Record<string, string>, call: Call, era: Era = 'legacy') {
    const records: AuditRecord[] = [];
    const audit = new AuditLog({
      sinks: [flakySink(records)],
      service: { name: 'd', version: '1' },
    });
    const config = loadConfig(baseConfigSchema, { GATEHOUSE_ENABLE_WRITES: 'true', ...env });
    const logger = createLogger({ destination: new Writable({ write: (_c, _e, done) => done() }) });
    const runtime = createRuntime(config, logger, { audit, readsAfterAnswer: true });
    const factory = createServerFactory(createDemoServer(), runtime);
    const connection = await connectInMemory(factory, { era });
    open.push(connection);
    await call(connection.client).catch(() => undefined); // a refusal is answered too
    const atAnswer = records.length;
    await new Promise((resolve) => setImmediate(resolve));
    return { atAnswer, afterTurn: records.length };
  }
  const after = { atAnswer: 0, afterTurn: 1 };
  const before = { atAnswer: 1, afterTurn: 1 };

  it.each<Era>(['legacy', 'modern'])(
    'reads — tools, resources, prompts, refusals — right after the answer by default (%s era)',
    async (era) => {
      const reads: Call[] = [
        tool('demo_echo', { text: 'hi' }),
        tool('demo_echo', { text: 3 }),
        (client) => client.readResource({ uri: 'demo://boards/general' }),
        (client) => client.readResource({ uri: 'demo://boards/nowhere' }),
        (client) => client.getPrompt({ name: 'demo_summarise', arguments: { board: 'general' } }),
      ];
      for (const read of reads) expect(await answeredWith({}, read, era)).toEqual(after);
    },
  );

  it('reads with GATEHOUSE_AUDIT_READ_RECORDS=before_answer, and writes always: before it', async () => {
    const beforeAnswer = { GATEHOUSE_AUDIT_READ_RECORDS: 'before_answer' };
    expect(await answeredWith(beforeAnswer, tool('demo_echo', { text: 'hi' }))).toEqual(before);
    const resource: Call = (client) => client.readResource({ uri: 'demo://boards/general' });
    expect(await answeredWith(beforeAnswer, resource)).toEqual(before);
    for (const env of [{}, beforeAnswer]) {
      for (const era of ['legacy', 'modern'] as const) {
        const post = tool('demo_post', { message: 'ship it' });
        expect(await answeredWith(env, post, era)).toEqual(before);
      }
    }
  });
});

describe('when the audit trail cannot be written', () => {
  it('refuses write tools by default, says why, and keeps serving reads', async () => {
    const { client, records, sink, probe, audit } = await setup();
    sink.broken = true;
    await client.callTool({ name: 'demo_echo', arguments: { text: 'noticed' } }); // the failure is found here
    expect(audit.failures.size).toBe(1);
    const refused = await client.callTool({ name: 'demo_post', arguments: { message: 'ship it' } });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toBe(
      'Refused: the audit trail cannot be written (file:/var/log/gatehouse/audit.jsonl: ENOSPC), so write tools are disabled until it recovers. Nothing was changed; tell the operator.',
    );
    expect(probe.posted).toEqual([]);
    const read = await client.callTool({ name: 'demo_echo', arguments: { text: 'still here' } });
    expect(text(read)).toBe('still here');
    // The disk recovers: the next record is written and writes work again.
    sink.broken = false;
    await client.callTool({ name: 'demo_echo', arguments: { text: 'recovered' } });
    const ok = await client.callTool({ name: 'demo_post', arguments: { message: 'ship it' } });
    expect(text(ok)).toBe('posted 7 characters');
    expect(records.map((r) => r.event.reason)).toEqual(['ok', 'ok']);
    // The chain has a visible gap where the sink was down (seq 0..2 were never written).
    expect(records.map((r) => r.audit.seq)).toEqual([3, 4]);
  });

  it('refuses every request in refuse_all mode (tools, reads, prompts), and nothing in continue mode', async () => {
    const all = await setup({ GATEHOUSE_AUDIT_ON_FAILURE: 'refuse_all' });
    all.sink.broken = true;
    await all.client.callTool({ name: 'demo_noop', arguments: {} });
    const refused = await all.client.callTool({ name: 'demo_echo', arguments: { text: 'x' } });
    expect(text(refused)).toContain('so no request is served until it recovers');
    // Every method goes through the same stage: a read and a prompt are refused alike.
    await expect(all.client.readResource({ uri: 'demo://readme' })).rejects.toThrow(
      'so no request is served until it recovers',
    );
    await expect(
      all.client.getPrompt({ name: 'demo_summarise', arguments: { board: 'general' } }),
    ).rejects.toThrow('so no request is served until it recovers');

    const cont = await setup({ GATEHOUSE_AUDIT_ON_FAILURE: 'continue' });
    cont.sink.broken = true;
    await cont.client.callTool({ name: 'demo_noop', arguments: {} });
    const posted = await cont.client.callTool({ name: 'demo_post', arguments: { message: 'm' } });
    expect(text(posted)).toBe('posted 1 characters');
  });
});

describe('lifecycle records', () => {
  it('describe start, stop, refused configuration and authentication failures', () => {
    const records: AuditRecord[] = [];
    const audit = new AuditLog({
      sinks: [flakySink(records)],
      service: { name: 'demo', version: '1.0.0' },
    });
    audit.append(lifecycleEntry('gatehouse/start', { tools: [] }));
    audit.append(
      lifecycleEntry('gatehouse/config_refused', { problems: ['X: bad'] }, { outcome: 'failure' }),
    );
    audit.append(
      lifecycleEntry(
        'gatehouse/auth_failure',
        { reason: 'expired token' },
        { outcome: 'failure', sourceIp: '10.0.0.9' },
      ),
    );
    audit.append(lifecycleEntry('gatehouse/stop', { reason: 'crash' }, { outcome: 'failure' }));
    audit.close();
    expect(records.map((r) => [r.event.action, r.event.outcome, r.event.reason])).toEqual([
      ['gatehouse/start', 'success', 'started'],
      ['gatehouse/config_refused', 'failure', 'config_invalid'],
      ['gatehouse/auth_failure', 'failure', 'auth_failed'],
      ['gatehouse/stop', 'failure', 'internal_error'],
      ['audit/checkpoint', 'success', 'checkpoint'],
    ]);
    expectSchemaValid(records);
  });
});

describe('scrubSecrets', () => {
  it.each([
    ['ghp_0123456789abcdefghijABCDEFGHIJ012345', 'github-token'],
    ['github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz', 'github-token'],
    ['xoxp-12345-67890-abcdefABCDEF', 'slack-token'],
    ['https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXX', 'slack-webhook'],
    ['ATATT3xFfGF0abcdefghijklmnopqrstuvwxyz=1234ABCD', 'atlassian-token'],
    ['eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLWJ5dGVz', 'jwt'],
    ['AKIAIOSFODNN7EXAMPLE', 'aws-access-key'],
    ['aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', 'aws-secret-key'],
    [
      '-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA\n-----END PRIVATE KEY-----',
      'private-key',
    ],
    ['https://deploy:hunter22@git.internal/repo.git', 'url-credentials'],
    ['Authorization: Bearer abcdefghijklmnop0123456789', 'bearer'],
  ])('removes %s', (secret, kind) => {
    const { text: out, kinds } = scrubSecrets(`before ${secret} after`);
    expect(kinds).toContain(kind);
    expect(out).toMatch(/^before .*REDACTED.* after$/s);
    expect(out).not.toContain(secret);
  });

  it('leaves ordinary text alone', () => {
    const ordinary =
      'Issue #45: eyes on the token bucket; AKIA is a prefix; see https://example.com/a@b';
    expect(scrubSecrets(ordinary)).toEqual({ text: ordinary, kinds: [] });
  });

  it('is what the redacted argument view uses', () => {
    expect(redactArgs({ note: 'key AKIAIOSFODNN7EXAMPLE', n: 3, nested: [{ t: 'ok' }] })).toEqual({
      note: 'key [REDACTED:aws-access-key]',
      n: 3,
      nested: [{ t: 'ok' }],
    });
  });
});
