import { readFileSync } from 'node:fs';
import { checkGeneratedDocs } from '@gatehouse/testkit';
import { expect, it } from 'vitest';

// The README's tool and variable tables are generated from the code, so they cannot drift.

it('the generated parts of the README match the code (run `npm run docs`)', async () => {
  expect(await checkGeneratedDocs('jira')).toBe('');
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  expect(readme).toContain('| `jira_search_issues` — Search issues');
});
