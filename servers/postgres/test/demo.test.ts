import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

// The README's "run it" command, end to end: an embedded PostgreSQL of its own, the seeded
// company, the server over HTTP, the scripted session and the audit verification.

it('runs the demo from the built tree', { timeout: 120_000 }, async () => {
  const child = spawn(
    process.execPath,
    [fileURLToPath(new URL('../demo/run.mjs', import.meta.url))],
    {
      env: { ...process.env, GATEHOUSE_DEMO_ONESHOT: '1', PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  expect(code, output).toBe(0);
  for (const expected of [
    'database "company": {"customers":200,"orders":2000,"products":50,"employees":40}',
    'postgres_query: Run a read-only SQL query',
    'fk (customer_id) → public.customers(id)',
    '1 | Employee 1 | CEO | [masked] | [masked]',
    '✗ Refused by the read-only SQL policy (rule masked_column): nid is masked (public.employees.national_id) and is used in WHERE',
    '✗ Refused by the read-only SQL policy (rule statement_type)',
    '✗ Refused by the read-only SQL policy (rule single_statement)',
    '✗ Refused by the read-only SQL policy (rule function_denied)',
    '✗ Refused by the read-only SQL policy (rule schema_not_allowed)',
    'TRUNCATED at the 3-row cap',
    '✓ chain intact, signatures verified',
    'claude_desktop_config.json',
    'npx @modelcontextprotocol/inspector',
  ]) {
    expect(output).toContain(expected);
  }
  expect(output).toMatch(/failure denied +\S+ +tools\/call +postgres_query → pg:company\/public/);
});
