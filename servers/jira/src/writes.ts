import { PolicyError, ToolError } from '@gatehouse/core';
import type { ToolAnnotations } from '@gatehouse/core';
import type { CallBounds, Jira, JiraApi } from './client.js';
import type { JiraCall } from './deps.js';
import type { JiraIssue } from './format.js';
import { allowedKey, requireInScope } from './format.js';
import { createFieldsOf, issueTypesOf } from './createmeta.js';
import { quote } from './jql.js';

/** Writes to a closed system the operator configured: not destructive, not idempotent. */
export const JIRA_WRITE: ToolAnnotations = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: true,
};

/** The entity property a create or comment carries its content key in. */
export const DEDUPE_PROPERTY = 'gatehouse';

/** Pages of 100 a create's lookup reads at most: 500 creates by the account within the window. */
const LOOKUP_PAGES = 5;

/** The content key a write's entity property holds. */
const keyOf = (properties: unknown): string | undefined =>
  (properties as Record<string, { key?: unknown } | undefined> | undefined)?.[DEDUPE_PROPERTY]
    ?.key as string | undefined;

/**
 * An earlier create of the same content, by this server's account, in the dedupe window. Jira
 * Cloud makes an entity property searchable by JQL only when an app declares it (Forge
 * `jira:entityProperty`, Connect `jiraEntityProperties`; a REST client cannot:
 * developer.atlassian.com/cloud/jira/platform/jira-entity-properties/), so the search uses what
 * Jira indexes — the project, the reporter (the server's account), the creation time — and each
 * candidate's property is read back with the results (`properties`) to confirm the key; an issue
 * the journal knows (`reconcile`, its id) is shown as it is now, even before search's index has
 * it. Throws when the window holds more creates than it reads (the caller
 * says the write was not checked).
 */
export async function findCreated(
  jira: Jira,
  bounds: CallBounds,
  project: string,
  key: string,
  windowMin: number,
  reconcile: readonly number[] = [],
): Promise<string | undefined> {
  const jql = `project = ${quote(project)} AND reporter = currentUser() AND created >= ${quote(`-${windowMin}m`)} ORDER BY created DESC`;
  let token: string | undefined;
  for (let page = 0; page < LOOKUP_PAGES; page++) {
    const found = await jira.call(bounds, 'read', (api) =>
      api.issueSearch.searchAndReconsileIssuesUsingJqlPost({
        jql,
        fields: ['created'],
        properties: [DEDUPE_PROPERTY],
        maxResults: 100,
        ...(reconcile.length === 0 ? {} : { reconcileIssues: [...reconcile] }),
        ...(token === undefined ? {} : { nextPageToken: token }),
      }),
    );
    const hit = (found.issues ?? []).find((i) => keyOf(i.properties) === key);
    if (hit?.key !== undefined) return hit.key;
    if (found.isLast !== false || typeof found.nextPageToken !== 'string') return undefined;
    token = found.nextPageToken;
  }
  throw new ToolError(
    `more than ${LOOKUP_PAGES * 100} issues were created in ${project} by this server's account in the last ${windowMin} minutes`,
    { code: 'lookup_bounded' },
  );
}

/**
 * An earlier identical comment on `issue` by this server, in the dedupe window: the comments are
 * read newest first, with their properties (`expand=properties`), until one is older than the
 * window.
 */
export async function findComment(
  jira: Jira,
  bounds: CallBounds,
  issue: string,
  key: string,
  windowMin: number,
): Promise<string | undefined> {
  const since = Date.now() - windowMin * 60_000;
  for (let startAt = 0; ;) {
    const page = await jira.call(bounds, 'read', (api) =>
      api.issueComments.getComments({
        issueIdOrKey: issue,
        orderBy: '-created',
        startAt,
        maxResults: 100,
        expand: 'properties',
      }),
    );
    const comments = page.comments ?? [];
    for (const c of comments) {
      if (new Date(c.created ?? 0).getTime() < since) return undefined;
      const held = Object.fromEntries(
        (c.properties ?? []).map((p): [string, unknown] => [p.key ?? '', p.value]),
      );
      if (keyOf(held) === key) return c.id;
    }
    startAt += comments.length;
    if (comments.length === 0 || startAt >= (page.total ?? 0)) return undefined;
  }
}

/**
 * The issue a write acts on: its key inside the scope before the request, and the project Jira
 * says it is in after (a key that moved out is refused before anything is written).
 */
export async function writableIssue(
  deps: JiraCall,
  bounds: CallBounds,
  key: string,
): Promise<JiraIssue> {
  const asked = allowedKey(deps.scope, key);
  const issue = (await deps.jira.call(bounds, 'read', (api) =>
    api.issues.getIssue({ issueIdOrKey: asked, fields: ['project', 'status', 'summary'] }),
  )) as JiraIssue;
  requireInScope(deps.scope, asked, issue);
  return issue;
}

/**
 * Checks a create against the project's create metadata before anything is sent: the issue type
 * exists, every required field is given, values are among the allowed ones. Returns the type id.
 */
export async function checkCreate(
  jira: Jira,
  bounds: CallBounds,
  project: string,
  typeName: string,
  given: Record<string, unknown>,
): Promise<string> {
  const all = await issueTypesOf(jira, bounds, project);
  const type = all.find((t) => t.name?.toLowerCase() === typeName.toLowerCase());
  if (type?.id === undefined) {
    throw new ToolError(
      `${project} has no issue type "${typeName}"; use one of: ${all.map((t) => t.name).join(', ')}.`,
      {
        code: 'invalid_issue_type',
      },
    );
  }
  const fields = await createFieldsOf(jira, bounds, project, type.id);
  const automatic = new Set(['project', 'issuetype', 'summary', 'reporter']);
  const missing = fields
    .filter(
      (f) =>
        f.required === true &&
        !automatic.has(f.fieldId ?? f.key ?? '') &&
        given[f.fieldId ?? f.key ?? ''] === undefined,
    )
    .map((f) => `${f.fieldId ?? f.key} (${f.name})`);
  const problems: string[] =
    missing.length === 0 ? [] : [`missing required field(s): ${missing.join(', ')}`];
  for (const f of fields) {
    const id = f.fieldId ?? f.key ?? '';
    const value = given[id] as { name?: string } | undefined;
    if (value?.name === undefined || f.allowedValues === undefined) continue;
    const names = f.allowedValues.map((v) => v.name ?? v.value ?? '');
    if (!names.some((n) => n.toLowerCase() === value.name!.toLowerCase())) {
      problems.push(`${id} must be one of: ${names.join(', ')}`);
    }
  }
  if (problems.length > 0) {
    throw new ToolError(
      `Cannot create a ${type.name} in ${project}: ${problems.join('; ')}. Nothing was created.`,
      {
        code: 'invalid_fields',
      },
    );
  }
  return type.id;
}

/**
 * One write to Jira: never retried; a 403 (the account lacks the permission) becomes a refusal
 * the model can read, audited as denied.
 */
export function writeCall<T>(
  deps: JiraCall,
  bounds: CallBounds,
  what: string,
  fn: (api: JiraApi) => Promise<T>,
): Promise<T> {
  return deps.jira.call(bounds, 'write', fn).catch((error: unknown) => {
    if ((error as { status?: number }).status !== 403) throw error;
    throw new PolicyError(
      'jira_permission',
      `The server's Jira account may not ${what} here (Jira answered 403).`,
    );
  });
}
