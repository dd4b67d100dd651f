import { unframed } from '@gatehouse/testkit';
import type { SlackFake } from '@gatehouse/testkit/slack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOKEN, callsDuring, connectSlack, expectCleanFake, startFake, text } from './helpers.ts';
import type { SlackHarness } from './helpers.ts';

// The allow-lists on every path with no request sent for a refused channel, and what a post can
// never carry unless the operator configured it: mass mentions, unfurls, outside links, secrets.

let fake: SlackFake;
let h: SlackHarness;
beforeAll(async () => {
  fake = await startFake();
  h = await connectSlack(fake, { GATEHOUSE_ENABLE_WRITES: 'true' });
});
afterAll(async () => {
  await h?.close();
  expectCleanFake(fake);
  await fake?.close();
});

const post = (args: Record<string, unknown>, harness = h) =>
  harness.client.callTool({
    name: 'slack_post_message',
    arguments: { channel: '#incidents', ...args },
  });
const lastPosted = () => fake.channel('#incidents').messages.at(-1)!;

describe('channel allow-lists, on every path, before any request', () => {
  it.each([
    ['a channel not configured', 'slack_read_channel', { channel: '#secret-plans' }],
    ['a channel id not configured', 'slack_read_channel', { channel: 'C0NOTLISTED' }],
    ['a DM although listed (DMs are off)', 'slack_read_channel', { channel: 'D0DIRECT01' }],
    [
      'a thread in a channel not configured',
      'slack_read_thread',
      { channel: 'C0NOTLISTED', thread_ts: '1764500000.000100' },
    ],
    ['posting to a read-only channel', 'slack_post_message', { channel: '#general', text: 'hi' }],
    [
      'posting to a channel not configured',
      'slack_post_message',
      { channel: 'C0NOTLISTED', text: 'hi' },
    ],
  ])('refuses %s', async (_, name, args) => {
    let result: Awaited<ReturnType<typeof h.client.callTool>> | undefined;
    const calls = await callsDuring(fake, async () => {
      result = await h.client.callTool({ name, arguments: args });
    });
    expect(result!.isError).toBe(true);
    expect(text(result)).toMatch(
      /not one of the channels this server may read|may not post to #general/,
    );
    expect(calls).toEqual([]);
    const record = h.records.at(-1)!;
    expect(record.event.reason).toBe('denied');
    expect(record.policy?.rule).toMatch(/^slack_(channel|post)_allow_list$/);
  });

  it('refuses a resource or completion for a channel outside the list, sending nothing', async () => {
    const calls = await callsDuring(fake, async () => {
      await expect(h.client.readResource({ uri: 'slack://channel/C0NOTLISTED' })).rejects.toThrow();
      const completion = await h.client.complete({
        ref: { type: 'ref/resource', uri: 'slack://channel/{channel}' },
        argument: { name: 'channel', value: 's' },
      });
      expect(completion.completion.values).toEqual([]);
      await expect(
        h.client.getPrompt({ name: 'slack_summarise', arguments: { channel: '#secret-plans' } }),
      ).rejects.toThrow(/not one of the channels/);
    });
    expect(calls).toEqual([]);
  });

  it('does not post to a Slack Connect channel unless the operator allows it', async () => {
    const refused = await post({ channel: '#partner-acme', text: 'hello partner' });
    expect(text(refused)).toMatch(/shared with another organisation \(Slack Connect\)/);
    const open = await connectSlack(fake, {
      GATEHOUSE_ENABLE_WRITES: 'true',
      SLACK_ALLOW_EXTERNAL_POSTS: 'true',
    });
    try {
      expect(
        (await post({ channel: '#partner-acme', text: 'hello partner' }, open)).isError,
      ).toBeFalsy();
    } finally {
      await open.close();
    }
  });

  it('narrows the channels further with GATEHOUSE_ALLOW_TARGETS', async () => {
    const narrow = await connectSlack(fake, { GATEHOUSE_ALLOW_TARGETS: 'slack:C0GENERAL1' });
    try {
      const list = await narrow.client.callTool({ name: 'slack_list_channels', arguments: {} });
      expect(
        (unframed(list.structuredContent) as { channels: Array<{ id: string }> }).channels.map(
          (c) => c.id,
        ),
      ).toEqual(['C0GENERAL1']);
      const refused = await narrow.client.callTool({
        name: 'slack_read_channel',
        arguments: { channel: '#incidents' },
      });
      expect(refused.isError).toBe(true);
    } finally {
      await narrow.close();
    }
  });

  it('posts nothing while write tools are off (the default)', async () => {
    const readOnly = await connectSlack(fake);
    try {
      const { tools } = await readOnly.client.listTools();
      expect(tools.map((t) => t.name)).not.toContain('slack_post_message');
      await expect(post({ text: 'hi' }, readOnly)).rejects.toThrow(
        /Unknown tool: slack_post_message/,
      );
    } finally {
      await readOnly.close();
    }
  });
});

