import { fileURLToPath } from 'node:url';
import { connectHttp, connectStdio, spawnServer } from '@gatehouse/testkit';
import { describe, expect, it } from 'vitest';

// A configured secret must never leave the process, whatever shape it has and whichever road
// it takes: an upstream that repeats it in a result, a 4xx message shown to the model, a 5xx
// logged with its error, a crash, a log line — in clear, URL-encoded or JSON-escaped.

const demoServer = fileURLToPath(new URL('./fixtures/demo-server.ts', import.meta.url));
// No known token format: only the configured value can identify it.
const SECRET = 'Sup3r-Secret/Value@with#chars+more';
const FORMS = [SECRET, encodeURIComponent(SECRET), 'Sup3r-Secret', 'chars+more'];
const KINDS = ['result', 'error4xx', 'error5xx', 'crash', 'log'] as const;

function expectNoSecret(everything: string): void {
  for (const form of FORMS) expect(everything).not.toContain(form);
}

describe('configured secret values are redacted everywhere output leaves the process', () => {
  it('over stdio: tool results, errors, the log and the audit trail', async () => {
    const connection = await connectStdio(process.execPath, [demoServer], {
      env: { DEMO_TOKEN: SECRET, GATEHOUSE_LOG_LEVEL: 'debug' },
    });
    const results: unknown[] = [];
    try {
      for (const kind of KINDS) {
        results.push(
          await connection.client.callTool({ name: 'demo_upstream_echo', arguments: { kind } }),
        );
      }
    } finally {
      await connection.close();
    }
    const output = JSON.stringify(results);
    expect(output).toContain('[REDACTED:DEMO_TOKEN]');
    expectNoSecret(output);
    const stderr = connection.stderr.join('\n');
    expect(stderr).toContain('[REDACTED:DEMO_TOKEN]');
    expectNoSecret(stderr);
  });

  it('over HTTP: the same, with the audit trail on stdout', async () => {
    const server = await spawnServer(process.execPath, [demoServer], {
      env: {
        GATEHOUSE_TRANSPORT: 'http',
        GATEHOUSE_PORT: '0',
        DEMO_TOKEN: SECRET,
        GATEHOUSE_LOG_LEVEL: 'debug',
      },
    });
    const { client, close } = await connectHttp(server.url!);
    const results: unknown[] = [];
    for (const kind of KINDS) {
      results.push(await client.callTool({ name: 'demo_upstream_echo', arguments: { kind } }));
    }
    await close();
    expect(await server.stop()).toBe(0);
    expectNoSecret(JSON.stringify(results));
    const everything = JSON.stringify(server.logs) + server.stdout();
    expect(everything).toContain('[REDACTED:DEMO_TOKEN]');
    expectNoSecret(everything);
  });
});
