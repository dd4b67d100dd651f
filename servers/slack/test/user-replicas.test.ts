// Two replicas of the Slack server in user mode sharing Redis (ADR 0026): a person linked
// through one is known to the other; when Slack's clock says their rotating token expired, calls
// on both at once refresh it exactly once (Slack spends a refresh token on first use: a second
// refresh would lose the grant); and Redis holds no token, and the vault's part of it names no one.
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
import { slackSeed, startSlackFake } from '@gatehouse/testkit/slack';
import type { SlackFake } from '@gatehouse/testkit/slack';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { text } from './helpers.ts';

const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url));
const CLIENT = { id: '3333333333.4444444444', secret: randomBytes(16).toString('hex') };
const KEY = `key-alice-${randomBytes(12).toString('hex')}`;
const VAULT_KEY = randomBytes(32).toString('base64');

let fake: SlackFake;
let redis: TestRedis;
const replicas: ServerProcess[] = [];

beforeAll(async () => {
  redis = await startRedis();
  const ports = [await freePort(), await freePort()];
  // One public address, as behind an ingress: the link and the callback go to the first.
  const publicUrl = `http://127.0.0.1:${ports[0]}/mcp`;
  fake = await startSlackFake({
    world: slackSeed(),
    tokens: {},
    oauth: {
      clientId: CLIENT.id,
      clientSecret: CLIENT.secret,
      callbackUrls: [`http://127.0.0.1:${ports[0]}/connect/gatehouse-slack/callback`],
      users: ['U0ALICE001'],
    },
  });
  const env = (port: number) =>
    personServerEnv(
      {
        port,
        publicUrl,
        keys: { alice: KEY },
        scopes: ['slack:read'],
        logins: 'ci-alice=U0ALICE001',
      },
      {
        GATEHOUSE_REDIS_URL: redis.url,
        GATEHOUSE_VAULT_KEYS: `k1 ${VAULT_KEY}`,
        // No bot token at all: nothing can fall back to it.
        SLACK_OAUTH_CLIENT_ID: CLIENT.id,
        SLACK_OAUTH_CLIENT_SECRET: CLIENT.secret,
        SLACK_TEAM_ID: 'T0ACME0001',
        SLACK_API_URL: fake.url,
        SLACK_WEB_URL: fake.rootUrl,
        SLACK_READ_CHANNELS: '#leadership',
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
  callWithKey(replica.url!, KEY, 'slack_read_channel', { channel: '#leadership' });

it('links on one replica, serves on both, and rotates once when both find the token expired', async () => {
  const asked = await readOn(replicas[1]!);
  const link = connectLink(asked);
  expect(link).toBeDefined();
  const browser = new TestBrowser();
  await browser.go(`${fake.rootUrl}/signin?user=U0ALICE001`);
  expect((await browser.go(link!)).text).toContain('Linked as alice');
  for (const replica of replicas) {
    const read = await readOn(replica);
    expect(read.isError, text(read)).toBeFalsy();
  }

  // Redis holds sealed records under hashed keys: no token, no principal, no Slack account.
  const peek = new Redis(redis.url);
  try {
    const keys = await peek.keys('*');
    const values = await Promise.all(keys.map((k) => peek.dumpBuffer(k)));
    const stored = [...keys, ...values.map((v) => v?.toString('latin1') ?? '')].join('\n');
    expect(stored).not.toMatch(/xox[a-z]?[-.]/);
    const grants = keys.filter((k) => k.startsWith('gatehouse:gatehouse-slack:grant:'));
    expect(grants.length).toBeGreaterThan(0);
    const sealed = await Promise.all(grants.map((k) => peek.get(k)));
    expect([...grants, ...sealed].join('\n')).not.toMatch(/alice|U0ALICE/);
  } finally {
    peek.disconnect();
  }

  const refreshes = () => fake.oauth!.issued.filter((g) => g.grant === 'refresh_token').length;
  const before = refreshes();
  fake.oauth!.advance(12 * 3600 + 60); // Slack now says the twelve-hour token expired
  const answers = await Promise.all([0, 1, 0, 1, 0, 1].map((i) => readOn(replicas[i]!)));
  for (const answer of answers) expect(answer.isError, text(answer)).toBeFalsy();
  expect(refreshes()).toBe(before + 1);
});
