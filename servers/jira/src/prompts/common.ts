import type { definePrompt } from '@gatehouse/core';
import type { JiraDeps } from '../deps.js';
import type { JiraIssue } from '../format.js';
import { VIEW_FIELDS, issueLine, issueView } from '../format.js';
import { scopeClause } from '../jql.js';

/** A user message of a prompt. */
export const user = (text: string) => ({
  role: 'user' as const,
  content: { type: 'text' as const, text },
});

/** Issues of the allowed projects matching a server-written condition, as lines. */
export async function lines(
  deps: JiraDeps,
  ctx: Parameters<Parameters<typeof definePrompt>[0]['handler']>[1],
  where: string,
  limit: number,
) {
  const { jira } = await deps.accounts.for(ctx);
  const page = await jira.call(ctx, 'read', (api) =>
    api.issueSearch.searchAndReconsileIssuesUsingJqlPost({
      jql: `${scopeClause(deps.scope.names)} AND ${where} ORDER BY updated DESC`,
      fields: VIEW_FIELDS,
      maxResults: limit,
    }),
  );
  return ((page.issues ?? []) as JiraIssue[])
    .filter((i) => deps.scope.allows(i.fields?.project?.key ?? ''))
    .map((i) => issueLine(issueView(deps.config.JIRA_URL, i)));
}
