// Each person acts as themselves in Slack (ADR 0026): the built server over HTTP, real MCP
// clients, the linking pages driven by a cookie-keeping browser client, and the Slack fake's app
// with user tokens, rotation and per-user membership. What a call can touch is the person's own
// Slack rights ∩ SLACK_READ_CHANNELS / SLACK_POST_CHANNELS ∩ the tool — never the bot's, never
// another person's — and every guarantee of a post holds as it does for the bot.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AuditRecord } from '@gatehouse/audit';
import {
  TestBrowser,
  callWithKey,
  connectHttp,
  connectLink,
  freePort,
  personServerEnv,
  spawnServer,
  unframed,
} from '@gatehouse/testkit';
import type { ServerProcess } from '@gatehouse/testkit';
import { slackSeed, startSlackFake } from '@gatehouse/testkit/slack';
import type { SlackFake } from '@gatehouse/testkit/slack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOKEN, text } from './helpers.ts';

const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url));
const CLIENT = { id: '1111111111.2222222222', secret: randomBytes(16).toString('hex') };
const PEOPLE = ['alice', 'bob', 'carol', 'mallory'] as const;
type Person = (typeof PEOPLE)[number];
const KEYS = Object.fromEntries(
  PEOPLE.map((p) => [p, `key-${p}-${randomBytes(12).toString('hex')}`]),
) as Record<Person, string>;
const SLACK_ID: Record<string, string> = {
  alice: 'U0ALICE001',
  bob: 'U0BOB00001',
  mallory: 'U0MALLORY1',
};
const ATTRIBUTION = 'Sent by the assistant for its author';

let fake: SlackFake;
let server: ServerProcess;
let grantsFile: string;
let auditFile: string;
let serverEnv: Record<string, string>;

