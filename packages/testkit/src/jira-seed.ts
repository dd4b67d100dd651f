import type { Adf, JiraWorld } from './jira-site.js';

/** A small Jira site: two projects the server may use, one it may not, a reserved-word key. */
export function jiraSeed(): JiraWorld {
  const doc = (text: string): Adf => ({
    type: 'doc',
    version: 1,
    content: [{ type: 'paragraph', content: [{ type: 'text', text }] }],
  });
  const types = [
    { id: '10001', name: 'Bug' },
    { id: '10002', name: 'Task' },
    { id: '10003', name: 'Sub-task', subtask: true },
  ];
  const at = (day: number) =>
    new Date(Date.UTC(2026, 10, day, 9)).toISOString().replace('Z', '+0000');
  const world: JiraWorld = {
    users: [
      { accountId: '557058:alice', displayName: 'Alice Adams', emailAddress: 'alice@acme.example' },
      { accountId: '557058:bob', displayName: 'Bob Brown', emailAddress: 'bob@acme.example' },
      { accountId: '557058:bot', displayName: 'Gatehouse Bot', emailAddress: 'bot@acme.example' },
      {
        accountId: '557058:carol',
        displayName: 'Carol Confidential',
        emailAddress: 'carol@acme.example',
        projects: ['HR'],
      },
    ],
    projects: [
      { id: '10000', key: 'OPS', name: 'Operations', issueTypes: types },
      { id: '10010', key: 'WEB', name: 'Website', issueTypes: types },
      { id: '10020', key: 'HR', name: 'People (confidential)', issueTypes: types },
      { id: '10030', key: 'AND', name: 'A reserved word', issueTypes: types },
    ],
    issues: [
      {
        id: '1',
        key: 'OPS-1',
        summary: 'Database failover drill',
        description: doc('Run the **drill** on Friday.'),
        status: 'To Do',
        statusCategory: 'To Do',
        issuetype: 'Task',
        priority: 'Medium',
        labels: ['drill'],
        assignee: '557058:alice',
        reporter: '557058:bob',
        created: at(1),
        updated: at(5),
        comments: [
          { id: '100', author: '557058:bob', body: doc('Scheduled for 14:00.'), created: at(2) },
        ],
      },
      {
        id: '2',
        key: 'OPS-2',
        summary: 'Disk full on db-7',
        description: doc('Alerts since 03:00'),
        status: 'In Progress',
        statusCategory: 'In Progress',
        issuetype: 'Bug',
        priority: 'High',
        labels: ['incident', 'db'],
        assignee: '557058:bot',
        reporter: '557058:alice',
        created: at(3),
        updated: at(6),
        comments: [],
      },
      {
        id: '3',
        key: 'WEB-1',
        summary: 'Login page typo',
        description: null,
        status: 'Done',
        statusCategory: 'Done',
        issuetype: 'Bug',
        priority: 'Low',
        labels: [],
        assignee: null,
        reporter: '557058:alice',
        created: at(4),
        updated: at(4),
        comments: [],
      },
      {
        id: '4',
        key: 'HR-1',
        summary: 'Salary review (confidential)',
        description: doc('Numbers inside'),
        status: 'To Do',
        statusCategory: 'To Do',
        issuetype: 'Task',
        priority: 'High',
        labels: ['confidential'],
        assignee: '557058:alice',
        reporter: '557058:alice',
        created: at(2),
        updated: at(2),
        comments: [],
      },
      {
        id: '5',
        key: 'AND-1',
        summary: 'Reserved-word project key',
        description: null,
        status: 'To Do',
        statusCategory: 'To Do',
        issuetype: 'Task',
        priority: 'Low',
        labels: [],
        assignee: null,
        reporter: '557058:bob',
        created: at(1),
        updated: at(1),
        comments: [],
      },
    ],
  };
  // OPS-1 and OPS-2 are in the current sprint; OPS-1 is planned for release 2026.12.
  Object.assign(
    world.issues.find((x) => x.key === 'OPS-1')!,
    {
      sprint: 'OPS Sprint 48',
      fixVersions: ['2026.12'],
    },
  );
  world.issues.find((x) => x.key === 'OPS-2')!.sprint = 'OPS Sprint 48';
  world.sprints = [
    { name: 'OPS Sprint 47', state: 'closed' },
    { name: 'OPS Sprint 48', state: 'active' },
    { name: 'OPS Sprint 49', state: 'future' },
  ];
  world.versions = [
    { project: 'OPS', name: '2026.11', released: true },
    { project: 'OPS', name: '2026.12', released: false },
    { project: 'HR', name: 'HR-2027', released: false },
  ];
  // OPS-2 blocks OPS-1 and relates to HR-1 (a project the servers under test may not see);
  // OPS-3 is a sub-task of OPS-1.
  world.issues.find((x) => x.key === 'OPS-2')!.links = [
    { type: 'Blocks', key: 'OPS-1' },
    { type: 'Relates', key: 'HR-1' },
  ];
  world.issues.push({
    id: '6',
    key: 'OPS-3',
    summary: 'Check replica lag',
    description: null,
    status: 'To Do',
    statusCategory: 'To Do',
    issuetype: 'Sub-task',
    priority: 'Medium',
    labels: [],
    assignee: null,
    reporter: '557058:bob',
    created: at(2),
    updated: at(2),
    comments: [],
    parent: 'OPS-1',
  });
  return world;
}
