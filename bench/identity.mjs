// Acting as each person (ADR 0026) against acting as the service, per SaaS server: the server
// over stateless HTTP with API-key auth, the same warm read on two processes of the same build —
// one in user mode with a linked person (the grant opened from the vault, its client and caches
// found by who asks), one with the service credential — against one vendor fake. Their calls
// interleave one by one so drift hits both alike.
//   node bench/identity.mjs   (after a build; `npm run bench -- identity` builds first)
// Knobs: BENCH_CALLS × BENCH_ROUNDS calls per server (default 200 × 8).
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { TestBrowser, connectHttp, freePort } from '@gatehouse/testkit';
import { githubSeed, startGitHubAppFake } from '@gatehouse/testkit/github';
import { jiraSeed, startJiraFake } from '@gatehouse/testkit/jira';
import { slackSeed, startSlackFake } from '@gatehouse/testkit/slack';
import { BENCH_ENV, binFlags, median } from './servers.mjs';
import { quantile } from './stats.mjs';

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const CALLS = Number(process.env.BENCH_CALLS ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
const KEY = 'bench-identity-api-key-0123456789abcdef';
const CLIENT_SECRET = randomBytes(16).toString('hex');
const dir = mkdtempSync(join(tmpdir(), 'bench-identity-'));
const keysFile = join(dir, 'vault.keys');
writeFileSync(keysFile, `k1 ${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });

/**
 * Each vendor: its fake (its callback on the user-mode server's port), the settings of both
 * servers and of each mode, the call measured, and how a browser signs in to the vendor.
 */
const VENDORS = {
  github: {
    what: 'GitHub github_get_issue',
    scope: 'github',
    async fake(callback) {
      const token =
        'github_pat_11BENCH0000000000000000000000000000000000000000000000000000000000000000000';
      const fake = await startGitHubAppFake({
        oauth: {
          clientId: 'Iv23liBench',
          clientSecret: CLIENT_SECRET,
          callbackUrls: [callback],
          users: ['alice'],
        },
        repos: githubSeed(),
        tokens: { [token]: { login: 'octo', repos: '*' } },
      });
      return {
        fake,
        common: { GITHUB_API_URL: fake.url, GITHUB_REPOS: 'acme/api' },
        service: { GITHUB_TOKEN: token },
        user: {
          GATEHOUSE_IDENTITY_LOGINS: 'ci-alice=alice',
          GITHUB_OAUTH_CLIENT_ID: 'Iv23liBench',
          GITHUB_OAUTH_CLIENT_SECRET: CLIENT_SECRET,
          GITHUB_WEB_URL: fake.rootUrl,
        },
        signIn: `${fake.rootUrl}/login?login=alice`,
      };
    },
    call: { name: 'github_get_issue', arguments: { repo: 'acme/api', number: 1 } },
  },
  slack: {
    what: 'Slack slack_read_channel',
    scope: 'slack',
    async fake(callback) {
      const token = 'xoxb-1111111111-2222222222222-BENCHbenchBENCH000000';
      const fake = await startSlackFake({
        world: slackSeed(),
        tokens: { [token]: { scopes: ['channels:read', 'channels:history', 'users:read'] } },
        oauth: {
          clientId: '1111111111.2222222222',
          clientSecret: CLIENT_SECRET,
          callbackUrls: [callback],
          users: ['U0ALICE001'],
        },
      });
      return {
        fake,
        common: { SLACK_API_URL: fake.url, SLACK_READ_CHANNELS: '#general' },
        service: { SLACK_BOT_TOKEN: token },
        user: {
          GATEHOUSE_IDENTITY_LOGINS: 'ci-alice=U0ALICE001',
          SLACK_OAUTH_CLIENT_ID: '1111111111.2222222222',
          SLACK_OAUTH_CLIENT_SECRET: CLIENT_SECRET,
          SLACK_TEAM_ID: 'T0ACME0001',
          SLACK_WEB_URL: fake.rootUrl,
        },
        signIn: `${fake.rootUrl}/signin?user=U0ALICE001`,
      };
    },
    call: { name: 'slack_read_channel', arguments: { channel: '#general', limit: 10 } },
  },
  jira: {
    what: 'Jira jira_get_issue',
    scope: 'jira',
    async fake(callback) {
      const [email, token] = ['bot@acme.example', 'ATATT3xFfGF0BENCHbenchBENCHbench000000000000'];
      const fake = await startJiraFake({
        world: jiraSeed(),
        credentials: [{ email, token, accountId: '557058:bot' }],
        oauth: {
          clientId: 'atlClientBench0001',
          clientSecret: CLIENT_SECRET,
          callbackUrls: [callback],
          users: ['557058:alice'],
        },
      });
      return {
        fake,
        common: { JIRA_URL: fake.url, JIRA_PROJECTS: 'OPS' },
        service: { JIRA_EMAIL: email, JIRA_API_TOKEN: token },
        user: {
          GATEHOUSE_IDENTITY_LOGINS: 'ci-alice=557058:alice',
          JIRA_OAUTH_CLIENT_ID: 'atlClientBench0001',
          JIRA_OAUTH_CLIENT_SECRET: CLIENT_SECRET,
          JIRA_AUTH_URL: fake.rootUrl,
          JIRA_GATEWAY_URL: fake.rootUrl,
        },
        signIn: `${fake.rootUrl}/login?user=557058:alice`,
      };
    },
    call: { name: 'jira_get_issue', arguments: { key: 'OPS-1' } },
  },
};

/** Starts a server process; resolves with its URL and the child. */
function start(id, env) {
  const child = spawn(process.execPath, [...binFlags(id), here(`../servers/${id}/dist/index.js`)], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the ${id} server did not start`)), 15_000);
    createInterface({ input: child.stderr }).on('line', (line) => {
      try {
        const parsed = JSON.parse(line);
        if (parsed.msg !== 'server started') return;
        clearTimeout(timer);
        resolve({ url: parsed.url, child });
      } catch {
        // not a log line
      }
    });
  });
}

