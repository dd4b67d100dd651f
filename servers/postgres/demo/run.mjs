#!/usr/bin/env node
// The Postgres server demo (`npm run demo`, through scripts/demo.mjs): an embedded PostgreSQL
// seeded with a small company, the read-only role a DBA would create, the server over Streamable
// HTTP with an API key, a scripted session with a real MCP client, the audit trail and its
// verification — then it keeps serving until Ctrl-C. Stopped at any point (Ctrl-C, SIGINT or
// SIGTERM, an error), it stops the server and the database and removes everything it wrote: the
// database, the audit log and its signing key. GATEHOUSE_DEMO_ONESHOT=1 stops after the session
// (the test suite runs it so).
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { main as auditCli } from '@gatehouse/audit';
import { connectHttp, spawnServer } from '@gatehouse/testkit';
import { freshDatabase, startPostgres } from '@gatehouse/testkit/postgres';
import pg from 'pg';
import { seedCompany } from './seed.mjs';

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const BIN = here('../dist/index.js');
const oneshot = process.env.GATEHOUSE_DEMO_ONESHOT === '1';
const port = process.env.PORT ?? '8765';

const bold = (s) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const dim = (s) => (process.stdout.isTTY ? `\x1b[2m${s}\x1b[0m` : s);
const section = (title) => console.log(`\n${bold(`━━ ${title} `.padEnd(78, '━'))}`);
const indent = (text, width = 2000) =>
  (text.length > width ? `${text.slice(0, width)}…` : text)
    .split('\n')
    .map((l) => `   ${l}`)
    .join('\n');

const cleanup = [];
let stopping;
/** Stops what was started and removes what was written, newest first; once. */
function shutdown(code) {
  stopping ??= (async () => {
    for (const step of cleanup.reverse()) {
      try {
        await step();
      } catch (error) {
        console.error(dim(`cleanup: ${error.message}`));
      }
    }
    process.exit(code);
  })();
  return stopping;
}
// From the first moment: a stop while the database starts or the session runs cleans up too.
let serving = false;
process.on('SIGINT', () => void shutdown(serving ? 0 : 130));
process.on('SIGTERM', () => void shutdown(serving ? 0 : 143));