beforeAll(async () => {
  const port = await freePort();
  const world = slackSeed();
  // #leadership is private with Alice (and the bot); #bob-private is private with Bob only.
  world.channels.push({
    id: 'G0BOBONLY1',
    name: 'bob-private',
    is_private: true,
    members: ['U0BOB00001'],
    messages: [{ ts: '1764500000.000100', user: 'U0BOB00001', text: 'only bob reads this' }],
  });
  fake = await startSlackFake({
    world,
    tokens: { [TOKEN]: { scopes: ['channels:read', 'groups:read', 'users:read'] } },
    oauth: {
      clientId: CLIENT.id,
      clientSecret: CLIENT.secret,
      callbackUrls: [`http://127.0.0.1:${port}/connect/gatehouse-slack/callback`],
      users: Object.values(SLACK_ID),
    },
  });
  const dir = mkdtempSync(join(tmpdir(), 'slack-user-'));
  const keys = join(dir, 'vault.keys');
  writeFileSync(keys, `k1 ${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  grantsFile = join(dir, 'grants.json');
  auditFile = join(dir, 'audit.jsonl');
  serverEnv = personServerEnv(
    {
      port,
      keys: KEYS,
      scopes: ['slack:read', 'slack:write'],
      // Alice and Mallory by Slack id, Bob by his name: both forms are the operator's to choose.
      logins: 'ci-alice=U0ALICE001,ci-bob=bob,ci-mallory=U0MALLORY1',
    },
    {
      GATEHOUSE_STRUCTURED_OUTPUT: 'true',
      GATEHOUSE_ENABLE_WRITES: 'true',
      GATEHOUSE_AUDIT_SINKS: 'file',
      GATEHOUSE_AUDIT_FILE: auditFile,
      // The bot may answer one read for people who have not linked: the channel list.
      GATEHOUSE_IDENTITY_READ_FALLBACK: 'slack_list_channels',
      GATEHOUSE_VAULT_KEYS_FILE: keys,
      GATEHOUSE_GRANTS_FILE: grantsFile,
      SLACK_BOT_TOKEN: TOKEN,
      SLACK_OAUTH_CLIENT_ID: CLIENT.id,
      SLACK_OAUTH_CLIENT_SECRET: CLIENT.secret,
      SLACK_TEAM_ID: 'T0ACME0001',
      SLACK_API_URL: fake.url,
      SLACK_WEB_URL: fake.rootUrl,
      SLACK_READ_CHANNELS: '#general,#incidents,#leadership,#bob-private',
      SLACK_POST_CHANNELS: '#general,#incidents',
      SLACK_LINK_HOSTS: 'acme.example',
      SLACK_ATTRIBUTION: ATTRIBUTION,
    },
  );
  server = await spawnServer(process.execPath, [BIN], { env: serverEnv });
});

afterAll(async () => {
  await server?.stop();
  await fake?.close();
});

const connectAs = (who: Person) =>
  connectHttp(server.url!, { headers: { authorization: `Bearer ${KEYS[who]}` } });

/** One tool call as `who`, on a fresh connection. */
const callAs = (who: Person, name: string, args: Record<string, unknown> = {}) =>
  callWithKey(server.url!, KEYS[who], name, args);

/** A browser signed in to Slack as `who` opens `link`. */
async function openAs(who: Person, link: string) {
  const browser = new TestBrowser();
  await browser.go(`${fake.rootUrl}/signin?user=${SLACK_ID[who]}`);
  return browser.go(link);
}

/** Links `who`'s Slack account: a call is answered with the link, their browser opens it. */
async function link(who: Person): Promise<void> {
  const asked = await callAs(who, 'slack_read_channel', { channel: '#general' });
  expect(asked.isError, text(asked)).toBe(true);
  expect((await openAs(who, connectLink(asked)!)).text).toContain(`Linked as ${who}`);
}

/** The Slack methods requested while `fn` ran. */
async function methodsDuring(fn: () => Promise<unknown>): Promise<string[]> {
  const before = fake.calls.length;
  await fn();
  return fake.calls.slice(before);
}

const names = (result: unknown) =>
  (
    unframed((result as { structuredContent: unknown }).structuredContent) as {
      channels: Array<{ name: string }>;
    }
  ).channels.map((c) => c.name);

describe('the Slack server acting as each person', () => {
  it('answers a person with no grant with the link, and sends Slack nothing for them', async () => {
    const sent = await methodsDuring(async () => {
      const result = await callAs('alice', 'slack_read_channel', { channel: '#general' });
      expect(result.isError).toBe(true);
      expect(text(result)).toMatch(
        /^Connect your Slack account first: open http:\/\/127\.0\.0\.1:\d+\/connect\/gatehouse-slack\/start\?flow=\S+ in your browser/,
      );
      const post = await callAs('alice', 'slack_post_message', {
        channel: '#general',
        text: 'hello',
      });
      expect(connectLink(post)).toBeDefined();
      // Resources, prompts and completions ask the same way, or complete nothing.
      const { client, close } = await connectAs('alice');
      try {
        await expect(client.readResource({ uri: 'slack://channels' })).rejects.toThrow(
          /Connect your Slack account first/,
        );
        await expect(
          client.getPrompt({ name: 'slack_summarise', arguments: { channel: '#general' } }),
        ).rejects.toThrow(/Connect your Slack account first/);
        const completed = await client.complete({
          ref: { type: 'ref/prompt', name: 'slack_summarise' },
          argument: { name: 'channel', value: '' },
        });
        expect(completed.completion.values).toEqual([]);
        // The listing shows the directory resource, whose read asks her, and no channel yet.
        const listed = (await client.listResources()).resources.map((r) => r.uri);
        expect(listed).toEqual(['slack://channels']);
      } finally {
        await close();
      }
    });
    expect(sent).toEqual([]);
  });

  it('links through Slack with the user scopes, for the configured workspace', async () => {
    const asked = await callAs('alice', 'slack_list_channels');
    // The operator let the bot answer this read while she has not linked: it said so in the audit.
    expect(asked.isError).toBeFalsy();
    const browser = new TestBrowser();
    await browser.go(`${fake.rootUrl}/signin?user=U0ALICE001`);
    const read = await callAs('alice', 'slack_read_channel', { channel: '#general' });
    const done = await browser.go(connectLink(read)!);
    expect(done.text).toContain('Linked as alice');
    const authorize = new URL(browser.visited.find((u) => u.includes('/oauth/v2/authorize'))!);
    expect(authorize.searchParams.get('user_scope')?.split(',').sort()).toEqual([
      'channels:history',
      'channels:read',
      'chat:write',
      'groups:history',
      'groups:read',
      'users:read',
    ]);
    expect(authorize.searchParams.get('team')).toBe('T0ACME0001');
    expect(authorize.searchParams.get('scope')).toBeNull();
    await link('bob');
  });

  it('shows each person only the channels Slack shows them, on one allow-list naming both private ones', async () => {
    expect(names(await callAs('alice', 'slack_list_channels'))).toEqual([
      'general',
      'incidents',
      'leadership',
    ]);
    expect(names(await callAs('bob', 'slack_list_channels'))).toEqual([
      'general',
      'incidents',
      'bob-private',
    ]);
    // Membership and can_post are each person's: Bob is not in #incidents, Alice is.
    const posting = async (who: Person) =>
      Object.fromEntries(
        (
          unframed((await callAs(who, 'slack_list_channels')).structuredContent) as {
            channels: Array<{ name: string; bot_is_member: boolean; can_post: boolean }>;
          }
        ).channels.map((c) => [c.name, [c.bot_is_member, c.can_post]]),
      );
    expect(await posting('alice')).toEqual({
      general: [true, true],
      incidents: [true, true],
      leadership: [true, false],
    });
    expect(await posting('bob')).toEqual({
      general: [true, true],
      incidents: [false, false],
      'bob-private': [true, false],
    });
    const mine = await callAs('bob', 'slack_read_channel', { channel: '#bob-private' });
    expect(text(mine)).toContain('only bob reads this');
    // Alice's view has no #bob-private, by name or by id: refused, and no history is requested.
    for (const channel of ['#bob-private', 'G0BOBONLY1']) {
      const sent = await methodsDuring(async () => {
        const refused = await callAs('alice', 'slack_read_channel', { channel });
        expect(text(refused)).toBe(
          `${channel} is not one of the channels you may read through this server (#general, #incidents, #leadership).`,
        );
      });
      expect(sent.filter((m) => m.startsWith('conversations.history'))).toEqual([]);
    }
    // Bob's refusal of #leadership names only what he can see: nothing of the channel's existence.
    expect(text(await callAs('bob', 'slack_read_channel', { channel: '#leadership' }))).toBe(
      '#leadership is not one of the channels you may read through this server (#general, #incidents, #bob-private).',
    );
    // The allow-list holds for both: #random is public, Alice is in it, and it is not listed.
    expect(text(await callAs('alice', 'slack_read_channel', { channel: '#random' }))).toContain(
      'is not one of the channels you may read',
    );
    // The other roads to a channel ask the same directory: Alice reads no #bob-private there either.
    const alice = await connectAs('alice');
    try {
      await expect(
        alice.client.readResource({ uri: 'slack://channel/G0BOBONLY1' }),
      ).rejects.toThrow();
      await expect(
        alice.client.getPrompt({ name: 'slack_summarise', arguments: { channel: '#bob-private' } }),
      ).rejects.toThrow(/not one of the channels you may read/);
    } finally {
      await alice.close();
    }
    // Resources and completions are theirs too.
    const { client, close } = await connectAs('bob');
    try {
      const listed = (await client.listResources()).resources.map((r) => r.name);
      expect(listed).toContain('#bob-private');
      expect(listed).not.toContain('#leadership');
      const completed = await client.complete({
        ref: { type: 'ref/prompt', name: 'slack_summarise' },
        argument: { name: 'channel', value: '#' },
      });
      expect(completed.completion.values).toEqual(['#general', '#incidents', '#bob-private']);
    } finally {
      await close();
    }
  });

  it('posts as the person, with the attribution line, and every rule of a post unchanged', async () => {
    const posted = await callAs('alice', 'slack_post_message', {
      channel: '#general',
      text: 'Deploy done <!channel> see acme.example/notes',
    });
    expect(posted.isError, text(posted)).toBeFalsy();
    const message = fake.channel('general').messages.at(-1)!;
    expect(message.user).toBe('U0ALICE001');
    expect(message.text).toBe(
      `Deploy done &lt;!channel&gt; see acme.example/notes\n_${ATTRIBUTION}_`,
    );
    // Unfurls off, no parsing, no name linking: the fake records any post that breaks a rule.
    expect(fake.violations).toEqual([]);
    expect(JSON.stringify(message)).not.toContain('bot_id');
    // The same post again within the window: found, not posted twice.
    const again = await callAs('alice', 'slack_post_message', {
      channel: '#general',
      text: 'Deploy done <!channel> see acme.example/notes',
    });
    expect(unframed(again.structuredContent)).toMatchObject({ deduplicated: true });
    expect(
      fake.channel('general').messages.filter((m) => m.text.startsWith('Deploy done')),
    ).toHaveLength(1);
    // An outside link in any spelling is refused before Slack hears of it.
    const sent = await methodsDuring(async () => {
      const leak = await callAs('alice', 'slack_post_message', {
        channel: '#general',
        text: 'see evil%2eexample/x',
      });
      expect(text(leak)).toContain('outside the hosts posts may link to');
    });
    expect(sent.filter((m) => m === 'chat.postMessage')).toEqual([]);
    // Nor a secret: a token in the text is refused before Slack hears of it, as for the bot.
    const secret = await methodsDuring(async () => {
      const leak = await callAs('alice', 'slack_post_message', {
        channel: '#general',
        text: `the bot token is ${TOKEN}`,
      });
      expect(text(leak)).toContain('carry what looks like a secret');
    });
    expect(secret.filter((m) => m === 'chat.postMessage')).toEqual([]);
    // Bob may post to #incidents by the allow-list, but Slack says he is not in it.
    const bob = await callAs('bob', 'slack_post_message', { channel: '#incidents', text: 'hi' });
    expect(text(bob)).toContain('you are not a member of this channel in Slack');
    // And no one posts where the allow-list does not let them, whatever Slack would allow.
    expect(
      text(await callAs('bob', 'slack_post_message', { channel: '#bob-private', text: 'x' })),
    ).toBe(
      'You may not post to #bob-private through this server (you may post to #general, #incidents).',
    );
  });

  it('links nothing when the link is forwarded to someone else (the confused deputy)', async () => {
    const asked = await callAs('mallory', 'slack_read_channel', { channel: '#general' });
    const forwarded = await openAs('bob', connectLink(asked)!);
    expect(forwarded.status).toBe(403);
    expect(forwarded.text).not.toContain('mallory');
    expect(
      connectLink(await callAs('mallory', 'slack_read_channel', { channel: '#general' })),
    ).toBeDefined();
  });

  it('falls back to the bot only for the read the operator named, and never for writes', async () => {
    // Carol's key has no Slack account configured: she can never link.
    const list = await callAs('carol', 'slack_list_channels');
    expect(list.isError, text(list)).toBeFalsy();
    expect(names(list)).toEqual(['general', 'incidents', 'leadership']);
    for (const [tool, args] of [
      ['slack_read_channel', { channel: '#general' }],
      ['slack_post_message', { channel: '#general', text: 'as the bot?' }],
    ] as const) {
      expect(text(await callAs('carol', tool, args))).toContain('Connect your Slack account first');
    }
  });

  it("never answers one person with another's directory, run interleaved (GHSA-pjp5-fpmr-3349)", async () => {
    const asks = Array.from({ length: 14 }, (_, i) => {
      const who: Person = i % 2 === 0 ? 'alice' : 'bob';
      const channel = i % 4 < 2 ? '#leadership' : '#bob-private';
      return { who, channel, result: callAs(who, 'slack_read_channel', { channel }) };
    });
    for (const { who, channel, result } of asks) {
      const mine = (who === 'alice') === (channel === '#leadership');
      const answer = await result;
      expect(answer.isError ?? false, `${who} reading ${channel}: ${text(answer)}`).toBe(!mine);
    }
  });

  it('keeps tokens sealed at rest: the grant file names no one and holds no token', () => {
    const stored = readFileSync(grantsFile, 'utf8');
    expect(stored).not.toMatch(/xox[a-z]?[-.]/);
    expect(stored).not.toMatch(/alice|bob|U0ALICE|U0BOB|ci-/);
  });

  it('rotates an expired token once, and asks again once Slack revoked the grant', async () => {
    const refreshes = () => fake.oauth!.issued.filter((g) => g.grant === 'refresh_token').length;
    const before = refreshes();
    fake.oauth!.advance(12 * 3600 + 60); // past the twelve hours of a rotating token
    const read = await callAs('bob', 'slack_read_channel', { channel: '#bob-private' });
    expect(read.isError, text(read)).toBeFalsy();
    expect(refreshes()).toBe(before + 1);
    fake.oauth!.revokeUser('U0BOB00001');
    const after = await callAs('bob', 'slack_read_channel', { channel: '#bob-private' });
    expect(text(after)).toContain('no longer accepts the account you linked');
    expect(connectLink(after)).toBeDefined();
  });

  it('audits who asked, whom each call acted as in Slack, and the channel a #name resolved to', () => {
    const records = readFileSync(auditFile, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as AuditRecord);
    const calls = records.filter((r) => r.event.action === 'tools/call');
    const acted = (principal: string) =>
      calls.filter((r) => r.user?.id === principal && r.auth?.upstream === 'user');
    expect(acted('ci-alice').length).toBeGreaterThan(0);
    for (const r of acted('ci-alice')) {
      expect(r.user?.effective).toMatchObject({ id: 'U0ALICE001', name: 'alice' });
    }
    for (const r of acted('ci-bob')) expect(r.user?.effective?.id).toBe('U0BOB00001');
    expect(
      calls
        .filter((r) => r.user?.id === 'ci-carol' && r.auth?.upstream !== undefined)
        .map((r) => [r.mcp?.name, r.auth?.upstream]),
    ).toEqual([['slack_list_channels', 'service_fallback']]);
    expect(calls.filter((r) => r.auth?.upstream === 'service')).toEqual([]);
    // A #name is resolved in the person's own directory; the record names the channel's id.
    const read = calls.find(
      (r) =>
        r.user?.id === 'ci-bob' &&
        r.mcp?.name === 'slack_read_channel' &&
        r.event.outcome === 'success',
    );
    expect(read?.target?.resource).toBe('slack:G0BOBONLY1');
    // No token, refresh token or code reached the trail or the log; nor the app's secret.
    expect(readFileSync(auditFile, 'utf8')).not.toMatch(/xox[a-z]?[-.]|code=/);
    const logs = JSON.stringify(server.logs);
    expect(logs).not.toMatch(/xox[a-z]?[-.]/);
    expect(logs).not.toContain(CLIENT.secret);
  });

  it('disconnects a person on their own word: the token revoked at Slack, the grant gone', async () => {
    const { client, close } = await connectAs('alice');
    try {
      const done = await client.callTool({ name: 'slack_disconnect', arguments: {} });
      expect(unframed(done.structuredContent)).toEqual({
        disconnected: true,
        account: 'alice',
        revoked: true,
      });
      expect(fake.calls.at(-1)).toBe('auth.revoke');
      const again = await client.callTool({
        name: 'slack_read_channel',
        arguments: { channel: '#general' },
      });
      expect(connectLink(again)).toBeDefined();
    } finally {
      await close();
    }
  });

  it("disconnects a person by the operator's command once the server is stopped", async () => {
    await link('alice');
    await server.stop();
    const done = await new Promise<{ stdout: string; stderr: string; status: number }>(
      (resolve) => {
        execFile(
          process.execPath,
          [BIN, 'disconnect', '--api-key-principal', 'ci-alice'],
          { env: serverEnv, timeout: 30_000 },
          (error, stdout, stderr) =>
            resolve({ status: error === null ? 0 : (error.code as number), stdout, stderr }),
        );
      },
    );
    expect(done.stderr).toBe('');
    expect(done.stdout).toContain('ci-alice no longer acts as alice on Slack');
    expect(done.status).toBe(0);
  });
});
