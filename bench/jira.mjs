// The Jira server against @aashari/mcp-server-atlassian-jira@3.3.0 (the reference, over stdio),
// both pointed at the same loopback fake of Jira Cloud (see bench/README.md).
//   node bench/jira.mjs   (after a build; `npm run bench -- jira` builds first)
// Knobs: BENCH_COLD (spawns per server, default 10), BENCH_CALLS (calls per tool, default 200).
import { fileURLToPath } from 'node:url';
import { connectStdio } from '@gatehouse/testkit';
import { jiraSeed, startJiraFake } from '@gatehouse/testkit/jira';
import { BENCH_ENV, bytesLine, compareOverStdio, reportComparison } from './servers.mjs';

const COLD = Number(process.env.BENCH_COLD ?? 10);
const CALLS = Number(process.env.BENCH_CALLS ?? 200);
const ISSUES = 30;
const EMAIL = 'bot@acme.example';
const TOKEN = 'ATATT3xFfGF0BENCHTOKENbenchtoken000000000000000';
const OURS = fileURLToPath(new URL('../servers/jira/dist/index.js', import.meta.url));
const REDIRECT = fileURLToPath(new URL('./jira-redirect.mjs', import.meta.url));
const REFERENCE = fileURLToPath(
  import.meta.resolve('@aashari/mcp-server-atlassian-jira/dist/index.js'),
);

// The seed site plus 30 more OPS issues with descriptions, labels and people.
const world = jiraSeed();
const doc = (text) => ({
  type: 'doc',
  version: 1,
  content: [{ type: 'paragraph', content: [{ type: 'text', text }] }],
});
for (let n = 0; n < ISSUES; n++) {
  world.issues.push({
    id: String(500 + n),
    key: `OPS-${100 + n}`,
    summary: `Alert ${n}: latency above threshold on api-${n % 7}`,
    description: doc(
      `The p99 latency of api-${n % 7} exceeded 800 ms for ${n + 5} minutes; see the dashboard and the runbook.`,
    ),
    status: n % 3 === 0 ? 'In Progress' : 'To Do',
    statusCategory: n % 3 === 0 ? 'In Progress' : 'To Do',
    issuetype: n % 2 === 0 ? 'Bug' : 'Task',
    priority: ['High', 'Medium', 'Low'][n % 3],
    labels: ['alert', `api-${n % 7}`],
    assignee: n % 4 === 0 ? null : '557058:alice',
    reporter: '557058:bob',
    created: new Date(Date.UTC(2026, 10, 1 + (n % 25), 8)).toISOString().replace('Z', '+0000'),
    updated: new Date(Date.UTC(2026, 10, 2 + (n % 25), 8)).toISOString().replace('Z', '+0000'),
    comments: [],
  });
}
const fake = await startJiraFake({
  world,
  credentials: [{ email: EMAIL, token: TOKEN, accountId: '557058:bot' }],
});
const jql = 'project = OPS AND labels = alert ORDER BY updated DESC';

const servers = {
  gatehouse: {
    connect: () =>
      connectStdio(process.execPath, [OURS], {
        env: {
          PATH: process.env.PATH ?? '',
          JIRA_URL: fake.url,
          JIRA_PROJECTS: 'OPS,WEB',
          JIRA_EMAIL: EMAIL,
          JIRA_API_TOKEN: TOKEN,
          ...BENCH_ENV,
        },
        stderr: 'ignore',
      }),
    get: (c) => c.callTool({ name: 'jira_get_issue', arguments: { key: 'OPS-1', comments: 0 } }),
    search: (c) =>
      c.callTool({
        name: 'jira_search_issues',
        arguments: { project: 'OPS', labels: ['alert'], limit: ISSUES },
      }),
  },
  reference: {
    connect: () =>
      connectStdio(process.execPath, ['--import', REDIRECT, REFERENCE], {
        env: {
          PATH: process.env.PATH ?? '',
          ATLASSIAN_SITE_NAME: 'acme',
          ATLASSIAN_USER_EMAIL: EMAIL,
          ATLASSIAN_API_TOKEN: TOKEN,
          GATEHOUSE_BENCH_JIRA_URL: fake.url,
        },
        stderr: 'ignore',
      }),
    get: (c) => c.callTool({ name: 'jira_get', arguments: { path: '/rest/api/3/issue/OPS-1' } }),
    search: (c) =>
      c.callTool({
        name: 'jira_get',
        arguments: {
          path: '/rest/api/3/search/jql',
          queryParams: { jql, maxResults: String(ISSUES), fields: '*all' },
        },
      }),
  },
};
const result = await compareOverStdio({
  servers,
  first: 'get',
  calls: ['get', 'search'],
  cold: COLD,
  warm: CALLS,
});
await fake.close();

reportComparison('jira', 'Jira server benchmark', result, {
  first: 'get-issue',
  labels: { get: 'get issue', search: `search ${ISSUES} issues` },
  extra: [bytesLine(result.sizes, 'search', `${ISSUES} issues`)],
});
