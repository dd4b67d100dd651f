import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { slackSeed, startSlackFake, validateSlackResponses } from '../src/slack.js';
import type { SlackFake } from '../src/slack.js';

// The Slack fake speaks Slack's wire format to any client: form or JSON bodies, GET reads,
// ok:false with HTTP 200, cursors in response_metadata; what it sends matches Slack's shapes.

const TOKEN = 'xoxb-1-2-fake';
let fake: SlackFake;
beforeAll(async () => {
  fake = await startSlackFake({
    world: slackSeed(),
    tokens: { [TOKEN]: { scopes: ['channels:read'] } },
  });
});
afterAll(() => fake.close());

const call = async (
  method: string,
  body: Record<string, unknown>,
  as: 'form' | 'json' = 'form',
) => {
  const response = await fetch(`${fake.url}${method}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${TOKEN}`,
      'content-type':
        as === 'json' ? 'application/json; charset=utf-8' : 'application/x-www-form-urlencoded',
    },
    body:
      as === 'json'
        ? JSON.stringify(body)
        : new URLSearchParams(body as Record<string, string>).toString(),
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Record<string, any>,
  };
};

describe('the Slack fake', () => {
  it('answers auth.test with the granted scopes in X-OAuth-Scopes, and invalid_auth with HTTP 200', async () => {
    const ok = await call('auth.test', {});
    expect(ok.body).toMatchObject({
      ok: true,
      user_id: 'U0BOT00001',
      url: 'https://acme.slack.com/',
    });
    expect(ok.headers.get('x-oauth-scopes')).toBe('channels:read');
    const bad = await fetch(`${fake.url}auth.test`, {
      method: 'POST',
      headers: { authorization: 'Bearer xoxb-wrong' },
    });
    expect(bad.status).toBe(200);
    expect(await bad.json()).toEqual({ ok: false, error: 'invalid_auth' });
  });

  it('takes JSON bodies as well as forms, and GET reads with the query', async () => {
    const json = await call('conversations.history', { channel: 'C0GENERAL1', limit: 1 }, 'json');
    expect(json.body.messages).toHaveLength(1);
    const get = await fetch(`${fake.url}conversations.info?channel=C0INCIDENT`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(((await get.json()) as { channel: { name: string } }).channel.name).toBe('incidents');
  });

  it('pages with cursors in response_metadata, and says ok:false the way Slack does', async () => {
    const first = await call('conversations.history', { channel: 'C0GENERAL1', limit: '2' });
    expect(first.body).toMatchObject({ has_more: true });
    const next = await call('conversations.history', {
      channel: 'C0GENERAL1',
      limit: '2',
      cursor: first.body.response_metadata.next_cursor,
    });
    expect(next.body).toMatchObject({ has_more: false, response_metadata: { next_cursor: '' } });
    expect((await call('conversations.history', { channel: 'C0RANDOM01' })).body).toEqual({
      ok: false,
      error: 'not_in_channel',
    });
    fake.platformError('users.info', 'missing_scope', { needed: 'users:read' });
    expect((await call('users.info', { user: 'U0ALICE001' })).body).toEqual({
      ok: false,
      error: 'missing_scope',
      needed: 'users:read',
    });
  });

  it('stores posts with their metadata, and records any post that could unfurl or expand', async () => {
    const posted = await call('chat.postMessage', {
      channel: 'C0INCIDENT',
      text: 'hello',
      metadata: JSON.stringify({ event_type: 'x', event_payload: { key: 'k1' } }),
    });
    expect(posted.body).toMatchObject({
      ok: true,
      channel: 'C0INCIDENT',
      message: { metadata: { event_type: 'x' } },
    });
    expect(fake.violations).toEqual([
      'chat.postMessage without unfurl_links=false',
      'chat.postMessage without unfurl_media=false',
      'chat.postMessage without link_names=false',
      'chat.postMessage without parse=none',
    ]);
    fake.violations.length = 0;
    const history = await call('conversations.history', {
      channel: 'C0INCIDENT',
      include_all_metadata: 'true',
      limit: '1',
    });
    expect(history.body.messages[0]).toMatchObject({
      text: 'hello',
      metadata: { event_payload: { key: 'k1' } },
    });
  });

  it('sends only what Slack sends: every response a subset of the recorded shapes', () => {
    expect(validateSlackResponses(fake.responses)).toEqual([]);
  });
});