describe('what a post carries', () => {
  it('sends every mention and control sequence as text', async () => {
    const result = await post({
      text: '<!channel> <!here> <!everyone> <@U0ALICE001> <!subteam^S0TEAM0001> <#C0GENERAL1> & <b>',
    });
    expect(result.isError).toBeFalsy();
    expect(lastPosted().text).toBe(
      '&lt;!channel&gt; &lt;!here&gt; &lt;!everyone&gt; &lt;@U0ALICE001&gt; &lt;!subteam^S0TEAM0001&gt; &lt;#C0GENERAL1&gt; &amp; &lt;b&gt;',
    );
    expect(lastPosted().posted).toMatchObject({
      unfurl_links: 'false',
      unfurl_media: 'false',
      link_names: 'false',
      parse: 'none',
    });
  });

  it('keeps only the mentions the operator allowed', async () => {
    const allowing = await connectSlack(fake, {
      GATEHOUSE_ENABLE_WRITES: 'true',
      SLACK_ALLOWED_MENTIONS: '!here,@U0ALICE001',
    });
    try {
      await post({ text: '<!here> ping <@U0ALICE001>, not <!channel>' }, allowing);
      expect(lastPosted().text).toBe('<!here> ping <@U0ALICE001>, not &lt;!channel&gt;');
    } finally {
      await allowing.close();
    }
  });

  it('refuses a link to a host outside the list, sending nothing', async () => {
    for (const link of [
      'https://evil.example/c?d=token',
      '<https://evil.example/x|the report>',
      'www.evil.example/leak',
      'ftp://files.evil.example/x',
      // Spellings without "scheme://" a Slack client may still read as a link.
      'evil.example/steal?x=1',
      '//evil.example/x',
      'mailto:leak@evil.example?body=the%20token',
      'https:/evil.example',
      'http:evil.example',
      'evil.example:8080/x',
      'evil\u3002example/x',
      // A host inside a token, after punctuation, or spelled with escapes and invisible characters.
      'id=evil.example/x',
      'a,evil.example',
      'https://evil%2eexample/x',
      'evil.exa\u200bmple/x',
    ]) {
      let result: Awaited<ReturnType<typeof h.client.callTool>> | undefined;
      const calls = await callsDuring(fake, async () => {
        result = await post({ text: `see ${link}` });
      });
      expect(text(result)).toMatch(/links to .*evil\.example, outside the hosts posts may link to/);
      expect(calls).not.toContain('chat.postMessage');
      expect(h.records.at(-1)!.policy?.rule).toBe('slack_link_host');
    }
  });

  it('lets allowed hosts through, and defangs the rest when configured so', async () => {
    const defanging = await connectSlack(fake, {
      GATEHOUSE_ENABLE_WRITES: 'true',
      SLACK_LINK_HOSTS: '.acme.example',
      SLACK_LINK_POLICY: 'defang',
    });
    try {
      await post(
        { text: 'runbook https://wiki.acme.example/runbook and https://evil.example/c?d=1' },
        defanging,
      );
      expect(lastPosted().text).toBe(
        'runbook https://wiki.acme.example/runbook and hxxps://evil[.]example/c?d=1',
      );
    } finally {
      await defanging.close();
    }
  });

  it('refuses text carrying a secret — a token format or a configured secret value — in the core', async () => {
    for (const secret of ['ghp_0123456789abcdefghijklmnopqrstuvwxyzAB', TOKEN]) {
      let result: Awaited<ReturnType<typeof h.client.callTool>> | undefined;
      const calls = await callsDuring(fake, async () => {
        result = await post({ text: `the token is ${secret}` });
      });
      expect(text(result)).toMatch(/carry what looks like a secret/);
      expect(text(result)).not.toContain(secret);
      expect(calls).toEqual([]);
      const record = h.records.at(-1)!;
      expect(record).toMatchObject({
        event: { reason: 'denied' },
        policy: { rule: 'outgoing_secret' },
      });
      expect(JSON.stringify(record)).not.toContain(secret);
    }
  });
});

describe('posting once', () => {
  it('a lost answer never produces two messages', async () => {
    const before = fake.channel('#incidents').messages.length;
    fake.fail({ match: 'POST /chat.postMessage', status: 502, afterEffect: true });
    const result = await post({ text: 'status: all clear' });
    // Said once, as what happened: this call posted it; its answer was lost and found again.
    expect(text(result)).toMatch(/^Posted once \(Slack's answer was lost; found the message\)/);
    expect(unframed(result.structuredContent)).toMatchObject({
      deduplicated: false,
      recovered: true,
    });
    expect(fake.channel('#incidents').messages.length).toBe(before + 1);
    // The same post again, within the window: the first message, nothing new.
    const again = await post({ text: 'status: all clear' });
    expect(unframed(again.structuredContent)).toMatchObject({
      deduplicated: true,
      ts: lastPosted().ts,
    });
    expect(text(again)).toMatch(
      /^Posted once \(an identical request within the dedupe window already posted it; nothing new sent\)/,
    );
    expect(fake.channel('#incidents').messages.length).toBe(before + 1);
  });

  it('reports a post that failed for real, and does not retry it blindly', async () => {
    fake.fail({ match: 'POST /chat.postMessage', status: 503 });
    const calls = await callsDuring(fake, async () => {
      const result = await post({ text: 'a message Slack never took' });
      expect(text(result)).toMatch(/^Slack failed \(503\)/);
    });
    expect(calls.filter((c) => c === 'chat.postMessage')).toHaveLength(1);
  });
});
