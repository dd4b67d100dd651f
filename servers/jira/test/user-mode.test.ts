// Each person acts as themselves in Jira Cloud (ADR 0026): the built server over HTTP, real MCP
// clients, the linking pages driven by a cookie-keeping browser client, and the Jira fake's
// Atlassian OAuth 2.0 (3LO) app with rotating refresh tokens, the API gateway and per-person
// project rights. What a call can touch is the person's own Jira rights ∩ JIRA_PROJECTS ∩ the
// tool; what they create and comment is theirs; nothing falls back to the service account.
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
import { jiraSeed, startJiraFake } from '@gatehouse/testkit/jira';
import type { JiraFake } from '@gatehouse/testkit/jira';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMAIL, TOKEN, text } from './helpers.ts';

const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url));
const CLIENT = { id: 'atlClientUserMode01', secret: randomBytes(16).toString('hex') };
const PEOPLE = ['alice', 'bob', 'carol', 'dave', 'mallory'] as const;
type Person = (typeof PEOPLE)[number];
const KEYS = Object.fromEntries(
  PEOPLE.map((p) => [p, `key-${p}-${randomBytes(12).toString('hex')}`]),
) as Record<Person, string>;
const ACCOUNT: Record<string, string> = {
  alice: '557058:alice',
  bob: '557058:bob',
  dave: '557058:dave',
  mallory: '557058:mallory',
};

let fake: JiraFake;
let server: ServerProcess;
let auditFile: string;
let grantsFile: string;

