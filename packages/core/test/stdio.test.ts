import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connectStdio, eventually } from '@gatehouse/testkit';
import type { Era } from '@gatehouse/testkit';
import { describe, expect, it } from 'vitest';
import { rawServer } from './raw-server.ts';
import { expectSchemaValid } from './schema.ts';

const demoServer = fileURLToPath(new URL('./fixtures/demo-server.ts', import.meta.url));

describe.each<Era>(['legacy', 'modern'])('stdio with a real client (%s era)', (era) => {
  it('lists and calls tools in a child process; logs and audit go to stderr as JSON', async () => {
    const connection = await connectStdio(process.execPath, [demoServer], {
      era,
      env: { GATEHOUSE_PRINCIPAL: 'alice' },
    });
    try {
      const { tools } = await connection.client.listTools();
      expect(tools.map((t) => t.name)).toContain('demo_echo');
      const result = await connection.client.callTool({
        name: 'demo_echo',
        arguments: { text: 'over a pipe' },
      });
      expect(result.content).toEqual([{ type: 'text', text: 'over a pipe' }]);
      const records = () =>
        connection.stderr
          .map((l) => JSON.parse(l) as Record<string, any>)
          .filter((l) => l.audit?.schema_version !== undefined);
      await expect.poll(() => records().some((r) => r.event.action === 'tools/call')).toBe(true);
      const [start, call] = records();
      expect(start!.event.action).toBe('gatehouse/start');
      expect(start!.gatehouse.tools.map((t: { name: string }) => t.name)).toContain('demo_echo');
      expect(call!.user).toEqual({ id: 'alice' });
      expect(call!.auth).toEqual({ method: 'local' });
      expect(call!.mcp).toMatchObject({ transport: 'stdio', era, name: 'demo_echo' });
      expect(call!.client).toEqual({ name: 'gatehouse-testkit', version: '1.0.0' });
      expectSchemaValid(records());
    } finally {
      await connection.close();
    }
  });
});

