import type { ServerUpstream } from '@gatehouse/testkit';
import { jiraSeed, startJiraFake } from '@gatehouse/testkit/jira';

/** The Jira fake with the seed site, and an issue read through it. */
export async function upstream(): Promise<ServerUpstream> {
  const [email, token] = ['bot@acme.example', 'ATATT3xFfGF0UPSTREAMtoken000000000000000000'];
  const fake = await startJiraFake({
    world: jiraSeed(),
    credentials: [{ email, token, accountId: '557058:bot' }],
  });
  return {
    env: { JIRA_URL: fake.url, JIRA_EMAIL: email, JIRA_API_TOKEN: token, JIRA_PROJECTS: 'OPS' },
    call: { name: 'jira_get_issue', arguments: { key: 'OPS-1' } },
    expect: 'OPS-1',
    rejected: {
      variable: 'JIRA_API_TOKEN',
      value: 'ATATT3xFfGF0REJECTEDtoken00000000000000000',
      said: 'Jira rejected the credentials (401)',
    },
    close: () => fake.close(),
  };
}
