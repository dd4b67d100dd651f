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
  // As shipped: posting on, direct messages off; the DM scopes are there to uncomment.
  expect([...manifest.oauth_config.scopes.bot].sort()).toEqual(
    SLACK_SCOPES.filter((s) => !/^(?:im|mpim):/.test(s)).sort(),
  );
  const commented = readFileSync(new URL('../slack-app-manifest.yaml', import.meta.url), 'utf8')
    .split('\n')
    .flatMap((l) => /^\s*# - ([a-z:]+)/.exec(l)?.[1] ?? []);
  expect(commented.sort()).toEqual(['im:history', 'im:read', 'mpim:history', 'mpim:read']);
  expect(manifest.oauth_config.scopes.user ?? []).toEqual([]);
});

it('the user-mode manifest asks each person for the same least scopes, with rotation and the callback', () => {
  const text = readFileSync(
    new URL('../slack-app-manifest.user-mode.yaml', import.meta.url),
    'utf8',
  );
  const manifest = parse(text) as {
    features?: unknown;
    oauth_config: { redirect_urls: string[]; scopes: { bot?: string[]; user: string[] } };
    settings: { token_rotation_enabled: boolean };
  };
  expect([...manifest.oauth_config.scopes.user].sort()).toEqual(
    SLACK_SCOPES.filter((s) => !/^(?:im|mpim):/.test(s)).sort(),
  );
  expect(manifest.oauth_config.scopes.bot ?? []).toEqual([]);
  expect(manifest.features).toBeUndefined();
  expect(manifest.settings.token_rotation_enabled).toBe(true);
  expect(manifest.oauth_config.redirect_urls.map((u) => new URL(u).pathname)).toEqual([
    '/connect/gatehouse-slack/callback',
  ]);
});
