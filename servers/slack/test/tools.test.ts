import { unframed } from '@gatehouse/testkit';
import type { SlackFake } from '@gatehouse/testkit/slack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectSlack, expectCleanFake, startFake, text } from './helpers.ts';
import type { SlackHarness } from './helpers.ts';

// Every tool, resource and prompt through a real MCP client, in both protocol eras.

describe.each(['legacy', 'modern'] as const)('the Slack server (%s era)', (era) => {
  let fake: SlackFake;
  let h: SlackHarness;
  beforeAll(async () => {
    fake = await startFake();
    h = await connectSlack(fake, { GATEHOUSE_ENABLE_WRITES: 'true' }, era);
  });
  afterAll(async () => {
    await h?.close();
    expectCleanFake(fake);
    await fake?.close();
  });

  it('lists the allowed channels the bot can see, with what it may do there', async () => {
    const result = await h.client.callTool({ name: 'slack_list_channels', arguments: {} });
    const channels = (
      unframed(result.structuredContent) as { channels: Array<Record<string, unknown>> }
    ).channels;
    expect(channels.map((c) => c.name)).toEqual([
      'general',
      'incidents',
      'leadership',
      'partner-acme',
      'old-project',
      'random',
    ]);
    expect(channels.find((c) => c.name === 'incidents')).toMatchObject({
      id: 'C0INCIDENT',
      topic: 'Outages',
      bot_is_member: true,
      can_post: true,
    });
    expect(channels.find((c) => c.name === 'partner-acme')).toMatchObject({
      shared_externally: true,
    });
    expect(channels.find((c) => c.name === 'random')).toMatchObject({
      bot_is_member: false,
      can_post: false,
    });
    // DMs are off: the listed D0DIRECT01 is not offered.
    expect(channels.some((c) => c.id === 'D0DIRECT01')).toBe(false);
    const filtered = await h.client.callTool({
      name: 'slack_list_channels',
      arguments: { name: 'inc' },
    });
    expect((unframed(filtered.structuredContent) as { channels: unknown[] }).channels).toHaveLength(
      1,
    );
  });

  it('reads a channel newest first: names resolved, markup readable, permalinks, framed as data', async () => {
    const result = await h.client.callTool({
      name: 'slack_read_channel',
      arguments: { channel: '#general' },
    });
    const { messages } = unframed(result.structuredContent) as {
      messages: Array<Record<string, unknown>>;
    };
    expect(messages.map((m) => m.author)).toEqual(['mallory', 'Bob Brown', 'alice']);
    expect(messages[1]).toMatchObject({
      text: 'Deploy of run 7 (https://ci.acme.example/run/7) failed, see thread',
      replies: 2,
      permalink: `https://acme.slack.com/archives/C0GENERAL1/p${String(messages[1]!.ts).replace('.', '')}`,
    });
    expect(messages[2]!.time).toMatch(/^2025-\d\d-\d\dT/);
    // The injection is data: inside the untrusted frame of the text, never an instruction.
    expect(text(result)).toMatch(/<untrusted-data-[0-9a-f]+ source="Slack messages in #general">/);
    // Sanitised on the way out: the right-to-left override in Mallory's real name is gone.
    expect(JSON.stringify(result)).not.toContain('\u202e');
  });

  it('pages with a cursor and narrows by time, by id as well as by #name', async () => {
    const first = await h.client.callTool({
      name: 'slack_read_channel',
      arguments: { channel: 'C0GENERAL1', limit: 2 },
    });
    const page1 = unframed(first.structuredContent) as {
      messages: Array<{ ts: string }>;
      next_cursor?: string;
    };
    expect(page1.messages).toHaveLength(2);
    expect(page1.next_cursor).toBeDefined();
    const second = await h.client.callTool({
      name: 'slack_read_channel',
      arguments: { channel: 'C0GENERAL1', limit: 2, cursor: page1.next_cursor },
    });
    const page2 = unframed(second.structuredContent) as {
      messages: Array<{ ts: string }>;
      next_cursor?: string;
    };
    expect(page2.messages).toHaveLength(1);
    expect(page2.next_cursor).toBeUndefined();
    const oldest = new Date((Number(page1.messages[1]!.ts) - 1) * 1000).toISOString();
    const since = await h.client.callTool({
      name: 'slack_read_channel',
      arguments: { channel: '#general', oldest },
    });
    expect((unframed(since.structuredContent) as { messages: unknown[] }).messages).toHaveLength(2);
  });

  it('reads a thread, parent first, mentions resolved', async () => {
    const list = await h.client.callTool({
      name: 'slack_read_channel',
      arguments: { channel: '#general' },
    });
    const parent = (
      unframed(list.structuredContent) as { messages: Array<{ ts: string; replies?: number }> }
    ).messages.find((m) => m.replies === 2)!;
    const result = await h.client.callTool({
      name: 'slack_read_thread',
      arguments: { channel: '#general', thread_ts: parent.ts },
    });
    const { messages } = unframed(result.structuredContent) as {
      messages: Array<{ text: string; author: string }>;
    };
    expect(messages.map((m) => m.text)).toEqual([
      'Deploy of run 7 (https://ci.acme.example/run/7) failed, see thread',
      'Looking',
      'Fixed by @alice',
    ]);
  });

  it('previews a post with dry_run, exactly as it would be sent, and sends nothing', async () => {
    const before = fake.calls.length;
    const preview = await h.client.callTool({
      name: 'slack_post_message',
      arguments: { channel: '#incidents', text: 'INC-12 resolved <!channel>', dry_run: true },
    });
    expect(unframed(preview.structuredContent)).toMatchObject({
      dry_run: true,
      would_send: {
        channel: 'C0INCIDENT',
        text: 'INC-12 resolved &lt;!channel&gt;',
        unfurl_links: false,
        unfurl_media: false,
        link_names: false,
        parse: 'none',
      },
    });
    expect(fake.calls.slice(before)).not.toContain('chat.postMessage');
  });

  it('posts a message and a thread reply, with the content key in the message metadata', async () => {
    const posted = await h.client.callTool({
      name: 'slack_post_message',
      arguments: { channel: '#incidents', text: `Update ${era}: mitigated` },
    });
    expect(posted.isError).toBeFalsy();
    const { ts, deduplicated, permalink } = unframed(posted.structuredContent) as {
      ts: string;
      deduplicated: boolean;
      permalink: string;
    };
    expect(deduplicated).toBe(false);
    expect(permalink).toBe(`https://acme.slack.com/archives/C0INCIDENT/p${ts.replace('.', '')}`);
    const stored = fake.channel('#incidents').messages.at(-1)!;
    expect(stored).toMatchObject({ ts, text: `Update ${era}: mitigated` });
    expect(stored.metadata).toMatchObject({ event_type: 'gatehouse_post' });
    const reply = await h.client.callTool({
      name: 'slack_post_message',
      arguments: { channel: '#incidents', text: 'details in the doc', thread_ts: ts },
    });
    expect(unframed(reply.structuredContent)).toMatchObject({ thread_ts: ts, deduplicated: false });
    expect(stored.replies?.map((r) => r.text)).toEqual(['details in the doc']);
    const record = h.records.filter((r) => r.event.action === 'tools/call').at(-1)!;
    expect(record).toMatchObject({
      event: { reason: 'ok', type: ['change'] },
      target: { resource: 'slack:C0INCIDENT' },
    });
  });

  it('serves the channel directory and one resource per channel, with completion', async () => {
    const resources = await h.client.listResources();
    expect(resources.resources.map((r) => r.uri)).toContain('slack://channels');
    expect(resources.resources.map((r) => r.uri)).toContain('slack://channel/C0INCIDENT');
    const directory = await h.client.readResource({ uri: 'slack://channels' });
    const channels = JSON.parse((directory.contents[0] as { text: string }).text) as Array<{
      name: string;
    }>;
    expect(channels.map((c) => c.name)).toContain('leadership');
    const one = await h.client.readResource({ uri: 'slack://channel/incidents' });
    expect(JSON.parse((one.contents[0] as { text: string }).text)).toMatchObject({
      id: 'C0INCIDENT',
      can_post: true,
    });
    const completion = await h.client.complete({
      ref: { type: 'ref/resource', uri: 'slack://channel/{channel}' },
      argument: { name: 'channel', value: 'in' },
    });
    expect(completion.completion.values).toEqual(['#incidents']);
  });

  it('offers three prompts whose messages embed the channel, framed as data', async () => {
    const { prompts } = await h.client.listPrompts();
    expect(prompts.map((p) => p.name)).toEqual([
      'slack_summarise',
      'slack_incident_update',
      'slack_draft_announcement',
    ]);
    const summary = await h.client.getPrompt({
      name: 'slack_summarise',
      arguments: { channel: '#general' },
    });
    const body = (summary.messages[0]!.content as { text: string }).text;
    expect(body).toContain('Welcome, everyone!');
    expect(body).toMatch(/untrusted-data-/);
    const incident = await h.client.getPrompt({
      name: 'slack_incident_update',
      arguments: { channel: '#incidents', incident: 'API latency is back to normal' },
    });
    expect((incident.messages[0]!.content as { text: string }).text).toContain(
      'INC-12: API latency up',
    );
    const announcement = await h.client.getPrompt({
      name: 'slack_draft_announcement',
      arguments: { channel: '#general', topic: 'New on-call rota' },
    });
    expect((announcement.messages[0]!.content as { text: string }).text).toContain(
      'may not post to #general',
    );
    const completion = await h.client.complete({
      ref: { type: 'ref/prompt', name: 'slack_summarise' },
      argument: { name: 'channel', value: '#ge' },
    });
    expect(completion.completion.values).toEqual(['#general']);
  });

  it('refuses a since that is no date, naming it, before any request', async () => {
    for (const since of ['2026-13-45', '2026-02-30', '2026-12-02T25:00:00Z', 'yesterday']) {
      const before = fake.requests.length;
      await expect(
        h.client.getPrompt({ name: 'slack_summarise', arguments: { channel: '#general', since } }),
      ).rejects.toThrow(/since.*expected an ISO date \(2026-12-02\) or time/);
      expect(fake.requests.length).toBe(before);
    }
    const ok = await h.client.getPrompt({
      name: 'slack_summarise',
      arguments: { channel: '#general', since: '2020-01-01' },
    });
    expect((ok.messages[0]!.content as { text: string }).text).toContain('since 2020-01-01');
  });
});

