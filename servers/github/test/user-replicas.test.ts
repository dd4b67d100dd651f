// Two replicas of the GitHub server in user mode sharing Redis (ADR 0026): a person linked
// through one is known to the other; when GitHub's clock says their token expired, calls on both
// at once refresh it exactly once (a refresh token rotates: a second refresh would lose the
// grant); and Redis holds no token, and the vault's part of it names no one.
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
import { startGitHubAppFake } from '@gatehouse/testkit/github';
import type { GitHubFake } from '@gatehouse/testkit/github';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { text } from './helpers.ts';

const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url));
const CLIENT = { id: 'Iv23liReplicaTest', secret: `secret-${randomBytes(12).toString('hex')}` };
const KEY = `key-alice-${randomBytes(12).toString('hex')}`;
const VAULT_KEY = randomBytes(32).toString('base64');

let fake: GitHubFake;
let redis: TestRedis;
const replicas: ServerProcess[] = [];

beforeAll(async () => {
  redis = await startRedis();
  const ports = [await freePort(), await freePort()];
  // One public address, as behind an ingress: the link and the callback go to the first.
  const publicUrl = `http://127.0.0.1:${ports[0]}/mcp`;
  fake = await startGitHubAppFake({
    oauth: {
      clientId: CLIENT.id,
      clientSecret: CLIENT.secret,
      callbackUrls: [`http://127.0.0.1:${ports[0]}/connect/gatehouse-github/callback`],
      users: ['alice'],
    },
  });
  const env = (port: number) =>
    personServerEnv(
      { port, publicUrl, keys: { alice: KEY }, scopes: ['github:read'], logins: 'ci-alice=alice' },
      {
        GATEHOUSE_REDIS_URL: redis.url,
        GATEHOUSE_VAULT_KEYS: `k1 ${VAULT_KEY}`,
        GITHUB_OAUTH_CLIENT_ID: CLIENT.id,
        GITHUB_OAUTH_CLIENT_SECRET: CLIENT.secret,
        GITHUB_API_URL: fake.url,
        GITHUB_WEB_URL: fake.rootUrl,
        GITHUB_REPOS: 'acme/api',
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

const listOn = (replica: ServerProcess) =>
  callWithKey(replica.url!, KEY, 'github_list_issues', { repo: 'acme/api' });

it('links on one replica, serves on both, and refreshes once when both find the token expired', async () => {
  const asked = await listOn(replicas[1]!);
  const link = connectLink(asked);
  expect(link).toBeDefined();
  const browser = new TestBrowser();
  await browser.go(`${fake.rootUrl}/login?login=alice`);
  expect((await browser.go(link!)).text).toContain('Linked as alice');
  for (const replica of replicas) expect((await listOn(replica)).isError).toBeFalsy();

  // Redis holds sealed records under hashed keys: no token, no principal, no login.
  const peek = new Redis(redis.url);
  try {
    const keys = await peek.keys('*');
    // DUMP: every key's value as Redis serialises it, whatever its type.
    const values = await Promise.all(keys.map((k) => peek.dumpBuffer(k)));
    const stored = [...keys, ...values.map((v) => v?.toString('latin1') ?? '')].join('\n');
    expect(stored).not.toMatch(/gh[ur]_/);
    // The vault's own keys and records name no one (the rate limits count per principal).
    const grants = keys.filter((k) => k.startsWith('gatehouse:gatehouse-github:grant:'));
    expect(grants.length).toBeGreaterThan(0);
    const sealed = await Promise.all(grants.map((k) => peek.get(k)));
    expect([...grants, ...sealed].join('\n')).not.toMatch(/alice/);
  } finally {
    peek.disconnect();
  }

  const refreshes = () => fake.oauth!.issued.filter((g) => g.grant === 'refresh_token').length;
  const before = refreshes();
  fake.oauth!.advance(9 * 3600); // GitHub now says the eight-hour token expired
  const answers = await Promise.all([0, 1, 0, 1, 0, 1].map((i) => listOn(replicas[i]!)));
  for (const answer of answers) expect(answer.isError, text(answer)).toBeFalsy();
  expect(refreshes()).toBe(before + 1);
});
