import { generateKeyPairSync } from 'node:crypto';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { main as auditCli, sha256Canonical } from '@gatehouse/audit';
import type { Client } from '@modelcontextprotocol/client';
import { connectHttp, connectStdio, eventually, spawnServer } from '@gatehouse/testkit';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { expectSchemaValid } from './schema.ts';

const demoServer = fileURLToPath(new URL('./fixtures/demo-server.ts', import.meta.url));

function keys(dir: string): { privateKey: string; publicFile: string } {
  const pair = generateKeyPairSync('ed25519');
  const publicFile = join(dir, 'audit-public.pem');
  writeFileSync(publicFile, pair.publicKey.export({ type: 'spki', format: 'pem' }));
  return {
    privateKey: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicFile,
  };
}

async function verify(...args: string[]): Promise<{ code: number; out: string }> {
  let out = '';
  const sink = new Writable({
    write(chunk: Buffer, _e, done) {
      out += chunk.toString();
      done();
    },
  });
  const code = await auditCli(['verify', ...args], sink, sink);
  return { code, out };
}

const records = (path: string): Array<Record<string, any>> =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, any>);

describe('the audit trail of a real server process', () => {
  it('loses no record on SIGTERM under a stream of calls, and ends with a signed, verifiable chain', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-audit-proc-'));
    const file = join(dir, 'audit.jsonl');
    const { privateKey, publicFile } = keys(dir);
    const env = {
      GATEHOUSE_TRANSPORT: 'http',
      GATEHOUSE_PORT: '0',
      GATEHOUSE_AUDIT_SINKS: 'file,stdout',
      GATEHOUSE_AUDIT_FILE: file,
      GATEHOUSE_AUDIT_CHECKPOINT_EVERY: '25',
      GATEHOUSE_AUDIT_SIGNING_KEY: privateKey,
    };
    let answered = 0;
    for (let run = 0; run < 2; run++) {
      const server = await spawnServer(process.execPath, [demoServer], { env });
      const connections = await Promise.all(
        Array.from({ length: 6 }, (_, w) =>
          connectHttp(server.url!, { era: w % 2 ? 'modern' : 'legacy' }),
        ),
      );
      const workers = connections.map(async ({ client, close }, w) => {
        try {
          for (;;) {
            await client.callTool({ name: 'demo_echo', arguments: { text: `w${w}` } });
            answered++;
          }
        } catch {
          // the server is draining or gone (503, reset, refused): this call was not answered
        } finally {
          await close().catch(() => undefined);
        }
      });
      // SIGTERM in the middle of the stream, once this run has answered some calls (a count,
      // not a time: a busy machine answers fewer calls in any fixed time).
      const before = answered;
      await eventually(
        () => answered - before,
        (n) => n >= 30,
        20_000,
        5,
      );
      server.child.kill('SIGTERM');
      await Promise.all(workers);
      expect(await server.exited()).toBe(0);
    }
    const all = [
      file,
      ...readdirSync(dir)
        .filter((f) => f.startsWith('audit.jsonl.'))
        .map((f) => join(dir, f)),
    ].flatMap(records);
    const calls = all.filter((r) => r.event.action === 'tools/call');
    expect(answered).toBeGreaterThan(50);
    expect(calls).toHaveLength(answered);
    expectSchemaValid(all);
    // One chain across both runs: the second start record continues the first run's chain.
    expect(all.filter((r) => r.audit.resumed !== undefined)).toHaveLength(1);
    const result = await verify('--key', publicFile, file);
    expect(result.code, result.out).toBe(0);
    expect(result.out).toMatch(/^intact: \d+ records in 1 chain\(s\)/);
    expect(result.out).toMatch(/signed, (\d+) signature\(s\) verified/);
  }, 60_000);

  it.each([
    ['default', {}] as const,
    ['structured output', { GATEHOUSE_STRUCTURED_OUTPUT: 'true' }] as const,
  ])(
    'gives a tool the same definition hash in the start record and in its calls (%s)',
    async (_name, extra) => {
      const dir = mkdtempSync(join(tmpdir(), 'gatehouse-audit-hash-'));
      const file = join(dir, 'audit.jsonl');
      const connection = await connectStdio(process.execPath, [demoServer], {
        env: { GATEHOUSE_AUDIT_SINKS: 'file', GATEHOUSE_AUDIT_FILE: file, ...extra },
      });
      try {
        await connection.client.callTool({ name: 'demo_stats', arguments: { values: [1, 2] } });
      } finally {
        await connection.close();
      }
      const trail = records(file);
      const started = trail.find((r) => r.event.action === 'gatehouse/start')!;
      const call = trail.find((r) => r.event.action === 'tools/call')!;
      const listed = (
        started.gatehouse.tools as Array<{ name: string; definition_hash: string }>
      ).find((t) => t.name === 'demo_stats')!;
      expect(call.tool.definition_hash).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(listed.definition_hash).toBe(call.tool.definition_hash);
    },
  );

  it('closes the chain on a crash: stop record, closing checkpoint, exit 1', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-audit-crash-'));
    const file = join(dir, 'audit.jsonl');
    const connection = await connectStdio(process.execPath, [demoServer], {
      env: { GATEHOUSE_AUDIT_SINKS: 'file', GATEHOUSE_AUDIT_FILE: file },
    });
    const result = await connection.client.callTool({ name: 'demo_crash', arguments: {} });
    expect(result.content).toEqual([{ type: 'text', text: 'about to crash' }]);
    await expect
      .poll(() => records(file).at(-1)?.event.action, { timeout: 5_000 })
      .toBe('audit/checkpoint');
    await connection.close().catch(() => undefined);
    const trail = records(file);
    expect(trail.map((r) => [r.event.action, r.event.outcome])).toEqual([
      ['gatehouse/start', 'success'],
      ['tools/call', 'success'],
      ['gatehouse/stop', 'failure'],
      ['audit/checkpoint', 'success'],
    ]);
    expect(trail[2]!.gatehouse).toEqual({ reason: 'crash', error: 'Error' });
    expect((await verify(file)).code).toBe(0);
  });

  it.each(['stdio', 'http'] as const)(
    'has a record for every read answered in the turn the process crashed in (%s)',
    async (transport) => {
      // Records of reads are written right after their answers (GATEHOUSE_AUDIT_READ_RECORDS
      // default): here the crash comes at the end of the turn that answered them, before the
      // deferred write — the crash handler writes them first.
      const dir = mkdtempSync(join(tmpdir(), 'gatehouse-audit-turn-'));
      const file = join(dir, 'audit.jsonl');
      const env = { GATEHOUSE_AUDIT_SINKS: 'file', GATEHOUSE_AUDIT_FILE: file };
      let connection: { client: Client; close(): Promise<void> };
      if (transport === 'http') {
        const server = await spawnServer(process.execPath, [demoServer], {
          env: { ...env, GATEHOUSE_TRANSPORT: 'http', GATEHOUSE_PORT: '0' },
        });
        connection = await connectHttp(server.url!);
      } else {
        connection = await connectStdio(process.execPath, [demoServer], { env });
      }
      const { client } = connection;
      const answered: string[] = [];
      const texts = Array.from({ length: 20 }, (_, i) => `t${i}`);
      await Promise.allSettled([
        ...texts.map(async (text) => {
          await client.callTool({ name: 'demo_echo', arguments: { text } });
          answered.push(sha256Canonical({ text }));
        }),
        client.callTool({ name: 'demo_crash', arguments: { when: 'this_turn' } }),
      ]);
      await expect
        .poll(() => records(file).at(-1)?.event.action, { timeout: 5_000 })
        .toBe('audit/checkpoint');
      await connection.close().catch(() => undefined);
      const trail = records(file);
      const recorded = new Set(
        trail.filter((r) => r.tool?.name === 'demo_echo').map((r) => r.args.sha256 as string),
      );
      expect(answered.length).toBeGreaterThan(0);
      expect(answered.filter((hash) => !recorded.has(hash))).toEqual([]);
      // The deferred records come before the crash's stop record, and the chain verifies.
      expect(trail.at(-2)!.event.action).toBe('gatehouse/stop');
      expect((await verify(file)).code).toBe(0);
    },
  );

  it('over stdio, writes the record of a read in the same step as its answer, not a turn later', async () => {
    // The server blocks its event loop right after answering (until a file exists): a record
    // that waited for the end of the turn could not be on disk yet when the answer arrives.
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-audit-step-'));
    const file = join(dir, 'audit.jsonl');
    const release = join(dir, 'release');
    const connection = await connectStdio(process.execPath, [demoServer], {
      env: { GATEHOUSE_AUDIT_SINKS: 'file', GATEHOUSE_AUDIT_FILE: file },
    });
    try {
      const result = await connection.client.callTool({
        name: 'demo_crash',
        arguments: { hold_until: release },
      });
      expect(result.content).toEqual([{ type: 'text', text: 'about to crash' }]);
      // Polled: the answer can reach us a few microseconds before the write that follows it.
      // While the loop is blocked nothing but that write can put the record there.
      await expect
        .poll(() => records(file).find((r) => r.event.action === 'tools/call')?.tool.name, {
          timeout: 2_000,
        })
        .toBe('demo_crash');
    } finally {
      writeFileSync(release, '');
      await connection.close().catch(() => undefined);
    }
  });

  it('refuses write tools when the audit pipe closes, says why, and reports not ready', async () => {
    const server = await spawnServer(process.execPath, [demoServer], {
      env: { GATEHOUSE_TRANSPORT: 'http', GATEHOUSE_PORT: '0', GATEHOUSE_ENABLE_WRITES: 'true' },
    });
    try {
      const { client, close } = await connectHttp(server.url!);
      // The collector reading stdout goes away: the next record meets a closed pipe (EPIPE).
      server.child.stdout!.destroy();
      await client.callTool({ name: 'demo_echo', arguments: { text: 'first write fails' } });
      const refused = await client.callTool({
        name: 'demo_post',
        arguments: { message: 'deploy' },
      });
      expect(refused.isError).toBe(true);
      expect((refused.content as Array<{ text: string }>)[0]!.text).toBe(
        'Refused: the audit trail cannot be written (stdout: EPIPE), so write tools are disabled until it recovers. Nothing was changed; tell the operator.',
      );
      const read = await client.callTool({ name: 'demo_echo', arguments: { text: 'reads go on' } });
      expect(read.content).toEqual([{ type: 'text', text: 'reads go on' }]);
      const ready = await fetch(new URL('/readyz', server.url));
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({
        status: 'not_ready',
        detail: 'the audit trail cannot be written',
      });
      await close();
    } finally {
      await server.stop();
    }
  });

  it('records a refused configuration on stderr, names only', async () => {
    const server = await spawnServer(process.execPath, [demoServer], {
      env: { GATEHOUSE_LOG_LEVEL: 'loud', DEMO_TOKEN: 'short' },
      waitForStart: false,
    });
    expect(await server.exited()).toBe(2);
    const [refusal] = server.auditRecords();
    expect(refusal).toMatchObject({
      event: { action: 'gatehouse/config_refused', outcome: 'failure', reason: 'config_invalid' },
      service: { name: 'demo' },
      gatehouse: {
        problems: [
          expect.stringMatching(/^GATEHOUSE_LOG_LEVEL: /),
          'DEMO_TOKEN: invalid value (hidden: secret)',
        ],
      },
    });
    expect(JSON.stringify(server.auditRecords())).not.toContain('short');
  });
});
