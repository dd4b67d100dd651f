// The GitHub server against @modelcontextprotocol/server-github@2025.4.8 (the reference, over
// stdio), both pointed at the same loopback fake of the GitHub API (see bench/README.md).
//   node bench/github.mjs   (after a build; `npm run bench -- github` builds first)
// Knobs: BENCH_COLD (spawns per server, default 10), BENCH_CALLS (calls per tool, default 200).
import { fileURLToPath } from 'node:url';
import { connectStdio } from '@gatehouse/testkit';
import { githubSeed, startGitHubFake } from '@gatehouse/testkit/github';
import {
  BENCH_ENV,
  bytesLine,
  compareOverStdio,
  referenceBin,
  reportComparison,
} from './servers.mjs';

const COLD = Number(process.env.BENCH_COLD ?? 10);
const CALLS = Number(process.env.BENCH_CALLS ?? 200);
const TOKEN =
  'github_pat_11BENCH0000000000000000000000000000000000000000000000000000000000000000000';
const OURS = fileURLToPath(new URL('../servers/github/dist/index.js', import.meta.url));
const REDIRECT = fileURLToPath(new URL('./github-redirect.mjs', import.meta.url));
const REFERENCE = referenceBin('@modelcontextprotocol/server-github', 'mcp-server-github');

const fake = await startGitHubFake({
  repos: githubSeed(),
  tokens: { [TOKEN]: { login: 'octo', repos: '*' } },
});
const servers = {
  gatehouse: {
    connect: () =>
      connectStdio(process.execPath, [OURS], {
        env: {
          PATH: process.env.PATH ?? '',
          GITHUB_TOKEN: TOKEN,
          GITHUB_API_URL: fake.url,
          GITHUB_REPOS: 'acme/api,acme/web',
          ...BENCH_ENV,
        },
        stderr: 'ignore',
      }),
    get: (c) =>
      c.callTool({ name: 'github_get_issue', arguments: { repo: 'acme/api', number: 1 } }),
    list: (c) =>
      c.callTool({ name: 'github_list_issues', arguments: { repo: 'acme/api', per_page: 30 } }),
  },
  reference: {
    connect: () =>
      connectStdio(process.execPath, ['--import', REDIRECT, REFERENCE], {
        env: {
          PATH: process.env.PATH ?? '',
          GITHUB_PERSONAL_ACCESS_TOKEN: TOKEN,
          GATEHOUSE_BENCH_GITHUB_URL: fake.url,
        },
        stderr: 'ignore',
      }),
    get: (c) =>
      c.callTool({ name: 'get_issue', arguments: { owner: 'acme', repo: 'api', issue_number: 1 } }),
    list: (c) =>
      c.callTool({ name: 'list_issues', arguments: { owner: 'acme', repo: 'api', per_page: 30 } }),
  },
};
const result = await compareOverStdio({
  servers,
  first: 'get',
  calls: ['get', 'list'],
  cold: COLD,
  warm: CALLS,
});
await fake.close();

reportComparison('github', 'GitHub server benchmark', result, {
  first: 'get-issue',
  labels: { get: 'get issue', list: 'list issues' },
  extra: [bytesLine(result.sizes, 'list', `list issues`)],
});