describe('stdio process behaviour', () => {
  it('keeps stdout for protocol messages only, even when a handler calls console.log', async () => {
    const server = rawServer();
    await server.handshake();
    server.callTool(2, 'demo_console', {});
    server.callTool(3, 'demo_echo', { text: 'x' });
    server.callTool(4, 'demo_fail', { kind: 'crash' });
    await server.waitForResponse(4);
    server.child.stdin.end();
    const [code] = await server.exit;
    expect(code).toBe(0);
    // Every stdout line is a JSON-RPC message, nothing else.
    expect(server.stdoutRaw().endsWith('\n')).toBe(true);
    for (const line of server.stdoutLines) {
      const message = JSON.parse(line) as { jsonrpc?: string };
      expect(message.jsonrpc).toBe('2.0');
    }
    expect(server.stdoutRaw()).not.toContain('noise');
    expect(server.stdoutRaw()).not.toContain('hunter2');
    expect(server.stderr()).toContain('noise that would corrupt the stdio protocol');
    expect(server.stderr()).toContain('"msg":"stopped"');
  });

  it('refuses bad configuration before serving: every problem at once, by variable name, exit 2', async () => {
    const server = rawServer({
      GATEHOUSE_PORT: 'eighty',
      GATEHOUSE_LOG_LEVEL: 'loud',
      GATEHOUSE_READ_ONLY: 'maybe',
      DEMO_TOKEN: 'short',
    });
    const [code] = await server.exit;
    expect(code).toBe(2);
    const stderr = server.stderr();
    for (const name of [
      'GATEHOUSE_PORT',
      'GATEHOUSE_LOG_LEVEL',
      'GATEHOUSE_READ_ONLY',
      'DEMO_TOKEN',
    ]) {
      expect(stderr).toContain(`${name}:`);
    }
    expect(stderr).toContain('DEMO_TOKEN: invalid value (hidden: secret)');
    expect(stderr).not.toContain('short');
    expect(server.stdoutRaw()).toBe('');
  });

  it('refuses tool names that match no tool', async () => {
    const server = rawServer({ GATEHOUSE_TOOLS_DISABLE: 'demo_echo,demo_ecko' });
    const [code] = await server.exit;
    expect(code).toBe(2);
    expect(server.stderr()).toContain(
      'GATEHOUSE_TOOLS_DISABLE: no tool or toolset named "demo_ecko"',
    );
  });

  it('reads secrets from NAME_FILE and never logs them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-secret-'));
    const file = join(dir, 'token');
    writeFileSync(file, 'tok-7f3a9c-very-secret\n');
    const server = rawServer({ DEMO_TOKEN_FILE: file, GATEHOUSE_LOG_LEVEL: 'debug' });
    await server.handshake();
    server.child.stdin.end();
    const [code] = await server.exit;
    expect(code).toBe(0);
    expect(server.stderr()).toMatch(/"DEMO_TOKEN":"\[(secret|redacted)\]"/);
    expect(server.stderr()).not.toContain('tok-7f3a9c');

    const both = rawServer({ DEMO_TOKEN_FILE: file, DEMO_TOKEN: 'tok-other-value' });
    expect((await both.exit)[0]).toBe(2);
    expect(both.stderr()).toContain(
      'DEMO_TOKEN: set either DEMO_TOKEN or DEMO_TOKEN_FILE, not both',
    );

    const missing = rawServer({ DEMO_TOKEN_FILE: join(dir, 'absent') });
    expect((await missing.exit)[0]).toBe(2);
    expect(missing.stderr()).toContain('DEMO_TOKEN_FILE: cannot read');
    expect(missing.stderr()).toContain('ENOENT');
  });

  it('answers every request exactly once — any id, before initialize, stdin ended at once', async () => {
    const server = rawServer();
    // Ids as the wire spells them: some cannot be echoed exactly (not a safe integer).
    const safe = ['1', '"s"', '-7', '0', '9007199254740991'];
    const unsafe = ['9007199254740994', '1e20', '1.5', '-0.5', '1E400'];
    const line = (id: string, method: string, params = '{}') =>
      `{"jsonrpc":"2.0","id":${id},"method":"${method}","params":${params}}`;
    // Before any initialize: a listing, a ping, a call that takes a while, an unknown method.
    server.sendLine(line(safe[0]!, 'tools/list'));
    server.sendLine(line(safe[1]!, 'ping'));
    server.sendLine(line(safe[2]!, 'tools/call', '{"name":"demo_slow","arguments":{"ms":300}}'));
    server.sendLine(line(safe[3]!, 'nope/method'));
    server.sendLine(line(safe[4]!, 'tools/call', '{"name":"demo_noop","arguments":{}}'));
    for (const id of unsafe) server.sendLine(line(id, 'ping'));
    server.child.stdin.end();
    const [code] = await server.exit;
    expect(code).toBe(0);
    const answers = server.stdoutLines.map(
      (l) => JSON.parse(l) as { id: unknown; error?: { code: number } },
    );
    expect(answers).toHaveLength(safe.length + unsafe.length);
    for (const id of safe) {
      expect(
        answers.filter((a) => a.id === JSON.parse(id)),
        id,
      ).toHaveLength(1);
    }
    const refused = answers.filter((a) => a.id === null);
    expect(refused).toHaveLength(unsafe.length);
    expect(refused.every((a) => a.error?.code === -32600)).toBe(true);
    const slow = answers.find((a) => a.id === -7) as {
      result?: { content: Array<{ text: string }> };
    };
    expect(slow.result?.content[0]!.text).toBe('waited 300 ms');
  });

  it('finishes an in-flight call on SIGTERM, then exits 0', async () => {
    const server = rawServer();
    await server.handshake();
    server.callTool(2, 'demo_slow', { ms: 600 });
    await eventually(() => server.stderr().includes('demo_slow started'));
    server.child.kill('SIGTERM');
    const response = (await server.waitForResponse(2)) as {
      result: { content: Array<{ text: string }> };
    };
    expect(response.result.content[0]!.text).toBe('waited 600 ms');
    const [code] = await server.exit;
    expect(code).toBe(0);
    expect(server.stderr()).toContain('"drained":true');
  });
});