beforeAll(async () => {
  const port = await freePort();
  const world = jiraSeed();
  // Alice works in OPS, Bob in WEB: one allow-list names both projects.
  world.users.find((u) => u.accountId === ACCOUNT.alice)!.projects = ['OPS'];
  world.users.find((u) => u.accountId === ACCOUNT.bob)!.projects = ['WEB'];
  world.users.push(
    { accountId: ACCOUNT.dave!, displayName: 'Dave Davies', emailAddress: 'dave@acme.example' },
    { accountId: ACCOUNT.mallory!, displayName: 'Mallory Moss', emailAddress: 'm@acme.example' },
  );
  fake = await startJiraFake({
    world,
    // The service account exists (one read falls back to it) and must serve nobody else.
    credentials: [{ email: EMAIL, token: TOKEN, accountId: '557058:bot' }],
    searchLagMs: 0,
    oauth: {
      clientId: CLIENT.id,
      clientSecret: CLIENT.secret,
      callbackUrls: [`http://127.0.0.1:${port}/connect/gatehouse-jira/callback`],
      users: Object.values(ACCOUNT),
      elsewhere: [ACCOUNT.dave!],
    },
  });
  const dir = mkdtempSync(join(tmpdir(), 'jira-user-'));
  const keys = join(dir, 'vault.keys');
  writeFileSync(keys, `k1 ${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  auditFile = join(dir, 'audit.jsonl');
  grantsFile = join(dir, 'grants.json');
  server = await spawnServer(process.execPath, [BIN], {
    env: personServerEnv(
      {
        port,
        keys: KEYS,
        scopes: ['jira:read', 'jira:write'],
        // Alice by account id, Bob by e-mail: both forms are the operator's to choose.
        logins:
          'ci-alice=557058:alice,ci-bob=bob@acme.example,ci-dave=557058:dave,ci-mallory=557058:mallory',
      },
      {
        GATEHOUSE_STRUCTURED_OUTPUT: 'true',
        GATEHOUSE_ENABLE_WRITES: 'true',
        GATEHOUSE_AUDIT_SINKS: 'file',
        GATEHOUSE_AUDIT_FILE: auditFile,
        GATEHOUSE_IDENTITY_READ_FALLBACK: 'jira_search_issues',
        GATEHOUSE_VAULT_KEYS_FILE: keys,
        GATEHOUSE_GRANTS_FILE: grantsFile,
        JIRA_URL: fake.url,
        JIRA_PROJECTS: 'OPS,WEB',
        JIRA_EMAIL: EMAIL,
        JIRA_API_TOKEN: TOKEN,
        JIRA_OAUTH_CLIENT_ID: CLIENT.id,
        JIRA_OAUTH_CLIENT_SECRET: CLIENT.secret,
        JIRA_AUTH_URL: fake.rootUrl,
        JIRA_GATEWAY_URL: fake.rootUrl,
        JIRA_SEARCH_LAG_S: '0',
      },
    ),
  });
});

afterAll(async () => {
  await server?.stop();
  await fake?.close();
});

const connectAs = (who: Person) =>
  connectHttp(server.url!, { headers: { authorization: `Bearer ${KEYS[who]}` } });

const callAs = (who: Person, name: string, args: Record<string, unknown> = {}) =>
  callWithKey(server.url!, KEYS[who], name, args);

/** A browser signed in to Atlassian as `who` opens `link`. */
async function openAs(who: Person, link: string) {
  const browser = new TestBrowser();
  await browser.go(`${fake.rootUrl}/login?user=${ACCOUNT[who]}`);
  const page = await browser.go(link);
  return { ...page, visited: browser.visited };
}

/** How many requests Jira (and Atlassian's endpoints) received. */
const sent = () => fake.requests.length;

describe('the Jira server acting as each person', () => {
  it('answers a person with no grant with the link, and sends Jira nothing for them', async () => {
    const before = sent();
    const result = await callAs('alice', 'jira_get_issue', { key: 'OPS-1' });
    expect(text(result)).toMatch(
      /^Connect your Jira account first: open http:\/\/127\.0\.0\.1:\d+\/connect\/gatehouse-jira\/start\?flow=\S+ in your browser/,
    );
    const { client, close } = await connectAs('alice');
    try {
      await expect(client.readResource({ uri: 'jira://project/OPS/createmeta' })).rejects.toThrow(
        /Connect your Jira account first/,
      );
    } finally {
      await close();
    }
    expect(sent()).toBe(before);
  });

  it('links through Atlassian with the gateway audience, offline access and consent', async () => {
    for (const who of ['alice', 'bob'] as const) {
      const asked = await callAs(who, 'jira_get_issue', { key: 'OPS-1' });
      const page = await openAs(who, connectLink(asked)!);
      expect(page.text).toContain(`Linked as ${who}@acme.example`);
      const authorize = new URL(page.visited.find((u) => u.includes('/authorize?'))!);
      expect(authorize.searchParams.get('audience')).toBe('api.atlassian.com');
      expect(authorize.searchParams.get('prompt')).toBe('consent');
      expect(authorize.searchParams.get('scope')?.split(' ')).toContain('offline_access');
    }
  });

  it('refuses a consent given for another site: nothing is linked', async () => {
    const asked = await callAs('dave', 'jira_get_issue', { key: 'OPS-1' });
    const page = await openAs('dave', connectLink(asked)!);
    expect(page.status).toBe(403);
    expect(page.text).toContain('allowed for another site');
    expect(connectLink(await callAs('dave', 'jira_get_issue', { key: 'OPS-1' }))).toBeDefined();
  });

  it('shows each person only what Jira lets them browse, on one allow-list naming both projects', async () => {
    expect((await callAs('alice', 'jira_get_issue', { key: 'OPS-1' })).isError).toBeFalsy();
    expect(text(await callAs('alice', 'jira_get_issue', { key: 'WEB-1' }))).toMatch(
      /not found|cannot see/,
    );
    expect((await callAs('bob', 'jira_get_issue', { key: 'WEB-1' })).isError).toBeFalsy();
    expect(text(await callAs('bob', 'jira_get_issue', { key: 'OPS-1' }))).toMatch(
      /not found|cannot see/,
    );
    const found = await callAs('alice', 'jira_search_issues', {});
    const keys = (
      unframed(found.structuredContent) as { issues: Array<{ key: string }> }
    ).issues.map((i) => i.key);
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.every((k) => k.startsWith('OPS-'))).toBe(true);
    // The allow-list holds for both: HR is not in it, whatever Jira would show.
    expect(text(await callAs('alice', 'jira_get_issue', { key: 'HR-1' }))).toContain('HR');
    // Create metadata is asked as the person: Bob's WEB, not Alice's.
    const { client, close } = await connectAs('bob');
    try {
      const meta = await client.readResource({ uri: 'jira://project/WEB/createmeta' });
      expect(meta.contents).toHaveLength(1);
      await expect(client.readResource({ uri: 'jira://project/OPS/createmeta' })).rejects.toThrow();
    } finally {
      await close();
    }
  });

  it('writes as the person: the reporter and the comment author are theirs, and the journal too', async () => {
    const created = await callAs('alice', 'jira_create_issue', {
      project: 'OPS',
      type: 'Task',
      summary: 'Filed by Alice through the agent',
    });
    expect(created.isError, text(created)).toBeFalsy();
    const key = (unframed(created.structuredContent) as { key: string }).key;
    expect(fake.issue(key).reporter).toBe(ACCOUNT.alice);
    // Her create is recorded on her own user record, not the service account's.
    expect(
      [...fake.userProperties(ACCOUNT.alice!).keys()].some((k) =>
        k.startsWith('gatehouse.create.'),
      ),
    ).toBe(true);
    expect([...fake.userProperties('557058:bot').keys()]).toEqual([]);
    const again = await callAs('alice', 'jira_create_issue', {
      project: 'OPS',
      type: 'Task',
      summary: 'Filed by Alice through the agent',
    });
    expect(unframed(again.structuredContent)).toMatchObject({ key, deduplicated: true });
    const comment = await callAs('alice', 'jira_add_comment', { key, body: 'Looking at it.' });
    expect(comment.isError, text(comment)).toBeFalsy();
    expect(fake.issue(key).comments.at(-1)?.author).toBe(ACCOUNT.alice);
    // Bob cannot create in OPS: Jira says so, and nothing is made.
    const denied = await callAs('bob', 'jira_create_issue', {
      project: 'OPS',
      type: 'Task',
      summary: 'Bob in OPS',
    });
    expect(denied.isError).toBe(true);
    expect(fake.world.issues.some((i) => i.summary === 'Bob in OPS')).toBe(false);
  });

  it('links nothing when the link is forwarded to someone else (the confused deputy)', async () => {
    const asked = await callAs('mallory', 'jira_get_issue', { key: 'OPS-1' });
    const forwarded = await openAs('bob', connectLink(asked)!);
    expect(forwarded.status).toBe(403);
    expect(connectLink(await callAs('mallory', 'jira_get_issue', { key: 'OPS-1' }))).toBeDefined();
  });

  it('falls back to the service account only for the read the operator named', async () => {
    const search = await callAs('carol', 'jira_search_issues', {});
    expect(search.isError, text(search)).toBeFalsy();
    for (const [tool, args] of [
      ['jira_get_issue', { key: 'OPS-1' }],
      ['jira_add_comment', { key: 'OPS-1', body: 'as the bot?' }],
    ] as const) {
      expect(text(await callAs('carol', tool, args))).toContain('Connect your Jira account first');
    }
  });

  it("never answers one person with another's view, run interleaved (GHSA-pjp5-fpmr-3349)", async () => {
    const asks = Array.from({ length: 14 }, (_, i) => {
      const who: Person = i % 2 === 0 ? 'alice' : 'bob';
      const key = i % 4 < 2 ? 'OPS-1' : 'WEB-1';
      return { who, key, result: callAs(who, 'jira_get_issue', { key }) };
    });
    for (const { who, key, result } of asks) {
      const mine = (who === 'alice') === key.startsWith('OPS');
      const answer = await result;
      expect(answer.isError ?? false, `${who} reading ${key}: ${text(answer)}`).toBe(!mine);
    }
  });

  it("never answers one person's create metadata with another's, read interleaved", async () => {
    const reads = Array.from({ length: 8 }, async (_, i) => {
      const who: Person = i % 2 === 0 ? 'alice' : 'bob';
      const project = i % 4 < 2 ? 'OPS' : 'WEB';
      const { client, close } = await connectAs(who);
      try {
        const answer = await client
          .readResource({ uri: `jira://project/${project}/createmeta` })
          .then(() => 'read')
          .catch(() => 'refused');
        return { who, project, answer };
      } finally {
        await close();
      }
    });
    for (const { who, project, answer } of await Promise.all(reads)) {
      const mine = (who === 'alice') === (project === 'OPS');
      expect(answer, `${who} reading ${project}'s create metadata`).toBe(mine ? 'read' : 'refused');
    }
  });

  it('keeps tokens sealed at rest: the grant file names no one and holds no token', () => {
    const stored = readFileSync(grantsFile, 'utf8');
    expect(stored).not.toMatch(/atl3lo\.|atlrt\./);
    expect(stored).not.toMatch(/alice|bob|557058|ci-/);
  });

  it('rotates an expired token once, and asks again once the authorization is gone', async () => {
    const refreshes = () => fake.oauth!.issued.filter((g) => g.grant === 'refresh_token').length;
    const before = refreshes();
    fake.oauth!.advance(3_600 + 60); // past the hour of an access token
    const read = await callAs('bob', 'jira_get_issue', { key: 'WEB-1' });
    expect(read.isError, text(read)).toBeFalsy();
    expect(refreshes()).toBe(before + 1);
    fake.oauth!.revokeUser(ACCOUNT.bob!);
    const after = await callAs('bob', 'jira_get_issue', { key: 'WEB-1' });
    expect(text(after)).toContain('no longer accepts the account you linked');
  });

  it('audits who asked and whom each call acted as in Jira', () => {
    const records = readFileSync(auditFile, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as AuditRecord);
    const calls = records.filter((r) => r.event.action === 'tools/call');
    const acted = (principal: string) =>
      calls.filter((r) => r.user?.id === principal && r.auth?.upstream === 'user');
    expect(acted('ci-alice').length).toBeGreaterThan(0);
    for (const r of acted('ci-alice')) expect(r.user?.effective?.id).toBe(ACCOUNT.alice);
    for (const r of acted('ci-bob')) expect(r.user?.effective?.id).toBe(ACCOUNT.bob);
    expect(
      calls
        .filter((r) => r.user?.id === 'ci-carol' && r.auth?.upstream !== undefined)
        .map((r) => [r.mcp?.name, r.auth?.upstream]),
    ).toEqual([['jira_search_issues', 'service_fallback']]);
    expect(calls.filter((r) => r.auth?.upstream === 'service')).toEqual([]);
    const refused = records.find(
      (r) => r.event.action === 'gatehouse/connect' && r.user?.id === 'ci-dave',
    );
    expect(refused?.gatehouse).toMatchObject({ refused: 'account_refused' });
    expect(readFileSync(auditFile, 'utf8')).not.toMatch(/atl3lo\.|atlrt\.|code=/);
    const logs = JSON.stringify(server.logs);
    expect(logs).not.toMatch(/atl3lo\.|atlrt\./);
    expect(logs).not.toContain(CLIENT.secret);
  });

  it('disconnects a person: the grant forgotten, and says Atlassian keeps the app until they remove it', async () => {
    const { client, close } = await connectAs('alice');
    try {
      const done = await client.callTool({ name: 'jira_disconnect', arguments: {} });
      expect(unframed(done.structuredContent)).toEqual({
        disconnected: true,
        account: 'alice@acme.example',
        revoked: false,
      });
      const again = await client.callTool({ name: 'jira_get_issue', arguments: { key: 'OPS-1' } });
      expect(connectLink(again)).toBeDefined();
    } finally {
      await close();
    }
  });
});
