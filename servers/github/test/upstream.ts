import type { ServerUpstream } from '@gatehouse/testkit';
import { githubSeed, startGitHubFake } from '@gatehouse/testkit/github';

/** The GitHub fake with the seed repositories, and an issue read through it. */
export async function upstream(): Promise<ServerUpstream> {
  const token =
    'github_pat_11UPSTREAMTEST000000000000000000000000000000000000000000000000000000000000000';
  const fake = await startGitHubFake({
    repos: githubSeed(),
    tokens: { [token]: { login: 'octo', repos: ['acme/web'] } },
  });
  return {
    env: { GITHUB_TOKEN: token, GITHUB_API_URL: fake.url, GITHUB_REPOS: 'acme/api' },
    call: { name: 'github_get_issue', arguments: { repo: 'acme/api', number: 1 } },
    expect: 'acme/api#1',
    rejected: {
      variable: 'GITHUB_TOKEN',
      value: 'github_pat_11REJECTED00000000000000000000000000000000000000000000000000000000000000',
      said: 'GitHub rejected the credentials (401)',
    },
    close: () => fake.close(),
  };
}