describe('can_post tells the truth, wherever it is said', () => {
  let fake: SlackFake;
  beforeAll(async () => {
    fake = await startFake();
  });
  afterAll(async () => {
    await fake?.close();
  });
  const postable = async (env: Record<string, string>) => {
    const h = await connectSlack(fake, { GATEHOUSE_STRUCTURED_OUTPUT: 'true', ...env });
    try {
      const listed = (
        (await h.client.callTool({ name: 'slack_list_channels', arguments: {} }))
          .structuredContent as {
          channels: Array<{ name: string; can_post: boolean }>;
        }
      ).channels;
      const resource = JSON.parse(
        (
          (await h.client.readResource({ uri: 'slack://channels' })).contents[0] as { text: string }
        ).text.replace(/^[\s\S]*?(\[[\s\S]*\])[\s\S]*$/, '$1'),
      ) as Array<{ name: string; can_post: boolean }>;
      const from = (xs: Array<{ name: string; can_post: boolean }>) =>
        xs
          .filter((c) => c.can_post)
          .map((c) => c.name.replace(/^#/, ''))
          .sort();
      expect(from(resource)).toEqual(from(listed));
      return from(listed);
    } finally {
      await h.close();
    }
  };

  it('writes off: no channel; writes on: neither Slack Connect nor archived ones', async () => {
    // The harness lists #incidents, #partner-acme (Slack Connect) and #old-project (archived).
    expect(await postable({})).toEqual([]);
    expect(await postable({ GATEHOUSE_ENABLE_WRITES: 'true' })).toEqual(['incidents']);
    expect(
      await postable({ GATEHOUSE_ENABLE_WRITES: 'true', SLACK_ALLOW_EXTERNAL_POSTS: 'true' }),
    ).toEqual(['incidents', 'partner-acme']);
  });

  it('frames what members wrote (topics, purposes) in the resources, as in tool results', async () => {
    const h = await connectSlack(fake);
    try {
      for (const uri of ['slack://channels', 'slack://channel/C0INCIDENT']) {
        const text = ((await h.client.readResource({ uri })).contents[0] as { text: string }).text;
        const facts = [JSON.parse(text)].flat() as Array<{ topic: string; purpose: string }>;
        const written = facts.flatMap((c) => [c.topic, c.purpose]).filter((t) => t !== '');
        expect(written.length).toBeGreaterThan(0);
        for (const t of written) expect(t).toMatch(/untrusted-data-/);
      }
    } finally {
      await h.close();
    }
  });
});
