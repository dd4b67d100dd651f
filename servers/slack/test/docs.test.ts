import { readFileSync } from 'node:fs';
import { checkGeneratedDocs } from '@gatehouse/testkit';
import { parse } from 'yaml';
import { expect, it } from 'vitest';
import { SLACK_SCOPES } from '../src/server.ts';

// The README's tool and variable tables are generated from the code; the app manifest asks for
// exactly the scopes the server uses.

it('the generated parts of the README match the code (run `npm run docs`)', async () => {
  expect(await checkGeneratedDocs('slack')).toBe('');
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  expect(readme).toContain('| `slack_post_message` — Post a message (write: off unless enabled');
});

it('the Slack app manifest requests the least scopes: the ones the server uses, nothing else', () => {
  const manifest = parse(
    readFileSync(new URL('../slack-app-manifest.yaml', import.meta.url), 'utf8'),
  ) as {
    oauth_config: { scopes: { bot: string[]; user?: string[] } };
    settings?: Record<string, unknown>;
  };
  expect([...manifest.oauth_config.scopes.bot].sort()).toEqual([...SLACK_SCOPES].sort());
  expect(manifest.oauth_config.scopes.user ?? []).toEqual([]);
});
