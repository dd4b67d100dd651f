// Acting as each person (ADR 0026) against acting as the service: the GitHub server over
// stateless HTTP with API-key auth, the same warm call (github_get_issue) on two processes of the
// same build — one in user mode with a linked person (the grant opened from the vault, its
// client and caches found by who asks), one with the service token — against one GitHub fake.
// Their calls interleave one by one so drift hits both alike.
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
import { BENCH_ENV, binFlags, median } from './servers.mjs';
import { quantile } from './stats.mjs';

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const CALLS = Number(process.env.BENCH_CALLS ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
const BIN = here('../servers/github/dist/index.js');
const KEY = 'bench-identity-api-key-0123456789abcdef';
const TOKEN =
  'github_pat_11BENCH0000000000000000000000000000000000000000000000000000000000000000000';
const CLIENT = { clientId: 'Iv23liBench', clientSecret: randomBytes(16).toString('hex') };

const userPort = await freePort();
const fake = await startGitHubAppFake({
  oauth: {
    ...CLIENT,
    callbackUrls: [`http://127.0.0.1:${userPort}/connect/gatehouse-github/callback`],
    users: ['alice'],
  },
  repos: githubSeed(),
  tokens: { [TOKEN]: { login: 'octo', repos: '*' } },
});
const dir = mkdtempSync(join(tmpdir(), 'bench-identity-'));
const keysFile = join(dir, 'vault.keys');
writeFileSync(keysFile, `k1 ${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });

/** Both servers' shared settings: the same key, audit to a file, the same fake. */
const common = {
  PATH: process.env.PATH,
  GATEHOUSE_TRANSPORT: 'http',
  GATEHOUSE_HOST: '127.0.0.1',
  GATEHOUSE_AUTH: 'api_key',
  GATEHOUSE_API_KEYS: JSON.stringify([
    {
      id: 'bench',
      sha256: createHash('sha256').update(KEY).digest('hex'),
      principal: 'ci-alice',
      scopes: ['github:read'],
    },
  ]),
  GATEHOUSE_LOG_LEVEL: 'info', // 'server started' carries the URL
  GITHUB_API_URL: fake.url,
  GITHUB_REPOS: 'acme/api',
  ...BENCH_ENV,
};

/** Starts a server process; resolves with its URL and the child. */
function start(env) {
  const child = spawn(process.execPath, [...binFlags('github'), BIN], {
    env: { ...common, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the server did not start')), 15_000);
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

const service = await start({
  GATEHOUSE_PORT: '0',
  GITHUB_TOKEN: TOKEN,
  GATEHOUSE_AUDIT_SINKS: 'file',
  GATEHOUSE_AUDIT_FILE: join(dir, 'service-audit.jsonl'),
});
const user = await start({
  GATEHOUSE_PORT: String(userPort),
  GATEHOUSE_PUBLIC_URL: `http://127.0.0.1:${userPort}/mcp`,
  GATEHOUSE_IDENTITY: 'user',
  GATEHOUSE_VAULT_KEYS_FILE: keysFile,
  GATEHOUSE_GRANTS_FILE: join(dir, 'grants.json'),
  GATEHOUSE_IDENTITY_LOGINS: 'ci-alice=alice',
  GITHUB_OAUTH_CLIENT_ID: CLIENT.clientId,
  GITHUB_OAUTH_CLIENT_SECRET: CLIENT.clientSecret,
  GITHUB_WEB_URL: fake.rootUrl,
  GATEHOUSE_AUDIT_SINKS: 'file',
  GATEHOUSE_AUDIT_FILE: join(dir, 'user-audit.jsonl'),
});

const headers = { authorization: `Bearer ${KEY}` };
const GET = { name: 'github_get_issue', arguments: { repo: 'acme/api', number: 1 } };

// Alice links her account once, as a person would: the answer's link, her browser.
{
  const { client, close } = await connectHttp(user.url, { era: 'legacy', headers });
  const asked = await client.callTool(GET);
  const link = /open (\S+) in your browser/.exec(asked.content?.[0]?.text ?? '')?.[1];
  const browser = new TestBrowser();
  await browser.go(`${fake.rootUrl}/login?login=alice`);
  const linked = await browser.go(link);
  if (!linked.text.includes('Linked as alice')) throw new Error('linking failed');
  await close();
}

/** One call's latency (ms); an error fails the benchmark. */
async function timedCall(client) {
  const started = performance.now();
  const result = await client.callTool(GET);
  const ms = performance.now() - started;
  if (result.isError) throw new Error(result.content?.[0]?.text);
  return ms;
}

// The two servers' calls interleave one by one, the first of each pair alternating: drift on a
// shared machine (seconds long) hits both alike, however few the calls.
const clients = {
  user: await connectHttp(user.url, { era: 'legacy', headers }),
  service: await connectHttp(service.url, { era: 'legacy', headers }),
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
user.child.kill('SIGTERM');
service.child.kill('SIGTERM');
await fake.close();

const ms = (values, q) => Number(quantile(values, q).toFixed(3));
const row = {
  what: 'GitHub github_get_issue over HTTP, user mode (a linked person) vs service mode',
  user_median_ms: ms(samples.user, 0.5),
  service_median_ms: ms(samples.service, 0.5),
  'ratio user/service (median)': Number(
    (median(samples.user) / median(samples.service)).toFixed(3),
  ),
  user_p90_ms: ms(samples.user, 0.9),
  service_p90_ms: ms(samples.service, 0.9),
  samples: samples.user.length,
};
console.table([row]);
mkdirSync(here('./results'), { recursive: true });
writeFileSync(
  here('./results/identity.json'),
  `${JSON.stringify({ date: new Date().toISOString(), node: process.version, rows: [row], samples }, null, 2)}\n`,
);