/** One vendor's run: both servers, Alice linked once, the calls interleaved. */
async function measure(id) {
  const vendor = VENDORS[id];
  const userPort = await freePort();
  const { fake, common, service, user, signIn } = await vendor.fake(
    `http://127.0.0.1:${userPort}/connect/gatehouse-${id}/callback`,
  );
  const shared = {
    PATH: process.env.PATH,
    GATEHOUSE_TRANSPORT: 'http',
    GATEHOUSE_HOST: '127.0.0.1',
    GATEHOUSE_AUTH: 'api_key',
    GATEHOUSE_API_KEYS: JSON.stringify([
      {
        id: 'bench',
        sha256: createHash('sha256').update(KEY).digest('hex'),
        principal: 'ci-alice',
        scopes: [`${vendor.scope}:read`],
      },
    ]),
    GATEHOUSE_LOG_LEVEL: 'info', // 'server started' carries the URL
    GATEHOUSE_AUDIT_SINKS: 'file',
    ...BENCH_ENV,
    ...common,
  };
  const servers = {
    service: await start(id, {
      ...shared,
      ...service,
      GATEHOUSE_PORT: '0',
      GATEHOUSE_AUDIT_FILE: join(dir, `${id}-service-audit.jsonl`),
    }),
    user: await start(id, {
      ...shared,
      ...user,
      GATEHOUSE_PORT: String(userPort),
      GATEHOUSE_PUBLIC_URL: `http://127.0.0.1:${userPort}/mcp`,
      GATEHOUSE_IDENTITY: 'user',
      GATEHOUSE_VAULT_KEYS_FILE: keysFile,
      GATEHOUSE_GRANTS_FILE: join(dir, `${id}-grants.json`),
      GATEHOUSE_AUDIT_FILE: join(dir, `${id}-user-audit.jsonl`),
    }),
  };
  const headers = { authorization: `Bearer ${KEY}` };

  // Alice links her account once, as a person would: the answer's link, her browser.
  {
    const { client, close } = await connectHttp(servers.user.url, { era: 'legacy', headers });
    const asked = await client.callTool(vendor.call);
    const link = /open (\S+) in your browser/.exec(asked.content?.[0]?.text ?? '')?.[1];
    const browser = new TestBrowser();
    await browser.go(signIn);
    const linked = await browser.go(link);
    if (!linked.text.includes('Linked as alice'))
      throw new Error(`${id}: linking failed: ${linked.text}`);
    await close();
  }

  /** One call's latency (ms); an error fails the benchmark. */
  async function timedCall(client) {
    const started = performance.now();
    const result = await client.callTool(vendor.call);
    const ms = performance.now() - started;
    if (result.isError) throw new Error(`${id}: ${result.content?.[0]?.text}`);
    return ms;
  }

  // The two servers' calls interleave one by one, the first of each pair alternating: drift on
  // a shared machine (seconds long) hits both alike, however few the calls.
  const clients = {
    user: await connectHttp(servers.user.url, { era: 'legacy', headers }),
    service: await connectHttp(servers.service.url, { era: 'legacy', headers }),
  };
  const samples = { user: [], service: [] };
  for (let i = 0; i < 50; i++) {
    await timedCall(clients.user.client); // warm up both
    await timedCall(clients.service.client);
  }
  for (let i = 0; i < CALLS * ROUNDS; i++) {
    for (const name of i % 2 ? ['service', 'user'] : ['user', 'service']) {
      samples[name].push(await timedCall(clients[name].client));
    }
  }
  await Promise.all(Object.values(clients).map((c) => c.close()));
  for (const server of Object.values(servers)) server.child.kill('SIGTERM');
  await fake.close();
  return samples;
}

const ms = (values, q) => Number(quantile(values, q).toFixed(3));
const rows = [];
const samples = {};
for (const id of Object.keys(VENDORS)) {
  const measured = (samples[id] = await measure(id));
  rows.push({
    what: `${VENDORS[id].what} over HTTP, user mode (a linked person) vs service mode`,
    user_median_ms: ms(measured.user, 0.5),
    service_median_ms: ms(measured.service, 0.5),
    'ratio user/service (median)': Number(
      (median(measured.user) / median(measured.service)).toFixed(3),
    ),
    user_p90_ms: ms(measured.user, 0.9),
    service_p90_ms: ms(measured.service, 0.9),
    samples: measured.user.length,
  });
}
console.table(rows);
mkdirSync(here('./results'), { recursive: true });
writeFileSync(
  here('./results/identity.json'),
  `${JSON.stringify({ date: new Date().toISOString(), node: process.version, rows, samples }, null, 2)}\n`,
);
