// Two replicas of the Jira server in user mode sharing Redis (ADR 0026): a person linked through
// one is known to the other; when Atlassian's clock says their hour-long token expired, calls on
// both at once refresh it exactly once — Atlassian rotates refresh tokens, and one used again
// after its ten-minute leeway revokes the whole authorization — and Redis holds no token, and
// the vault's part of it names no one.
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import {
  TestBrowser,
  callWithKey,
  connectLink,
  freePort,
  personServerEnv,
  spawnServer,
  startRedis,
} from '@gatehouse/testkit';
import type { ServerProcess, TestRedis } from '@gatehouse/testkit';
import { jiraSeed, startJiraFake } from '@gatehouse/testkit/jira';
import type { JiraFake } from '@gatehouse/testkit/jira';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { text } from './helpers.ts';

const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url));
const CLIENT = { id: 'atlClientReplicas01', secret: randomBytes(16).toString('hex') };
const KEY = `key-alice-${randomBytes(12).toString('hex')}`;
const VAULT_KEY = randomBytes(32).toString('base64');

let fake: JiraFake;
let redis: TestRedis;
const replicas: ServerProcess[] = [];

beforeAll(async () => {
  redis = await startRedis();
  const ports = [await freePort(), await freePort()];
  // One public address, as behind an ingress: the link and the callback go to the first.
  const publicUrl = `http://127.0.0.1:${ports[0]}/mcp`;
  fake = await startJiraFake({
    world: jiraSeed(),
    credentials: [],
    oauth: {
      clientId: CLIENT.id,
      clientSecret: CLIENT.secret,
      callbackUrls: [`http://127.0.0.1:${ports[0]}/connect/gatehouse-jira/callback`],
      users: ['557058:alice'],
    },
  });
  const env = (port: number) =>
    personServerEnv(
      {
        port,
        publicUrl,
        keys: { alice: KEY },
        scopes: ['jira:read'],
        logins: 'ci-alice=557058:alice',
      },
      {
        GATEHOUSE_REDIS_URL: redis.url,
        GATEHOUSE_VAULT_KEYS: `k1 ${VAULT_KEY}`,
        // No service account at all: nothing can fall back to it.
        JIRA_OAUTH_CLIENT_ID: CLIENT.id,
        JIRA_OAUTH_CLIENT_SECRET: CLIENT.secret,
        JIRA_AUTH_URL: fake.rootUrl,
        JIRA_GATEWAY_URL: fake.rootUrl,
        JIRA_URL: fake.url,
        JIRA_PROJECTS: 'OPS',
      },
    );
  for (const port of ports)
    replicas.push(await spawnServer(process.execPath, [BIN], { env: env(port) }));
});

afterAll(async () => {
  for (const replica of replicas) await replica.stop();
  await fake?.close();
  await redis?.stop();
});

const readOn = (replica: ServerProcess) =>
  callWithKey(replica.url!, KEY, 'jira_get_issue', { key: 'OPS-1' });

it('links on one replica, serves on both, and rotates once when both find the token expired, past the leeway too', async () => {
  const asked = await readOn(replicas[1]!);
  const link = connectLink(asked);
  expect(link).toBeDefined();
  const browser = new TestBrowser();
  await browser.go(`${fake.rootUrl}/login?user=557058:alice`);
  expect((await browser.go(link!)).text).toContain('Linked as alice');
  for (const replica of replicas) {
    const read = await readOn(replica);
    expect(read.isError, text(read)).toBeFalsy();
  }

  // Redis holds sealed records under hashed keys: no token, no principal, no Atlassian account.
  const peek = new Redis(redis.url);
  try {
    const keys = await peek.keys('*');
    const values = await Promise.all(keys.map((k) => peek.dumpBuffer(k)));
    const stored = [...keys, ...values.map((v) => v?.toString('latin1') ?? '')].join('\n');
    expect(stored).not.toMatch(/atl3lo\.|atlrt\./);
    const grants = keys.filter((k) => k.startsWith('gatehouse:gatehouse-jira:grant:'));
    expect(grants.length).toBeGreaterThan(0);
    const sealed = await Promise.all(grants.map((k) => peek.get(k)));
    expect([...grants, ...sealed].join('\n')).not.toMatch(/alice|557058/);
  } finally {
    peek.disconnect();
  }

  const refreshes = () => fake.oauth!.issued.filter((g) => g.grant === 'refresh_token').length;
  const before = refreshes();
  fake.oauth!.advance(3600 + 60); // Atlassian now says the hour-long token expired
  const answers = await Promise.all([0, 1, 0, 1, 0, 1].map((i) => readOn(replicas[i]!)));
  for (const answer of answers) expect(answer.isError, text(answer)).toBeFalsy();
  expect(refreshes()).toBe(before + 1);
  // Past the ten-minute leeway a second refresh of the spent token would revoke everything:
  // the grant still works, so none was made.
  fake.oauth!.advance(11 * 60);
  const later = await readOn(replicas[1]!);
  expect(later.isError, text(later)).toBeFalsy();
});