try {
  section('1. An embedded PostgreSQL with a small company in it');
  // Made synchronously: a signal is handled between two awaits, so none can come after the
  // folder exists and before its removal is registered (with mkdtemp's await one could).
  const work = mkdtempSync(join(tmpdir(), 'gatehouse-demo-'));
  cleanup.push(() => rm(work, { recursive: true, force: true }));
  // Whatever way the process ends, the signing key and the log do not stay behind.
  process.on('exit', () => rmSync(work, { recursive: true, force: true }));
  const cluster = await startPostgres();
  cleanup.push(() => cluster.stop());
  const { ownerUrl, readOnlyUrl, counts } = await seedCompany(cluster.adminUrl);
  const roUrl = new URL(readOnlyUrl);
  console.log(
    `   PostgreSQL at ${new URL(ownerUrl).host}, database "company": ${JSON.stringify(counts)}`,
  );
  console.log(
    '   Read-only role gatehouse_ro created with demo/readonly-role.sql (see the README).',
  );
  console.log(
    '   Schema "hr" (salaries) exists but is not exposed; employee e-mails and national ids are masked.',
  );

  section('2. The Gatehouse Postgres server over Streamable HTTP');
  const keys = join(work, 'keys');
  await auditCli(['keygen', '--out', keys], { write: () => true });
  const auditFile = join(work, 'audit.jsonl');
  // Over HTTP a caller is who its credential says: the demo's client has an API key of its own.
  const apiKey = `gatehouse_${randomBytes(24).toString('base64url')}`;
  const keysFile = join(work, 'api-keys.json');
  writeFileSync(
    keysFile,
    JSON.stringify([
      {
        id: 'demo',
        sha256: createHash('sha256').update(apiKey).digest('hex'),
        principal: 'demo-analyst',
        scopes: ['*'],
        // What the key says of its holder: the customer the curated my_orders answers for.
        claims: { customer_id: '17' },
      },
    ]),
    { mode: 0o600 },
  );
  const env = {
    PATH: process.env.PATH ?? '',
    POSTGRES_URL: roUrl.toString(),
    POSTGRES_MASK_COLUMNS: '*.email,employees.national_id',
    POSTGRES_QUERIES_FILE: here('queries.yaml'),
    GATEHOUSE_TRANSPORT: 'http',
    GATEHOUSE_PORT: port,
    GATEHOUSE_AUTH: 'api_key',
    GATEHOUSE_API_KEYS_FILE: keysFile,
    GATEHOUSE_AUDIT_SINKS: 'file',
    GATEHOUSE_AUDIT_FILE: auditFile,
    GATEHOUSE_AUDIT_SIGNING_KEY_FILE: join(keys, 'audit-signing-key.pem'),
    GATEHOUSE_AUDIT_CHECKPOINT_EVERY: '5',
  };
  let server;
  try {
    server = await spawnServer(process.execPath, ['--liftoff-only', BIN], { env });
  } catch {
    console.log(dim(`   (port ${port} is taken; using a free one — set PORT to choose)`));
    server = await spawnServer(process.execPath, ['--liftoff-only', BIN], {
      env: { ...env, GATEHOUSE_PORT: '0' },
    });
  }
  cleanup.push(() => server.stop());
  console.log(
    `   Listening on ${bold(server.url.href)} (read-only role, masking on, curated queries, API key required, audit signed)`,
  );

  section('3. A scripted session with a real MCP client (API key of principal demo-analyst)');
  const { client, close } = await connectHttp(server.url, {
    name: 'gatehouse-demo',
    headers: { authorization: `Bearer ${apiKey}` },
  });
  cleanup.push(close);
  const { tools } = await client.listTools();
  console.log(`→ tools/list\n${indent(tools.map((t) => `${t.name}: ${t.title}`).join('\n'))}`);
  const call = async (name, args, note) => {
    console.log(
      `\n→ ${bold(name)} ${dim(JSON.stringify(args))}${note ? `  ${dim(`— ${note}`)}` : ''}`,
    );
    const result = await client.callTool({ name, arguments: args });
    const text = result.content.map((c) => c.text ?? '').join('\n');
    console.log(indent(result.isError ? `✗ ${text}` : text));
    return result;
  };
  await call(
    'customer_orders',
    { customer_id: 42, status: 'paid' },
    'a curated query (demo/queries.yaml)',
  );
  await call('my_orders', {}, "bound to the API key's customer_id claim (17)");
  await call('my_orders', { customer_id: 3 }, "someone else's orders");
  await call('customer_orders', { customer_id: '1 OR 1=1' }, 'a value that is SQL');
  await call('postgres_describe_table', { table: 'orders' });
  await call('postgres_query', {
    sql: `SELECT c.country, count(*) AS orders, sum(o.total) AS revenue
          FROM orders o JOIN customers c ON c.id = o.customer_id
          WHERE o.status <> 'cancelled' GROUP BY c.country ORDER BY revenue DESC`,
  });
  await call(
    'postgres_query',
    { sql: 'SELECT id, name, title, email, national_id FROM employees ORDER BY id LIMIT 3' },
    'masked columns',
  );
  await call(
    'postgres_query',
    {
      sql: "SELECT i FROM employees e(i, n, t, d, m, h, em, nid) WHERE nid LIKE 'NID-1%'",
    },
    'a masked column renamed, then filtered on',
  );
  await call('postgres_query', { sql: 'DELETE FROM orders' }, 'a write');
  await call(
    'postgres_query',
    { sql: 'SELECT 1; COMMIT; DROP TABLE customers;' },
    'the classic escape',
  );
  await call(
    'postgres_query',
    { sql: "SELECT * FROM pg_read_file('/etc/passwd')" },
    'a function in FROM',
  );
  await call(
    'postgres_query',
    { sql: 'SELECT * FROM hr.salaries' },
    'a schema outside the allow-list',
  );
  await call(
    'postgres_query',
    { sql: 'SELECT g FROM generate_series(1, 100000) g', max_rows: 3 },
    'caps',
  );

  section('4. A role per caller: two people ask the same question');
  // A second copy of the company whose DBA ran demo/role-per-caller.sql: the server logs in as
  // gatehouse_login and each call runs as the role the role map gives its caller (ADR 0027).
  const rolesDb = await freshDatabase(cluster.adminUrl, 'company_roles', { name: 'company_roles' });
  const loginPassword = randomBytes(12).toString('hex');
  const owner = new pg.Client({ connectionString: rolesDb.url });
  await owner.connect();
  try {
    await owner.query(readFileSync(here('company.sql'), 'utf8'));
    await owner.query(
      readFileSync(here('role-per-caller.sql'), 'utf8')
        .replace("'change-me'", `'${loginPassword}'`)
        .replaceAll('"company"', '"company_roles"'),
    );
  } finally {
    await owner.end();
  }
  const loginUrl = new URL(rolesDb.url);
  loginUrl.username = 'gatehouse_login';
  loginUrl.password = loginPassword;
  const people = {
    ana: {
      principal: 'ana@company.example',
      key: `gatehouse_${randomBytes(24).toString('base64url')}`,
    },
    rex: {
      principal: 'rex@company.example',
      key: `gatehouse_${randomBytes(24).toString('base64url')}`,
    },
    guest: {
      principal: 'guest@partner.example',
      key: `gatehouse_${randomBytes(24).toString('base64url')}`,
    },
  };
  const peopleKeys = join(work, 'people-keys.json');
  writeFileSync(
    peopleKeys,
    JSON.stringify(
      Object.entries(people).map(([id, p]) => ({
        id,
        sha256: createHash('sha256').update(p.key).digest('hex'),
        principal: p.principal,
        scopes: ['*'],
        ...(id === 'rex' ? { claims: { team: 'sales' } } : {}),
      })),
    ),
    { mode: 0o600 },
  );
  const roleMap = join(work, 'role-map.yaml');
  writeFileSync(
    roleMap,
    [
      'rules:',
      '  - principal: ana@company.example',
      '    role: analyst',
      '  - claim: { name: team, value: sales }',
      '    role: sales_rep',
      '',
    ].join('\n'),
  );
  const rolesServer = await spawnServer(process.execPath, ['--liftoff-only', BIN], {
    env: {
      PATH: process.env.PATH ?? '',
      POSTGRES_URL: loginUrl.toString(),
      POSTGRES_ROLE_MAP_FILE: roleMap,
      POSTGRES_MASK_COLUMNS: '*.email',
      GATEHOUSE_TRANSPORT: 'http',
      GATEHOUSE_PORT: '0',
      GATEHOUSE_AUTH: 'api_key',
      GATEHOUSE_API_KEYS_FILE: peopleKeys,
    },
  });
  cleanup.push(() => rolesServer.stop());
  console.log(
    `   A second server on ${rolesServer.url.href}, logged in as gatehouse_login (NOINHERIT), with\n   a role map: ana@company.example → analyst, a key with the claim team=sales → sales_rep.\n   customers has row-level security: a sales rep reads the countries sales_regions gives\n   the caller in gatehouse.principal (rex@company.example: SE and NL).`,
  );
  const asPerson = async (who, sql, note) => {
    const { client: personal, close: done } = await connectHttp(rolesServer.url, {
      name: 'gatehouse-demo',
      headers: { authorization: `Bearer ${people[who].key}` },
    });
    try {
      console.log(
        `\n→ ${bold(people[who].principal)} ${dim(sql)}${note ? `  ${dim(`— ${note}`)}` : ''}`,
      );
      const result = await personal.callTool({ name: 'postgres_query', arguments: { sql } });
      const text = result.content.map((c) => c.text ?? '').join('\n');
      console.log(indent(result.isError ? `✗ ${text}` : text));
    } finally {
      await done();
    }
  };
  const question =
    'SELECT country, count(*) AS customers FROM customers GROUP BY country ORDER BY country';
  await asPerson('ana', question, 'as analyst');
  await asPerson('rex', question, 'the same question, as sales_rep: row-level security');
  await asPerson('rex', 'SELECT count(*) FROM employees', 'a table sales_rep may not read');
  await asPerson('guest', question, 'no role is mapped to this caller');
  await new Promise((r) => setTimeout(r, 200));
  const ran = rolesServer
    .auditRecords()
    .filter((r) => r.mcp?.name === 'postgres_query')
    .map((r) => `${r.user?.id} → ${r.user?.effective?.name ?? '(refused)'}`);
  console.log(
    `\n   The audit records name each call's role (user.effective):\n${indent(ran.join('\n'))}`,
  );

  section('5. The audit trail');
  await new Promise((r) => setTimeout(r, 200));
  await auditCli(['query', '--format', 'table', auditFile]);
  console.log();
  const verified = await auditCli([
    'verify',
    '--allow-open-tail',
    '--key',
    join(keys, 'audit-public-key.pem'),
    auditFile,
  ]);
  console.log(
    verified === 0 ? '   ✓ chain intact, signatures verified' : '   ✗ verification failed',
  );

  section('6. Connect your own client');
  // The entry npm run client-config writes: this node, the bin's own flags, the secret in a file.
  const urlFile = join(work, 'postgres-url');
  writeFileSync(urlFile, `${roUrl}\n`, { mode: 0o600 });
  const flags = readFileSync(BIN, 'utf8').split('\n', 1)[0].split(/\s+/).slice(3);
  const claude = {
    mcpServers: {
      company: {
        command: process.execPath,
        args: [...flags, BIN],
        env: { POSTGRES_URL_FILE: urlFile, POSTGRES_MASK_COLUMNS: env.POSTGRES_MASK_COLUMNS },
      },
    },
  };
  console.log(
    `   Claude Desktop (stdio) — add to claude_desktop_config.json while this demo runs:\n${indent(JSON.stringify(claude, null, 2))}`,
  );
  console.log(
    `\n   MCP Inspector — run ${bold('npx @modelcontextprotocol/inspector')}, choose "Streamable HTTP", URL ${bold(server.url.href)},\n   header Authorization: Bearer ${apiKey}`,
  );
  console.log(`\n   Audit log: ${auditFile}. Check it yourself while the demo runs:`);
  console.log(
    `   npx gatehouse-audit verify --allow-open-tail --key ${join(keys, 'audit-public-key.pem')} ${auditFile}`,
  );

  if (oneshot) await shutdown(0);
  serving = true;
  console.log(
    `\n   Serving on ${server.url.href} — press Ctrl-C to stop (the database, the audit log and its key are removed).`,
  );
} catch (error) {
  console.error(`\ndemo failed: ${error.stack ?? error}`);
  await shutdown(1);
}
