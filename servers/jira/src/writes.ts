import { PolicyError, ToolError } from '@gatehouse/core';
import type { ToolAnnotations } from '@gatehouse/core';
import type { CallBounds, Jira, JiraApi } from './client.js';
import type { JiraDeps } from './deps.js';
import type { JiraIssue } from './format.js';
import { allowedKey, requireInScope } from './format.js';

/** Writes to a closed system the operator configured: not destructive, not idempotent. */
export const JIRA_WRITE: ToolAnnotations = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: true,
};

/** The entity property a create or comment carries its content key in. */
export const DEDUPE_PROPERTY = 'gatehouse';

/**
 * The issue a write acts on: its key inside the scope before the request, and the project Jira
 * says it is in after (a key that moved out is refused before anything is written).
 */
export async function writableIssue(
  deps: JiraDeps,
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

interface CreateField {
  fieldId?: string;
  key?: string;
  name?: string;
  required?: boolean;
  allowedValues?: Array<{ name?: string; value?: string }>;
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
  const types = await jira.call(bounds, 'read', (api) =>
    api.issues.getCreateIssueMetaIssueTypes({ projectIdOrKey: project }),
  );
  const all = types.issueTypes ?? [];
  const type = all.find((t) => t.name?.toLowerCase() === typeName.toLowerCase());
  if (type?.id === undefined) {
    throw new ToolError(
      `${project} has no issue type "${typeName}"; use one of: ${all.map((t) => t.name).join(', ')}.`,
      {
        code: 'invalid_issue_type',
      },
    );
  }
  const meta = await jira.call(bounds, 'read', (api) =>
    api.issues.getCreateIssueMetaIssueTypeId({ projectIdOrKey: project, issueTypeId: type.id! }),
  );
  const fields = (meta as { fields?: CreateField[] }).fields ?? [];
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
  deps: JiraDeps,
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
