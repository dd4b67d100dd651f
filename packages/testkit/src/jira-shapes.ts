import type { FakeJiraComment, FakeJiraIssue } from './jira-site.js';
import { CATEGORY } from './jira-site.js';
import type { JiraSite } from './jira-site.js';

/**
 * The Jira fake's answers as Jira Cloud REST v3 shapes them (jira.js checks every one against
 * its schemas, generated from Jira's specification): users, an issue's fields, an issue.
 */
export function jiraShapes(site: JiraSite) {
  const { world, projectOf, findIssue } = site;
  const user = (accountId: string | null) => {
    if (accountId === null) return null;
    const u = world.users.find((x) => x.accountId === accountId);
    return {
      self: `${site.base}/rest/api/3/user?accountId=${accountId}`,
      accountId,
      displayName: u?.displayName ?? accountId,
      active: true,
      accountType: 'atlassian',
      timeZone: 'Europe/Berlin',
    };
  };
  const issueFields = (i: FakeJiraIssue) => {
    const p = projectOf(i);
    const type = p.issueTypes.find((t) => t.name === i.issuetype) ?? p.issueTypes[0]!;
    return {
      summary: i.summary,
      description: i.description,
      status: {
        self: `${site.base}/rest/api/3/status/1`,
        id: String(Object.keys(CATEGORY).indexOf(i.statusCategory) + 1),
        name: i.status,
        statusCategory: {
          self: `${site.base}/rest/api/3/statuscategory/1`,
          ...CATEGORY[i.statusCategory],
          name: i.statusCategory,
        },
      },
      issuetype: {
        self: `${site.base}/rest/api/3/issuetype/${type.id}`,
        id: type.id,
        name: type.name,
        subtask: type.subtask === true,
      },
      priority: { self: `${site.base}/rest/api/3/priority/3`, id: '3', name: i.priority },
      labels: i.labels,
      assignee: user(i.assignee),
      reporter: user(i.reporter),
      project: {
        self: `${site.base}/rest/api/3/project/${p.id}`,
        id: p.id,
        key: p.key,
        name: p.name,
      },
      created: i.created,
      updated: i.updated,
      comment: { comments: [], maxResults: 0, startAt: 0, total: i.comments.length },
      issuelinks: [
        ...(i.links ?? []).map((l) => ({ l, outward: true, other: findIssue(l.key) })),
        ...world.issues.flatMap((o) =>
          (o.links ?? [])
            .filter((l) => l.key === i.key)
            .map((l) => ({ l, outward: false, other: o })),
        ),
      ]
        .filter((x) => x.other !== undefined)
        .map(({ l, outward, other }, n) => ({
          id: String(9000 + n),
          type: {
            id: l.type === 'Blocks' ? '1' : '2',
            name: l.type,
            inward: l.type === 'Blocks' ? 'is blocked by' : 'relates to',
            outward: l.type === 'Blocks' ? 'blocks' : 'relates to',
          },
          [outward ? 'outwardIssue' : 'inwardIssue']: {
            id: other!.id,
            key: other!.key,
            fields: { summary: other!.summary, status: { name: other!.status } },
          },
        })),
      subtasks: world.issues
        .filter((o) => o.parent === i.key)
        .map((o) => ({
          id: o.id,
          key: o.key,
          fields: { summary: o.summary, status: { name: o.status } },
        })),
    };
  };
  const issueObject = (
    i: FakeJiraIssue,
    fields: string[] | undefined,
    properties: string[] = [],
  ) => {
    const all = issueFields(i) as Record<string, unknown>;
    const wanted =
      fields === undefined || fields.includes('*all') || fields.length === 0
        ? Object.keys(all)
        : fields;
    const held = properties.filter((p) => i.properties?.[p] !== undefined);
    return {
      id: i.id,
      key: i.key,
      self: `${site.base}/rest/api/3/issue/${i.id}`,
      fields: Object.fromEntries(wanted.filter((f) => f in all).map((f) => [f, all[f]])),
      ...(held.length === 0
        ? {}
        : { properties: Object.fromEntries(held.map((p) => [p, i.properties![p]])) }),
    };
  };
  /** The issue's values of a JQL field, lower-cased (undefined: no such field). */
  /** A comment as the comment endpoints answer it. */
  const comment = (i: FakeJiraIssue, c: FakeJiraComment) => ({
    self: `${site.base}/rest/api/3/issue/${i.id}/comment/${c.id}`,
    id: c.id,
    author: user(c.author),
    body: c.body,
    created: c.created,
    updated: c.created,
  });
  return { user, issueFields, issueObject, comment };
}

/** The shapes {@link jiraShapes} builds. */
export type JiraShapes = ReturnType<typeof jiraShapes>;
