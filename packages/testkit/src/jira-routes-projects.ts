import { CATEGORY, TRANSITIONS } from './jira-site.js';
import type { JiraRoutes } from './jira-site.js';

/** What a project offers: its issue types, their create fields, and its statuses. */
export function projectRoutes(api: JiraRoutes): void {
  const { site, route, send, error, pageOf } = api;
  const { world, canBrowse } = site;
  route(
    'GET',
    '/rest/api/3/issue/createmeta/{projectIdOrKey}/issuetypes',
    ({ res, meta, params, url }) => {
      const p = world.projects.find((x) => x.key === params[0] || x.id === params[0]);
      if (p === undefined || !canBrowse(p.key))
        return error(res, meta, 404, 'No project could be found with key.');
      const { startAt, maxResults } = pageOf(url);
      send(res, meta, 200, {
        startAt,
        maxResults,
        total: p.issueTypes.length,
        issueTypes: p.issueTypes.slice(startAt, startAt + maxResults).map((t) => ({
          self: `${site.base}/rest/api/3/issuetype/${t.id}`,
          id: t.id,
          name: t.name,
          subtask: t.subtask === true,
          description: '',
        })),
      });
    },
  );

  route(
    'GET',
    '/rest/api/3/issue/createmeta/{projectIdOrKey}/issuetypes/{issueTypeId}',
    ({ res, meta, params, url }) => {
      const p = world.projects.find((x) => x.key === params[0] || x.id === params[0]);
      const t = p?.issueTypes.find((x) => x.id === params[1]);
      if (p === undefined || t === undefined || !canBrowse(p.key))
        return error(res, meta, 404, 'Issue type not found.');
      const field = (
        fieldId: string,
        name: string,
        required: boolean,
        schema: Record<string, unknown>,
        allowedValues?: string[],
      ) => ({
        fieldId,
        key: fieldId,
        name,
        required,
        hasDefaultValue: false,
        operations: ['set'],
        schema,
        ...(allowedValues === undefined
          ? {}
          : {
              allowedValues: allowedValues.map((v, n) => ({
                id: String(n + 1),
                name: v,
                self: `${site.base}/rest/api/3/priority/${n + 1}`,
              })),
            }),
      });
      const extra = new Set(p.required?.[t.name] ?? []);
      const fields = [
        field('summary', 'Summary', true, { type: 'string', system: 'summary' }),
        field('issuetype', 'Issue Type', true, { type: 'issuetype', system: 'issuetype' }),
        field('project', 'Project', true, { type: 'project', system: 'project' }),
        field('description', 'Description', extra.has('description'), {
          type: 'string',
          system: 'description',
        }),
        field(
          'priority',
          'Priority',
          extra.has('priority'),
          { type: 'priority', system: 'priority' },
          ['Highest', 'High', 'Medium', 'Low', 'Lowest'],
        ),
        field('labels', 'Labels', extra.has('labels'), {
          type: 'array',
          items: 'string',
          system: 'labels',
        }),
        field('assignee', 'Assignee', extra.has('assignee'), { type: 'user', system: 'assignee' }),
        // A select list's options come as `value`, not `name`: allowedValues of an option field in
        // REST v3 "Get create field metadata for a project and issue type id"
        // (developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/).
        ...(p.customFields ?? []).map((c) =>
          c.options === undefined
            ? field(c.id, c.name, c.required === true, { type: 'string', custom: 'textfield' })
            : {
                ...field(c.id, c.name, c.required === true, { type: 'option', custom: 'select' }),
                allowedValues: c.options.map((value, n) => ({
                  self: `${site.base}/rest/api/3/customFieldOption/${n + 1}`,
                  id: String(n + 1),
                  value,
                })),
              },
        ),
      ];
      const { startAt, maxResults } = pageOf(url);
      send(res, meta, 200, {
        startAt,
        maxResults,
        total: fields.length,
        fields: fields.slice(startAt, startAt + maxResults),
      });
    },
  );

  route('GET', '/rest/api/3/project/{projectIdOrKey}/statuses', ({ res, meta, params }) => {
    const p = world.projects.find((x) => x.key === params[0] || x.id === params[0]);
    if (p === undefined || !canBrowse(p.key))
      return error(res, meta, 404, 'No project could be found.');
    const statuses = TRANSITIONS.map((t) => ({
      self: `${site.base}/rest/api/3/status/${t.id}`,
      id: t.id,
      name: t.to,
      description: '',
      statusCategory: {
        self: `${site.base}/rest/api/3/statuscategory/1`,
        ...CATEGORY[t.category],
        name: t.category,
      },
    }));
    send(
      res,
      meta,
      200,
      p.issueTypes.map((t) => ({
        self: `${site.base}/rest/api/3/issuetype/${t.id}`,
        id: t.id,
        name: t.name,
        subtask: t.subtask === true,
        statuses,
      })),
    );
  });
}
