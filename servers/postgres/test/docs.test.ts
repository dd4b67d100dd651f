import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

// The README's tool table, variable table and role SQL are generated from the code and from
// demo/readonly-role.sql (the file the tests and the demo run), so they cannot drift.

const script = fileURLToPath(new URL('../../../scripts/gen-docs.mjs', import.meta.url));

it('the generated parts of the README match the code (run `npm run docs`)', async () => {
  const result = await promisify(execFile)(process.execPath, [
    script,
    '--check',
    '--scope',
    'postgres',
  ]).catch((error: { code: number; stdout: string }) => error);
  expect('code' in result ? result.stdout : '').toBe('');
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  expect(readme).toContain("CREATE ROLE gatehouse_ro LOGIN PASSWORD 'change-me'");
});
