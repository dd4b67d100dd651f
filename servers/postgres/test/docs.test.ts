import { readFileSync } from 'node:fs';
import { checkGeneratedDocs } from '@gatehouse/testkit';
import { expect, it } from 'vitest';

// The README's tool table, variable table and role SQL are generated from the code and from
// demo/readonly-role.sql (the file the tests and the demo run), so they cannot drift.

it('the generated parts of the README match the code (run `npm run docs`)', async () => {
  expect(await checkGeneratedDocs('postgres')).toBe('');
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  expect(readme).toContain("CREATE ROLE gatehouse_ro LOGIN PASSWORD 'change-me'");
});
