import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

describe("the operator's own secret list (GATEHOUSE_SECRET_VALUES_FILE)", () => {
  // Values the server was never configured with — a database password, a customer's key — that
  // an upstream may still hand back. Two worlds differ only in whether the list names them.
  const listed = ['db-Pa55word-of-prod', 'cust_KEY_9f8e7d6c5b4a'];
  const file = join(mkdtempSync(join(tmpdir(), 'secret-values-')), 'values');
  writeFileSync(file, `# the operator's list\n${listed[0]}\n\n  ${listed[1]}  \n`);

  const world = async (withList: boolean) => {
    const connection = await connectStdio(process.execPath, [demoServer], {
      env: {
        DEMO_UPSTREAM_TEXT: `row: ${listed[0]}; key=${listed[1]}`,
        GATEHOUSE_ENABLE_WRITES: 'true',
        GATEHOUSE_LOG_LEVEL: 'debug',
        ...(withList ? { GATEHOUSE_SECRET_VALUES_FILE: file } : {}),
      },
    });
    const results: unknown[] = [];
    try {
      for (const kind of KINDS) {
        results.push(
          await connection.client.callTool({ name: 'demo_upstream_echo', arguments: { kind } }),
        );
      }
      // A write that would carry a listed value out.
      results.push(
        await connection.client.callTool({
          name: 'demo_post',
          arguments: { message: `deploy with ${listed[1]}` },
        }),
      );
    } finally {
      await connection.close();
    }
    return { results, stderr: connection.stderr.join('\n') };
  };

  it('refuses writes that carry one, and scrubs each from results, errors, logs and records', async () => {
    const [control, guarded] = await Promise.all([world(false), world(true)]);
    // Without the list the values travel: the oracle can fail.
    expect(JSON.stringify(control.results)).toContain(listed[0]);
    expect(JSON.stringify(control.results.at(-1))).toContain('posted');

    const output = JSON.stringify(guarded.results);
    for (const value of listed) {
      expect(output).not.toContain(value);
      expect(guarded.stderr).not.toContain(value);
    }
    expect(output).toContain('[REDACTED:GATEHOUSE_SECRET_VALUES]');
    expect(guarded.stderr).toContain('[REDACTED:GATEHOUSE_SECRET_VALUES]');
    const post = guarded.results.at(-1) as { isError?: boolean; content: Array<{ text: string }> };
    expect(post.isError).toBe(true);
    expect(post.content[0]!.text).toMatch(/secret/i);
    expect(post.content[0]!.text).not.toContain('posted');
  });

  it('refuses a list with a value too short to tell apart from text, naming only the line', async () => {
    const short = join(mkdtempSync(join(tmpdir(), 'secret-values-')), 'values');
    writeFileSync(short, 'long-enough-value\nabc\n');
    const server = await spawnServer(process.execPath, [demoServer], {
      env: { GATEHOUSE_SECRET_VALUES_FILE: short },
      waitForStart: false,
    });
    expect(await server.exited()).toBe(2);
    const said = server.logs.flatMap((l) => (typeof l.raw === 'string' ? [l.raw] : []));
    expect(said).toEqual([
      'Invalid configuration:',
      '  - GATEHOUSE_SECRET_VALUES: line 2: shorter than 6 characters, so it cannot be told apart from ordinary text',
    ]);
    expect(JSON.stringify(server.logs)).not.toContain('long-enough-value');
  });
});

describe('every spelling of a listed secret, in every sink, the start-up log line included', () => {
  // A value that every encoder spells differently: a quote, a backslash, a slash, non-ASCII.
  const value = 'pä"ss\\word/Ünï-4242';
  const json = JSON.stringify(value).slice(1, -1);
  const ascii = (upper: boolean) =>
    json.replace(/[^\u0020-\u007e]/g, (c) => {
      const code = c.charCodeAt(0).toString(16).padStart(4, '0');
      return `\\u${upper ? code.toUpperCase() : code}`;
    });
  const SPELLINGS = [
    value,
    encodeURIComponent(value),
    json,
    ascii(false),
    ascii(true),
    json.replaceAll('/', '\\/'),
    // JSON inside a JSON string: a logged body.
    JSON.stringify(json).slice(1, -1),
  ];
  const dir = mkdtempSync(join(tmpdir(), 'secret-spellings-'));
  const list = join(dir, 'values');
  writeFileSync(list, `${value}\n`);

  it('holds none of them: results, errors, the log (the configuration it starts with) and the audit trail', async () => {
    // The upstream repeats every spelling; a non-secret setting holds them too, and the
    // "server started" line prints the configuration when the audit trail goes to a file.
    const text = SPELLINGS.map((s, i) => `#${i}: ${s}`).join(' | ');
    const audit = join(dir, 'audit.log');
    const connection = await connectStdio(process.execPath, [demoServer], {
      env: {
        DEMO_UPSTREAM_TEXT: text,
        GATEHOUSE_SECRET_VALUES_FILE: list,
        GATEHOUSE_LOG_LEVEL: 'debug',
        GATEHOUSE_AUDIT_SINKS: 'file',
        GATEHOUSE_AUDIT_FILE: audit,
      },
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
    const stderr = connection.stderr.join('\n');
    expect(stderr).toContain('server started');
    expect(stderr).toMatch(/"DEMO_UPSTREAM_TEXT":"#0: \[REDACTED:GATEHOUSE_SECRET_VALUES\]/);
    const sinks = { results: JSON.stringify(results), stderr, audit: readFileSync(audit, 'utf8') };
    for (const [sink, written] of Object.entries(sinks)) {
      for (const spelling of SPELLINGS) {
        expect(written.includes(spelling), `${sink} holds ${spelling}`).toBe(false);
        // …nor the way that sink's JSON spells it again.
        expect(
          written.includes(JSON.stringify(spelling).slice(1, -1)),
          `${sink}: ${spelling}`,
        ).toBe(false);
      }
    }
  });
});
